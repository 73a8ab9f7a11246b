/* Shape function of the ai.parallax training-mode Dropout ops
 * (passes/grad_dropout.c):
 *   DropoutTrain(data) attrs ratio, seed_key -> (output like data[, mask]),
 *     mask bool from opset 10, data's type before (as ONNX Dropout's);
 *   DropoutGrad(dY) attrs ratio, seed_key -> dX like dY. */
#include "shape_util.h"

int px_shape_dropout_train(px_graph *g, px_node *n, px_diag *d) {
    px_value *x;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "data", d, &x)) return -1;
    if (px_su_want_float(n, d, x, "data")) return -1;
    double ratio = px_attr_float(n, "ratio", -1);
    if (!(ratio >= 0 && ratio < 1))
        return px_su_error(d, n, "needs the attribute ratio in [0, 1), got %g", ratio);
    if (!px_node_attr(n, "seed_key")) return px_su_error(d, n, "needs the attribute seed_key");
    int max_out = n->op == PX_OP_DropoutTrain ? 2 : 1;
    if (n->n_outputs > max_out)
        return px_su_error(d, n, "has at most %d outputs, got %d", max_out, n->n_outputs);
    px_dtype mask = px_su_opset(g) >= 10 ? PX_BOOL : x->dtype;
    return px_su_set(n, 0, x->dtype, &x->shape, d) || px_su_set(n, 1, mask, &x->shape, d);
}
