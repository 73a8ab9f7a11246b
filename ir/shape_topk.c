/* Shape functions of TopK and of its backward op:
 *   TopK(X, K) attrs axis, largest, sorted -> Values (X's dtype), Indices
 *   (int64), both X's shape with K along axis. K is a 1-element int64 input
 *   from opset 10 (attribute k before); it must fold to a constant for the
 *   output to have a static shape.
 *   GatherElementsGrad(dY, indices) attrs axis, shape -> dX of the given
 *   shape: the scatter-add that undoes GatherElements (passes/grad_select.c
 *   builds it for TopK and GatherElements). */
#include "shape_util.h"

/* K from the input (opset >= 10) or the attribute k: 1 read, 0 not yet
 * constant, -1 error. */
static int topk_k(const px_node *n, px_diag *d, int64_t *k) {
    px_value *kv = px_su_in(n, 1);
    if (!kv) {
        if (!px_node_attr(n, "k"))
            return px_su_error(d, n, "needs the input K (or the attribute k before opset 10)");
        *k = px_attr_int(n, "k", 0);
        return 1;
    }
    int count = 0;
    int got = px_su_const_ints(n, d, kv, "K", k, 1, &count);
    if (got == 1 && count != 1)
        return px_su_error(d, n, "K '%s' must hold one element, it holds %d", kv->name, count);
    return got;
}

int px_shape_topk(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 2, d) || px_su_need(n, 0, "X", d, &x)) return -1;
    if (px_su_want_numeric(n, d, x, "X")) return -1;
    if (n->n_outputs != 2) return px_su_error(d, n, "needs the outputs Values and Indices");
    int64_t k = 0;
    int known = topk_k(n, d, &k);
    if (known < 0) return -1;
    if (known && k < 0) return px_su_error(d, n, "K is negative (%lld)", (long long)k);
    int r = x->shape.rank, axis = 0;
    px_shape out = px_shape_unknown();
    if (r >= 0) {
        if (r == 0) return px_su_error(d, n, "X '%s' must have rank >= 1", x->name);
        if (px_su_norm_axis(n, d, px_attr_int(n, "axis", -1), r, 0, "axis", &axis)) return -1;
        out = x->shape;
        if (known) {
            if (x->shape.dims[axis] >= 0 && k > x->shape.dims[axis])
                return px_su_error(d, n, "K = %lld exceeds the %lld elements along axis %d",
                                   (long long)k, (long long)x->shape.dims[axis], axis);
            px_su_set_dim(&out, axis, k);
        } else {
            px_su_set_dim(&out, axis, -1);
        }
    }
    if (px_su_set(n, 0, x->dtype, &out, d)) return -1;
    return px_su_set(n, 1, PX_I64, &out, d);
}

int px_shape_gather_elements_grad(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *dy, *idx;
    const int64_t *dims;
    int rank;
    int64_t axis;
    if (px_su_scatter_grad_args(n, d, &dy, &idx, &dims, &rank, &axis)) return -1;
    if (dy->shape.rank >= 0 && dy->shape.rank != rank)
        return px_su_error(d, n, "dY has rank %d, expected %d", dy->shape.rank, rank);
    if (dy->shape.rank >= 0 && idx->shape.rank >= 0 && !px_shape_equal(&dy->shape, &idx->shape))
        return px_su_error(d, n, "dY and indices must have the same shape");
    px_shape s = px_shape_make(rank, dims);
    return px_su_set(n, 0, dy->dtype, &s, d);
}
