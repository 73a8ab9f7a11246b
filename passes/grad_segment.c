/* Gradient of ai.parallax::SegmentReduce (the reduce half of nn.EmbeddingBag,
 * ir/control_flow_embedding_bag.c): dData = SegmentReduceGrad(dY, data,
 * starts, ends) with the same mode, a dense [N, row] tensor over the N
 * gathered rows. The table itself stays sparse: the Gather feeding data
 * turns dData into a row set (autodiff.c), as for any embedding lookup.
 * starts and ends are integer bounds: no gradient. */
#include "grad_internal.h"

int px_grad_segment_reduce(px_ad *a, px_node *n, px_value *const *dy) {
    if (!dy[0] || !px_ad_wants(a, n, 0)) return 0;
    px_value *in[4] = {dy[0], n->inputs[0], n->inputs[1], n->inputs[2]};
    px_node *g = px_ad_op(a, "SegmentReduceGrad", PX_DOMAIN_PARALLAX, 4, in, 1);
    if (!g) return -1;
    px_node_set_attr_string(g, "mode", px_attr_string(n, "mode", ""));
    return px_ad_accum(a, n, 0, px_ad_done(a, g));
}
