/* Gradient rule of PPTransfer (ir/ops.def): the gradient goes back the
 * way the activation came, in the backward pass of the same micro-batch on
 * the receiving stage. PPBroadcast's is the identity (px_grad_identity):
 * every stage holds the same value, and the loss's seed is the same on all. */
#include "grad_internal.h"
#include "pipeline_parallel.h"

int px_grad_pp_transfer(px_ad *a, px_node *n, px_value *const *dy) {
    px_node *b = px_ad_op(a, "PPTransfer", PX_DOMAIN_PARALLAX, 1, dy, 1);
    if (!b) return -1;
    int64_t from = px_attr_int(n, "from", -1), to = px_attr_int(n, "to", -1);
    px_node_set_attr_int(b, "from", to);
    px_node_set_attr_int(b, "to", from);
    px_node_set_attr_int(b, "tag", px_attr_int(n, "tag", 0) + 1);
    /* scheduled with the receiving stage's backward of this micro-batch */
    px_node_set_attr_int(b, "pp_at", to);
    px_node_set_attr_int(b, "pp_mb", px_attr_int(n, "pp_mb", -1));
    px_node_set_attr_int(b, "pp_phase", PX_PP_BWD);
    px_value *dx = px_ad_done(a, b);
    return dx ? px_ad_accum(a, n, 0, dx) : -1;
}
