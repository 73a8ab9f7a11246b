/* Shape functions of reductions: Reduce* (axes as attribute, or as input
 * from opset 13 for ReduceSum and 18 for the others) and ArgMax/ArgMin. */
#include "shape_util.h"

/* Output of reducing `reduced` axes of in: dropped, or kept as 1. */
static px_shape reduced_shape(const px_shape *in, const int *reduced, int keepdims) {
    px_shape out = px_su_unknown_rank(0);
    for (int i = 0; i < in->rank; i++) {
        if (!reduced[i])
            px_su_copy_dim(&out, out.rank++, in, i);
        else if (keepdims)
            px_su_set_dim(&out, out.rank++, 1);
    }
    return out;
}

int px_shape_reduce(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 2, d) || px_su_need(n, 0, "data", d, &x)) return -1;
    if (px_su_want_numeric(n, d, x, "data")) return -1;
    int keepdims = px_attr_int(n, "keepdims", 1) != 0;
    int noop = px_attr_int(n, "noop_with_empty_axes", 0) != 0;
    int64_t axes[PX_MAX_RANK];
    int count, present, known;
    if (px_su_ints_attr_or_input(n, d, "axes", 1, "axes", axes, PX_MAX_RANK, &count, &present,
                                 &known))
        return -1;
    int r = x->shape.rank;
    px_shape out = px_shape_unknown();
    if (present && !known) {
        /* which axes is open: keepdims keeps the rank, else it drops count */
        if (r >= 0 && keepdims)
            out = px_su_unknown_rank(r);
        else if (r >= 0 && count >= 0 && count <= r)
            out = px_su_unknown_rank(r - count);
        return px_su_set(n, 0, x->dtype, &out, d);
    }
    if (!present) count = 0;
    if (count == 0 && noop) return px_su_set(n, 0, x->dtype, &x->shape, d);
    if (r < 0) return px_su_set(n, 0, x->dtype, &out, d);
    int reduced[PX_MAX_RANK] = {0};
    if (count == 0) {
        for (int i = 0; i < r; i++) reduced[i] = 1;
    } else {
        if (px_su_norm_axes(n, d, axes, count, r, "axes")) return -1;
        for (int i = 0; i < count; i++) reduced[axes[i]] = 1;
    }
    out = reduced_shape(&x->shape, reduced, keepdims);
    return px_su_set(n, 0, x->dtype, &out, d);
}

int px_shape_argreduce(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "data", d, &x)) return -1;
    if (px_su_want_numeric(n, d, x, "data")) return -1;
    int keepdims = px_attr_int(n, "keepdims", 1) != 0;
    int r = x->shape.rank, axis;
    px_shape out = px_shape_unknown();
    if (r >= 0) {
        if (px_su_norm_axis(n, d, px_attr_int(n, "axis", 0), r, 0, "axis", &axis)) return -1;
        int reduced[PX_MAX_RANK] = {0};
        reduced[axis] = 1;
        out = reduced_shape(&x->shape, reduced, keepdims);
    }
    return px_su_set(n, 0, PX_I64, &out, d);
}
