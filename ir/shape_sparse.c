/* Shape functions of the masked-weight ops (ai.parallax; passes/sparsify.c
 * makes them, docs/sparse_training.md). W is stored [out, in], or [in, out]
 * with w_in_major; its logical matrix is Wl[out, in]; mask is the masked
 * weight's number in the program, nnz its live entries.
 *
 * SparseMatMul(X[..., in], W) attr mask, w_in_major   -> Y[..., out] = X · Wl^T
 * SparseMatMulGradInput(dY[..., out], W) attr ...     -> dX[..., in] = dY · Wl
 * SparseMatMulGradWeight(X, dY) attr mask, nnz        -> G[nnz]: dY^T X at the live
 *                                                        entries (the compact gradient)
 * SparsePackGrad(Gd) attr mask, nnz                   -> G[nnz]: the live entries of a
 *                                                        dense gradient (W's shape)
 * SparseUpdate(W, G[nnz]) attr var, mask, optimizer.. -> ()  the optimizer's update of
 *                                                        the live entries */
#include "shape_util.h"

/* W's logical [out, in], from its shape and orientation. */
static int logical_shape(const px_node *n, const px_value *w, int64_t *out, int64_t *in,
                         px_diag *d) {
    if (w->shape.rank != 2) return px_su_error(d, n, "the weight '%s' must be a matrix", w->name);
    int major = (int)px_attr_int(n, "w_in_major", 0);
    *out = w->shape.dims[major ? 1 : 0];
    *in = w->shape.dims[major ? 0 : 1];
    return 0;
}

/* dense[..., from] -> out[..., to], float32 like dense. */
static int product_shape(px_node *n, int from_input, int64_t from, int64_t to, px_diag *d) {
    px_value *x;
    if (px_su_need(n, from_input, "operand", d, &x) || px_su_want_float(n, d, x, "operand"))
        return -1;
    if (x->shape.rank < 1) return px_su_error(d, n, "'%s' must have rank >= 1", x->name);
    int last = x->shape.rank - 1;
    if (x->shape.dims[last] >= 0 && from >= 0 && x->shape.dims[last] != from)
        return px_su_error(d, n, "'%s' has %lld columns, the weight %lld", x->name,
                           (long long)x->shape.dims[last], (long long)from);
    px_shape s = x->shape;
    px_su_set_dim(&s, last, to);
    return px_su_set(n, 0, x->dtype, &s, d);
}

/* X[..., in] -> Y[..., out] (the product), or dY[..., out] -> dX[..., in]. */
static int shape_product(px_node *n, int grad_input, px_diag *d) {
    px_value *w;
    int64_t out = -1, in = -1;
    if (px_su_arity(n, 2, 2, d) || px_su_need(n, 1, "weight", d, &w) ||
        logical_shape(n, w, &out, &in, d))
        return -1;
    return grad_input ? product_shape(n, 0, out, in, d) : product_shape(n, 0, in, out, d);
}

int px_shape_sparse_matmul(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    return shape_product(n, 0, d);
}

int px_shape_sparse_matmul_dx(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    return shape_product(n, 1, d);
}

/* SparseMatMulGradWeight and SparsePackGrad: float32 [nnz]. */
int px_shape_sparse_grad(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 2, d) || px_su_need(n, 0, "operand", d, &x)) return -1;
    int64_t nnz = px_attr_int(n, "nnz", -1);
    if (nnz < 0) return px_su_error(d, n, "needs the attribute 'nnz'");
    px_shape s = px_su_unknown_rank(1);
    px_su_set_dim(&s, 0, nnz);
    return px_su_set(n, 0, x->dtype, &s, d);
}
