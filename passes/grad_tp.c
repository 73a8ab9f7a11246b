/* Gradient rules of the tensor-parallel ops (ir/ops.def). TPAllReduce's is
 * the identity (px_grad_identity): every rank of the group holds the same
 * gradient of the sum, which is each partial sum's gradient. */
#include "grad_internal.h"

/* TPSlice -> TPSliceGrad: slab t of the weight's gradient, the rest zero. */
int px_grad_tp_slice(px_ad *a, px_node *n, px_value *const *dy) {
    px_node *b = px_ad_op(a, "TPSliceGrad", PX_DOMAIN_PARALLAX, 1, dy, 1);
    if (!b) return -1;
    px_node_set_attr_int(b, "axis", px_attr_int(n, "axis", -1));
    px_node_set_attr_int(b, "tp", px_attr_int(n, "tp", 0));
    if (px_attr_int(n, "sections", 1) > 1)
        px_node_set_attr_int(b, "sections", px_attr_int(n, "sections", 1));
    px_value *dx = px_ad_done(a, b);
    return dx ? px_ad_accum(a, n, 0, dx) : -1;
}

/* TPCopy -> TPAllReduce: each rank's input gradient is a partial sum. */
int px_grad_tp_copy(px_ad *a, px_node *n, px_value *const *dy) {
    px_node *b = px_ad_op(a, "TPAllReduce", PX_DOMAIN_PARALLAX, 1, dy, 1);
    if (!b) return -1;
    px_node_set_attr_int(b, "tp", px_attr_int(n, "tp", 0));
    px_value *dx = px_ad_done(a, b);
    return dx ? px_ad_accum(a, n, 0, dx) : -1;
}

/* TPSoftmaxCrossEntropy -> TPSoftmaxCrossEntropyGrad (dloss, scores, labels[,
 * denominator]). */
int px_grad_tp_sce(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *in[4] = {dy[0], n->inputs[0], n->inputs[1], n->n_inputs > 2 ? n->inputs[2] : NULL};
    px_node *b = px_ad_op(a, "TPSoftmaxCrossEntropyGrad", PX_DOMAIN_PARALLAX, in[3] ? 4 : 3, in, 1);
    if (!b) return -1;
    px_node_set_attr_int(b, "tp", px_attr_int(n, "tp", 0));
    px_node_set_attr_string(b, "reduction", px_attr_string(n, "reduction", "mean"));
    const px_attr *ig = px_node_attr(n, "ignore_index");
    if (ig) px_node_set_attr_int(b, "ignore_index", ig->i);
    px_value *dx = px_ad_done(a, b);
    return dx ? px_ad_accum(a, n, 0, dx) : -1;
}
