/* Shapes of the tensor-parallel ops (ir/ops.def, passes/tensor_parallel.c). */
#include "shape_util.h"

/* TPSlice: dim `axis` divided by tp (rank t's part of each of `sections`
 * equal sections); TPSliceGrad: multiplied by it. */
int px_shape_tp_slice(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "data", d, &x)) return -1;
    if (px_su_want_float(n, d, x, "data")) return -1;
    int64_t tp = px_attr_int(n, "tp", 0), axis = px_attr_int(n, "axis", -1);
    if (tp < 1) return px_su_error(d, n, "needs the attribute tp >= 1");
    if (axis < 0 || axis >= x->shape.rank)
        return px_su_error(d, n, "axis %lld is outside the rank-%d input", (long long)axis,
                           x->shape.rank);
    px_shape s = x->shape;
    int64_t sections = px_attr_int(n, "sections", 1);
    if (sections < 1) return px_su_error(d, n, "needs the attribute sections >= 1");
    if (n->op == PX_OP_TPSlice) {
        if (s.dims[axis] < 0 || s.dims[axis] % (tp * sections) != 0)
            return px_su_error(d, n, "dim %lld (%lld) is not a multiple of tp %lld x %lld sections",
                               (long long)axis, (long long)s.dims[axis], (long long)tp,
                               (long long)sections);
        s.dims[axis] /= tp;
    } else if (s.dims[axis] >= 0) {
        s.dims[axis] *= tp;
    }
    return px_su_set(n, 0, x->dtype, &s, d);
}

/* TPAllReduce, TPCopy: the output is like the input. */
int px_shape_tp_group(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "data", d, &x)) return -1;
    if (px_attr_int(n, "tp", 0) < 1) return px_su_error(d, n, "needs the attribute tp >= 1");
    return px_su_set(n, 0, x->dtype, &x->shape, d);
}

/* TPSoftmaxCrossEntropy (scores [N, C], labels [N][, denominator]) -> the
 * scalar loss; TPSoftmaxCrossEntropyGrad (dloss, scores, labels[,
 * denominator]) -> dscores [N, C]. */
int px_shape_tp_sce(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    int fwd = n->op == PX_OP_TPSoftmaxCrossEntropy;
    px_value *x, *labels;
    if (px_su_arity(n, fwd ? 2 : 3, fwd ? 3 : 4, d) ||
        px_su_need(n, fwd ? 0 : 1, "scores", d, &x) ||
        px_su_need(n, fwd ? 1 : 2, "labels", d, &labels) ||
        px_su_check_denominator(n, fwd ? 2 : 3, d))
        return -1;
    if (px_su_want_float(n, d, x, "scores") || px_su_want_int(n, d, labels, "labels")) return -1;
    if (px_attr_int(n, "tp", 0) < 1) return px_su_error(d, n, "needs the attribute tp >= 1");
    if (x->shape.rank != 2 || labels->shape.rank != 1 || x->shape.dims[0] != labels->shape.dims[0])
        return px_su_error(d, n, "needs scores [N, C] and labels [N]");
    if (!fwd) return px_su_set(n, 0, x->dtype, &x->shape, d);
    px_shape scalar = px_shape_scalar();
    return px_su_set(n, 0, x->dtype, &scalar, d);
}
