/* Lowerings of the pipeline-parallel ops (ir/ops.def) to the kernels of
 * runtime/comm/sched/kernels.c, which document buf and p. */
#include "lower.h"

static int need_f32(const px_node *n, px_diag *d) {
    const px_value *x = px_lower_in(n, 0), *y = px_lower_out(n, 0);
    if (!x || !y) return px_lower_error(d, n, "needs one input and one output");
    if (x->dtype != PX_F32 || y->dtype != PX_F32)
        return px_lower_error(d, n, "'%s' is %s: pipeline parallelism moves float32 only", x->name,
                              px_dtype_name(x->dtype));
    return 0;
}

/* PPTransfer {x, y} p {numel, from, to, tag}. */
int px_lower_pp_transfer(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (need_f32(n, d)) return -1;
    px_kc_set_kernel(k, "px_k_pp_transfer");
    px_kc_buf(k, px_lower_in(n, 0));
    px_kc_buf(k, px_lower_out(n, 0));
    px_kc_i64(k, px_shape_numel(&px_lower_in(n, 0)->shape));
    px_kc_i64(k, px_attr_int(n, "from", -1));
    px_kc_i64(k, px_attr_int(n, "to", -1));
    px_kc_i64(k, px_attr_int(n, "tag", 0));
    return 0;
}

/* PPGradOwner {g, y} p {numel, stage, scale (f64)}. */
int px_lower_pp_grad_owner(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (need_f32(n, d)) return -1;
    px_kc_set_kernel(k, "px_k_pp_grad_owner");
    px_kc_buf(k, px_lower_in(n, 0));
    px_kc_buf(k, px_lower_out(n, 0));
    px_kc_i64(k, px_shape_numel(&px_lower_in(n, 0)->shape));
    px_kc_i64(k, px_attr_int(n, "stage", -1));
    px_kc_f64(k, px_attr_float(n, "scale", 1.0f));
    return 0;
}

/* PPBroadcast {x, y} p {numel, from}. */
int px_lower_pp_broadcast(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (need_f32(n, d)) return -1;
    px_kc_set_kernel(k, "px_k_pp_broadcast");
    px_kc_buf(k, px_lower_in(n, 0));
    px_kc_buf(k, px_lower_out(n, 0));
    px_kc_i64(k, px_shape_numel(&px_lower_in(n, 0)->shape));
    px_kc_i64(k, px_attr_int(n, "from", -1));
    return 0;
}
