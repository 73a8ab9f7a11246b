/* Lowerings of the pipeline-parallel ops (ir/ops.def) to the kernels of
 * runtime/comm/sched/kernels.c, which document buf and p. */
#include "lower.h"

static const char why_f32[] = "pipeline parallelism moves float32 only";

/* PPTransfer {x, y} p {numel, from, to, tag}. */
int px_lower_pp_transfer(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (px_lower_f32_in_out(n, k, "px_k_pp_transfer", why_f32, d)) return -1;
    px_kc_i64(k, px_attr_int(n, "from", -1));
    px_kc_i64(k, px_attr_int(n, "to", -1));
    px_kc_i64(k, px_attr_int(n, "tag", 0));
    return 0;
}

/* PPBroadcast {x, y} p {numel, from}. */
int px_lower_pp_broadcast(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (px_lower_f32_in_out(n, k, "px_k_pp_broadcast", why_f32, d)) return -1;
    px_kc_i64(k, px_attr_int(n, "from", -1));
    return 0;
}
