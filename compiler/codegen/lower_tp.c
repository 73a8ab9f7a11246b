/* Lowerings of the tensor-parallel ops (ir/ops.def) to the kernels of
 * runtime/kernels/tp_slice.c and runtime/comm/sched/kernels.c, which
 * document buf and p. TPCopy lowers as Identity (px_lower_copy). */
#include "lower.h"
#include "px_enums.h"

static const char why_f32[] = "tensor parallelism supports float32";

static int need_tp(const px_node *n, px_diag *d) {
    if (px_attr_int(n, "tp", 0) < 1) return px_lower_error(d, n, "needs the attribute tp >= 1");
    return 0;
}

/* TPSlice / TPSliceGrad {x, y} p {outer, slab, inner, tp}: the full tensor
 * seen as [outer, tp * slab, inner], the slice as [outer, slab, inner]
 * (with the attribute sections: rank t's slab of each section). */
int px_lower_tp_slice(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (px_lower_need_f32(n, why_f32, d) || need_tp(n, d)) return -1;
    int fwd = n->op == PX_OP_TPSlice;
    const px_value *full = fwd ? px_lower_in(n, 0) : px_lower_out(n, 0);
    const px_value *part = fwd ? px_lower_out(n, 0) : px_lower_in(n, 0);
    int64_t axis = px_attr_int(n, "axis", -1), tp = px_attr_int(n, "tp", 0);
    if (axis < 0 || axis >= full->shape.rank || !px_shape_is_static(&full->shape))
        return px_lower_error(d, n, "needs a static input and an axis inside its rank");
    /* `sections` equal sections along axis, each sliced: [outer * sections,
     * tp * slab, inner] */
    int64_t sections = px_attr_int(n, "sections", 1), outer = sections, inner = 1;
    for (int64_t i = 0; i < axis; i++) outer *= full->shape.dims[i];
    for (int64_t i = axis + 1; i < full->shape.rank; i++) inner *= full->shape.dims[i];
    if (sections < 1 || part->shape.dims[axis] * tp != full->shape.dims[axis] ||
        part->shape.dims[axis] % sections)
        return px_lower_error(d, n, "the slice is not 1/%lld of each of %lld sections",
                              (long long)tp, (long long)sections);
    px_kc_set_kernel(k, fwd ? "px_k_tp_slice" : "px_k_tp_slice_grad");
    px_kc_buf(k, px_lower_in(n, 0));
    px_kc_buf(k, px_lower_out(n, 0));
    px_kc_i64(k, outer);
    px_kc_i64(k, part->shape.dims[axis] / sections);
    px_kc_i64(k, inner);
    px_kc_i64(k, tp);
    return 0;
}

/* TPAllReduce {x, y} p {numel, tp}. */
int px_lower_tp_allreduce(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (px_lower_f32_in_out(n, k, "px_k_tp_allreduce", why_f32, d) || need_tp(n, d)) return -1;
    px_kc_i64(k, px_attr_int(n, "tp", 0));
    return 0;
}

/* TPSoftmaxCrossEntropy {scores, labels, loss, denominator|NULL} /
 * TPSoftmaxCrossEntropyGrad {dloss, scores, labels, dscores,
 * denominator|NULL}, p {rows, classes, tp, reduction, has_ignore_index,
 * ignore_index}: float32 scores, int64 labels. */
int px_lower_tp_sce(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    int fwd = n->op == PX_OP_TPSoftmaxCrossEntropy;
    const px_value *x = px_lower_in(n, fwd ? 0 : 1), *labels = px_lower_in(n, fwd ? 1 : 2);
    if (!x || !labels || x->dtype != PX_F32 || labels->dtype != PX_I64 || x->shape.rank != 2)
        return px_lower_error(d, n, "needs float32 scores [N, C] and int64 labels");
    int64_t tp = px_attr_int(n, "tp", 0);
    int reduction = px_reduction_from_name(px_attr_string(n, "reduction", "mean"));
    if (tp < 1 || (reduction != PX_REDUCTION_MEAN && reduction != PX_REDUCTION_SUM))
        return px_lower_error(d, n, "needs tp >= 1 and the reduction mean or sum");
    px_kc_set_kernel(k, fwd ? "px_k_tp_sce_loss" : "px_k_tp_sce_loss_grad");
    int den = fwd ? 2 : 3; /* the LossDenominator's output, last */
    for (int i = 0; i < den; i++) px_kc_buf(k, px_lower_in(n, i));
    px_kc_buf(k, px_lower_out(n, 0));
    px_kc_buf(k, px_lower_in(n, den));
    px_kc_i64(k, x->shape.dims[0]);
    px_kc_i64(k, x->shape.dims[1]);
    px_kc_i64(k, tp);
    px_kc_i64(k, reduction);
    const px_attr *ii = px_node_attr(n, "ignore_index");
    px_kc_i64(k, ii != NULL);
    px_kc_i64(k, ii ? ii->i : 0);
    return 0;
}
