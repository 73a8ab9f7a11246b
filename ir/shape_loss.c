/* Shape functions of the losses NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss: scores [N, C, d1..dk], targets [N, d1..dk][,
 * weights [C][, denominator]], and of the LossDenominator that may feed
 * their last input (passes/loss_denominator.c). */
#include "shape_util.h"

#include <string.h>

int px_su_check_denominator(const px_node *n, int i, px_diag *d) {
    const px_value *v = px_su_in(n, i);
    if (i < n->n_inputs && !v) return px_su_error(d, n, "input %d (the denominator) is empty", i);
    if (v && !(v->producer && v->producer->op == PX_OP_LossDenominator && v->dtype == PX_F64))
        return px_su_error(d, n,
                           "input %d '%s' is no denominator (a LossDenominator's output): the "
                           "loss takes at most %d inputs",
                           i, v->name, i);
    if (v && strcmp(px_attr_string(n, "reduction", "mean"), "mean"))
        return px_su_error(d, n, "has a denominator but reduction '%s', not mean",
                           px_attr_string(n, "reduction", "mean"));
    return 0;
}

int px_shape_loss_denominator(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *t, *w = px_su_in(n, 1);
    if (px_su_arity(n, 1, 2, d) || px_su_need(n, 0, "labels", d, &t) ||
        px_su_want_int(n, d, t, "labels"))
        return -1;
    if (w && px_su_want_float(n, d, w, "weights")) return -1;
    if (w && w->shape.rank >= 0 && w->shape.rank != 1)
        return px_su_error(d, n, "weights '%s' must be 1-D", w->name);
    if (n->n_outputs != 1) return px_su_error(d, n, "has %d outputs, expected 1", n->n_outputs);
    px_shape scalar = px_shape_scalar();
    return px_su_set(n, 0, PX_F64, &scalar, d);
}

/* Validates scores/target/weight and sets output 0 (the loss) and, when
 * present, output 1 (log_prob, shaped like the scores). */
static int loss(px_node *n, px_diag *d, const char *scores_name, const char *target_name) {
    px_value *x, *t, *w = px_su_in(n, 2);
    if (px_su_arity(n, 2, 4, d) || px_su_need(n, 0, scores_name, d, &x) ||
        px_su_need(n, 1, target_name, d, &t) || px_su_check_denominator(n, 3, d))
        return -1;
    if (px_su_want_float(n, d, x, scores_name)) return -1;
    if (t->dtype != PX_I32 && t->dtype != PX_I64)
        return px_su_error(d, n, "%s '%s' must be int32 or int64, got %s", target_name, t->name,
                           px_dtype_name(t->dtype));
    if (w && px_su_same_dtype(n, d, x, w)) return -1;
    const char *red = px_attr_string(n, "reduction", "mean");
    if (strcmp(red, "none") && strcmp(red, "sum") && strcmp(red, "mean"))
        return px_su_error(d, n, "unknown reduction '%s'", red);
    const px_shape *xs = &x->shape, *ts = &t->shape;
    if (xs->rank >= 0 && xs->rank < 2)
        return px_su_error(d, n, "%s must have rank >= 2 (N, C, ...), has %d", scores_name,
                           xs->rank);
    px_shape per = *ts; /* the loss per target element */
    if (xs->rank >= 0 && ts->rank >= 0) {
        if (ts->rank != xs->rank - 1)
            return px_su_error(d, n, "%s has rank %d, expected %d (%s rank - 1)", target_name,
                               ts->rank, xs->rank - 1, scores_name);
        for (int i = 0; i < ts->rank; i++) {
            int xi = i == 0 ? 0 : i + 1;
            if (xs->dims[xi] >= 0 && ts->dims[i] >= 0 && xs->dims[xi] != ts->dims[i]) {
                char a[256], b[256];
                return px_su_error(d, n, "%s %s does not match %s %s", target_name,
                                   px_shape_str(ts, a, sizeof a), scores_name,
                                   px_shape_str(xs, b, sizeof b));
            }
            if (ts->dims[i] < 0) px_su_copy_dim(&per, i, xs, xi);
        }
    } else if (xs->rank >= 0) {
        per = px_su_unknown_rank(xs->rank - 1);
        for (int i = 0; i < per.rank; i++) px_su_copy_dim(&per, i, xs, i == 0 ? 0 : i + 1);
    }
    if (w && w->shape.rank >= 0) {
        int64_t c = xs->rank >= 0 ? xs->dims[1] : -1;
        if (w->shape.rank != 1 || (c >= 0 && w->shape.dims[0] >= 0 && w->shape.dims[0] != c))
            return px_su_error(d, n, "weight '%s' must be 1-D of size C = %lld", w->name,
                               (long long)c);
    }
    px_shape scalar = px_shape_scalar();
    if (px_su_set(n, 0, x->dtype, strcmp(red, "none") ? &scalar : &per, d)) return -1;
    return px_su_set(n, 1, x->dtype, xs, d);
}

int px_shape_nll_loss(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    if (n->n_outputs > 1) return px_su_error(d, n, "has %d outputs, expected 1", n->n_outputs);
    return loss(n, d, "input", "target");
}

int px_shape_softmax_ce_loss(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    if (n->n_outputs > 2) return px_su_error(d, n, "has %d outputs, expected 1 or 2", n->n_outputs);
    return loss(n, d, "scores", "labels");
}
