/* Gradient rule of SparseMatMul (a masked weight's product; passes/sparsify.c):
 * dX = SparseMatMulGradInput(dY, W), dW = SparseMatMulGradWeight(X, dY), the
 * gradient at the live entries only, packed [nnz] (the compact gradient the
 * optimizer pass updates with and the comm pass reduces). */
#include "grad_internal.h"

static px_value *sparse_op(px_ad *a, const px_node *fwd, const char *op, px_value *x, px_value *y) {
    px_value *in[2] = {x, y};
    px_node *n = px_ad_op(a, op, PX_DOMAIN_PARALLAX, 2, in, 1);
    px_node_set_attr_int(n, "mask", px_attr_int(fwd, "mask", -1));
    px_node_set_attr_int(n, "w_in_major", px_attr_int(fwd, "w_in_major", 0));
    px_node_set_attr_int(n, "nnz", px_attr_int(fwd, "nnz", -1));
    return px_ad_done(a, n);
}

int px_grad_sparse_matmul(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = n->inputs[0], *w = n->inputs[1];
    if (px_ad_wants(a, n, 0) &&
        px_ad_accum(a, n, 0, sparse_op(a, n, "SparseMatMulGradInput", dy[0], w)))
        return -1;
    if (px_ad_wants(a, n, 1) &&
        px_ad_accum_as_is(a, n, 1, sparse_op(a, n, "SparseMatMulGradWeight", x, dy[0])))
        return -1;
    return 0;
}
