/* The gradients of Dropout. Training-mode Dropout has become
 * ai.parallax::DropoutTrain before autodiff (dropout_rewrite.c); its gradient
 * DropoutGrad(dY) = dY * mask / (1 - ratio) regenerates the forward's mask
 * from the same counter-based hash instead of keeping it in memory. Every
 * other Dropout (inference, or ratio 0) is the identity, and so is its
 * gradient. */
#include "dropout_rewrite.h"
#include "grad_internal.h"

/* Dropout left in the graph is the identity (px_pass_dropout_rewrite took
 * the others); the mask output has no gradient. */
int px_grad_dropout(px_ad *a, px_node *n, px_value *const *dy) {
    double ratio = 0;
    int draws = px_dropout_draws(a->g, n, &ratio, a->d);
    if (draws < 0) return -1;
    if (draws)
        return px_ad_error(a, n,
                           "training-mode Dropout was not rewritten (px_pass_dropout_rewrite)");
    return dy[0] ? px_ad_accum(a, n, 0, dy[0]) : 0;
}

/* dX = DropoutGrad(dY): the forward's mask, regenerated, times 1/(1-ratio) */
int px_grad_dropout_train(px_ad *a, px_node *n, px_value *const *dy) {
    if (!dy[0]) return 0;
    px_node *g = px_ad_op(a, "DropoutGrad", PX_DOMAIN_PARALLAX, 1, dy, 1);
    if (!g) return -1;
    px_node_set_attr_float(g, "ratio", px_attr_float(n, "ratio", 0.5f));
    px_node_set_attr_int(g, "seed_key", px_attr_int(n, "seed_key", 0));
    return px_ad_accum(a, n, 0, px_ad_done(a, g));
}
