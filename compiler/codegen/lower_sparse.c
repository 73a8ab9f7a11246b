/* Lowerings of the masked-weight ops (ir/shape_sparse.c) to the kernels of
 * runtime/sparse/kernels.c, whose comment documents buf and p: every call
 * names the masked weight (attribute mask) and the rows m of its dense
 * operands, the batch dims folded. */
#include "lower.h"

/* The masked weight's number. */
static int64_t mask_attr(const px_node *n, px_diag *d) {
    int64_t id = px_attr_int(n, "mask", -1);
    if (id < 0) px_lower_error(d, n, "needs the attribute 'mask'");
    return id;
}

/* Rows of a dense operand whose last dim is the product's width. */
static int64_t rows_of(const px_value *v) {
    int64_t cols = v->shape.rank ? v->shape.dims[v->shape.rank - 1] : 1;
    return cols > 0 ? px_shape_numel(&v->shape) / cols : 0;
}

/* {in0, in1, out0} p {mask, m}: m from input `rows_from`. */
static int lower_product(const px_node *n, px_kcall *k, const char *kernel, int rows_from,
                         px_diag *d) {
    int64_t id = mask_attr(n, d);
    if (id < 0) return -1;
    const px_value *a = px_lower_in(n, 0), *b = px_lower_in(n, 1), *y = px_lower_out(n, 0);
    if (!a || !b || !y || a->dtype != PX_F32 || b->dtype != PX_F32)
        return px_lower_error(d, n, "expects two float32 inputs and an output");
    px_kc_set_kernel(k, kernel);
    px_kc_buf(k, a);
    px_kc_buf(k, b);
    px_kc_buf(k, y);
    px_kc_i64(k, id);
    px_kc_i64(k, rows_of(rows_from ? b : a));
    return 0;
}

int px_lower_sparse_matmul(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    return lower_product(n, k, "px_k_sparse_matmul", 0, d);
}

int px_lower_sparse_matmul_dx(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    return lower_product(n, k, "px_k_sparse_matmul_dx", 0, d);
}

int px_lower_sparse_matmul_dw(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    return lower_product(n, k, "px_k_sparse_matmul_dw", 0, d);
}

/* SparsePackGrad(Gd) -> G: {Gd, G} p {mask, rows of the products (FLOP count)}. */
int px_lower_sparse_pack_grad(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    int64_t id = mask_attr(n, d);
    if (id < 0) return -1;
    px_kc_set_kernel(k, "px_k_sparse_pack_grad");
    px_kc_buf(k, px_lower_in(n, 0));
    px_kc_buf(k, px_lower_out(n, 0));
    px_kc_i64(k, id);
    px_kc_i64(k, px_attr_int(n, "rows", 0));
    return 0;
}

/* SparseUpdate(W, G): {W, G} p {var, mask}. */
int px_lower_sparse_update(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    int64_t id = mask_attr(n, d), var = px_attr_int(n, "var", -1);
    if (id < 0) return -1;
    if (var < 0) return px_lower_error(d, n, "needs the attribute 'var'");
    px_kc_set_kernel(k, "px_k_sparse_update");
    px_kc_buf(k, px_lower_in(n, 0));
    px_kc_buf(k, px_lower_in(n, 1));
    px_kc_i64(k, var);
    px_kc_i64(k, id);
    return 0;
}
