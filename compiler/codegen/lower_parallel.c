/* Lowerings of the ai.parallax training-step and communication ops to the
 * kernels listed in runtime/px_train.h (whose comment documents buf and p). */
#include "lower.h"

static int64_t var_attr(const px_node *n) {
    return px_attr_int(n, "var", -1);
}

static int need_var(const px_node *n, px_diag *d) {
    if (var_attr(n) < 0) return px_lower_error(d, n, "needs the attribute 'var'");
    if (!n->inputs[0] || n->inputs[0]->dtype != PX_F32)
        return px_lower_error(d, n, "the variable must be float32");
    return 0;
}

static int64_t row_dim(const px_value *w) {
    int64_t rows = w->shape.rank >= 1 ? w->shape.dims[0] : 1;
    return rows > 0 ? px_shape_numel(&w->shape) / rows : 0;
}

int px_lower_update(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (need_var(n, d)) return -1;
    px_kc_set_kernel(k, "px_k_update");
    px_kc_buf(k, n->inputs[0]);
    px_kc_buf(k, n->inputs[1]);
    px_kc_i64(k, var_attr(n));
    px_kc_i64(k, px_shape_numel(&n->inputs[0]->shape));
    return 0;
}

/* RowUpdate and PSPush: {W, idx, rows, count} p {var, capacity, dim}. The
 * push hands the row set to the shards and never reads W: it gets NULL, so
 * a worker needs no storage for W (row_cache_only). */
static int lower_rows(const px_node *n, px_kcall *k, const char *kernel, int reads_w, px_diag *d) {
    if (need_var(n, d)) return -1;
    if (n->n_inputs != 4) return px_lower_error(d, n, "expects W, indices, rows, count");
    px_kc_set_kernel(k, kernel);
    px_kc_buf(k, reads_w ? n->inputs[0] : NULL);
    for (int i = 1; i < 4; i++) px_kc_buf(k, n->inputs[i]);
    px_kc_i64(k, var_attr(n));
    px_kc_i64(k, px_shape_numel(&n->inputs[1]->shape));
    px_kc_i64(k, row_dim(n->inputs[0]));
    return 0;
}

int px_lower_row_update(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    return lower_rows(n, k, "px_k_row_update", 1, d);
}

int px_lower_ps_push(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    return lower_rows(n, k, "px_k_ps_push", 0, d);
}

int px_lower_ps_push_dense(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (need_var(n, d)) return -1;
    px_kc_set_kernel(k, "px_k_ps_push_dense");
    px_kc_buf(k, n->inputs[0]);
    px_kc_buf(k, n->inputs[1]);
    px_kc_i64(k, var_attr(n));
    px_kc_i64(k, px_shape_numel(&n->inputs[0]->shape));
    return 0;
}

int px_lower_rows_to_dense(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    (void)d;
    px_kc_set_kernel(k, "px_k_rows_to_dense");
    for (int i = 0; i < 3; i++) px_kc_buf(k, n->inputs[i]);
    px_kc_buf(k, n->outputs[0]);
    px_kc_buf(k, n->outputs[1]);
    px_kc_i64(k, px_shape_numel(&n->inputs[0]->shape));
    px_kc_i64(k, row_dim(n->outputs[0]));
    px_kc_i64(k, n->outputs[0]->shape.dims[0]);
    return 0;
}

int px_lower_masked_update(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (need_var(n, d)) return -1;
    px_kc_set_kernel(k, "px_k_masked_update");
    for (int i = 0; i < 3; i++) px_kc_buf(k, n->inputs[i]);
    px_kc_i64(k, var_attr(n));
    px_kc_i64(k, n->inputs[0]->shape.dims[0]);
    px_kc_i64(k, row_dim(n->inputs[0]));
    return 0;
}

/* AllReduceStart {g_1..g_k} / AllReduceWait {g_1..g_k, out_1..out_k}:
 * p {bucket, k, nbytes_1..nbytes_k}. */
static int lower_allreduce(const px_node *n, px_kcall *k, int wait, px_diag *d) {
    int64_t bucket = px_attr_int(n, "bucket", -1);
    if (bucket < 0) return px_lower_error(d, n, "needs the attribute 'bucket'");
    if (n->n_inputs * (wait ? 2 : 1) > PX_KCALL_MAX_BUFS)
        return px_lower_error(d, n, "has %d gradients: more than a kernel call can take",
                              n->n_inputs);
    px_kc_set_kernel(k, wait ? "px_k_allreduce_wait" : "px_k_allreduce_start");
    for (int i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i]->dtype != PX_F32)
            return px_lower_error(d, n, "gradient '%s' is not float32", n->inputs[i]->name);
        px_kc_buf(k, n->inputs[i]);
    }
    for (int i = 0; wait && i < n->n_outputs; i++) px_kc_buf(k, n->outputs[i]);
    px_kc_i64(k, bucket);
    px_kc_i64(k, n->n_inputs);
    for (int i = 0; i < n->n_inputs; i++) px_kc_i64(k, px_shape_numel(&n->inputs[i]->shape) * 4);
    return 0;
}

int px_lower_allreduce_start(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    return lower_allreduce(n, k, 0, d);
}

int px_lower_allreduce_wait(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    return lower_allreduce(n, k, 1, d);
}

/* PSPull(W, idx) -> (cache, remap): px_k_ps_pull_rows {idx, cache, remap}
 * p {var, idx_dtype, n_idx, dim}. PSPull(W) (dense PS variable, every row
 * into W): px_k_ps_pull {W, NULL} p {var, 0, 0}. */
int px_lower_ps_pull(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (need_var(n, d)) return -1;
    if (n->n_outputs == 0) {
        px_kc_set_kernel(k, "px_k_ps_pull");
        px_kc_buf(k, n->inputs[0]);
        px_kc_buf(k, NULL);
        px_kc_i64(k, var_attr(n));
        px_kc_i64(k, 0);
        px_kc_i64(k, 0);
        return 0;
    }
    const px_value *idx = px_lower_in(n, 1);
    if (!idx || (idx->dtype != PX_I64 && idx->dtype != PX_I32))
        return px_lower_error(d, n, "needs int32 or int64 indices");
    if (n->n_outputs != 2 || !n->outputs[0] || !n->outputs[1])
        return px_lower_error(d, n, "has 2 outputs (cache, remap)");
    px_kc_set_kernel(k, "px_k_ps_pull_rows");
    px_kc_buf(k, idx);
    px_kc_buf(k, n->outputs[0]);
    px_kc_buf(k, n->outputs[1]);
    px_kc_i64(k, var_attr(n));
    px_kc_i64(k, idx->dtype);
    px_kc_i64(k, px_shape_numel(&idx->shape));
    px_kc_i64(k, row_dim(n->inputs[0]));
    return 0;
}

/* Assign(state, value): px_k_assign {value, state}. */
int px_lower_assign(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *dst = n->inputs[0], *src = px_lower_in(n, 1);
    if (!src || src->dtype != dst->dtype ||
        px_shape_numel(&src->shape) != px_shape_numel(&dst->shape))
        return px_lower_error(d, n, "value and state differ in dtype or size");
    px_kc_set_kernel(k, "px_k_assign");
    px_kc_buf(k, src);
    px_kc_buf(k, dst);
    px_kc_tensor(k, src);
    px_kc_tensor(k, dst);
    return 0;
}
