/* Shape functions of the ai.onnx.preview.training optimizers. Inputs are
 * R (learning rate), T (step count), then k groups of n tensors: X (the
 * weights), G (gradients) and the optimizer state (Adagrad: H; Momentum: V;
 * Adam: V, H). Outputs are the new X and the new state, group by group. */
#include "shape_util.h"

static int same_shape_known(const px_shape *a, const px_shape *b) {
    if (a->rank < 0 || b->rank < 0) return 1;
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] >= 0 && b->dims[i] >= 0 && a->dims[i] != b->dims[i]) return 0;
    return 1;
}

int px_shape_optimizer(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    int groups = n->op == PX_OP_Adam ? 4 : 3; /* X, G and the state tensors */
    if (px_su_arity(n, 2 + groups, -1, d)) return -1;
    if ((n->n_inputs - 2) % groups != 0)
        return px_su_error(d, n, "expects R, T and %d groups of equal size, got %d inputs", groups,
                           n->n_inputs);
    int count = (n->n_inputs - 2) / groups;
    if (n->n_outputs != (groups - 1) * count)
        return px_su_error(d, n, "optimizes %d tensors, so it needs %d outputs, has %d", count,
                           (groups - 1) * count, n->n_outputs);
    px_value *rate, *step;
    if (px_su_need(n, 0, "R", d, &rate) || px_su_need(n, 1, "T", d, &step)) return -1;
    if (px_su_want_float(n, d, rate, "R")) return -1;
    if (step->dtype != PX_I64)
        return px_su_error(d, n, "T '%s' must be int64, got %s", step->name,
                           px_dtype_name(step->dtype));
    const px_value *scalars[2] = {rate, step};
    for (int i = 0; i < 2; i++) {
        const px_shape *s = &scalars[i]->shape;
        if (px_shape_is_static(s) && px_shape_numel(s) != 1)
            return px_su_error(d, n, "%s '%s' must be a scalar", i ? "T" : "R", scalars[i]->name);
    }
    for (int j = 0; j < count; j++) {
        px_value *x;
        if (px_su_need(n, 2 + j, "X", d, &x) || px_su_want_float(n, d, x, "X")) return -1;
        for (int k = 1; k < groups; k++) {
            px_value *v;
            if (px_su_need(n, 2 + k * count + j, k == 1 ? "G" : "state", d, &v) ||
                px_su_same_dtype(n, d, x, v))
                return -1;
            if (!same_shape_known(&x->shape, &v->shape)) {
                char a[256], b[256];
                return px_su_error(d, n, "'%s' has shape %s but '%s' has %s", v->name,
                                   px_shape_str(&v->shape, a, sizeof a), x->name,
                                   px_shape_str(&x->shape, b, sizeof b));
            }
            /* outputs: X_new group first, then each state group */
            if (k >= 2 && px_su_set(n, (k - 1) * count + j, v->dtype, &x->shape, d)) return -1;
        }
        if (px_su_set(n, j, x->dtype, &x->shape, d)) return -1;
    }
    return 0;
}
