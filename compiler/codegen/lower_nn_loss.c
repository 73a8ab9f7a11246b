/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss -> px_k_nll_loss,
 * px_k_sce_loss (runtime/kernels/nn_loss.c); LossDenominator ->
 * px_k_loss_denominator (runtime/kernels/loss_denominator.c). */
#include "lower_nn_internal.h"
#include "px_enums.h"

#include <string.h>

/* Checks input (N, C, d1..dk), target (N, d1..dk), weight [C], the loss
 * output's shape for the reduction, and writes the shared descriptors. */
static int check_loss(const px_node *n, const px_value *in, const px_value *target,
                      const px_value *weight, const px_value *loss, int *reduction, px_diag *d) {
    if (px_lnn_check(n, in, "input scores", px_lnn_float_types, d) ||
        px_lnn_check(n, target, "input target", px_lnn_index_types, d) ||
        (weight && px_lnn_check(n, weight, "input weight", px_lnn_float_types, d)) ||
        px_lnn_check(n, loss, "output loss", px_lnn_float_types, d))
        return -1;
    int r = in->shape.rank;
    if (r < 2) return px_lower_error(d, n, "input '%s' must have rank >= 2 (N, C, ...)", in->name);
    int ok = target->shape.rank == r - 1 && target->shape.dims[0] == in->shape.dims[0];
    for (int i = 1; ok && i < r - 1; i++) ok = target->shape.dims[i] == in->shape.dims[i + 1];
    if (!ok) {
        char a[256], b[256];
        return px_lower_error(d, n, "target '%s' %s must have the shape of input %s without dim 1",
                              target->name, px_shape_str(&target->shape, a, sizeof a),
                              px_shape_str(&in->shape, b, sizeof b));
    }
    if (weight && (weight->shape.rank != 1 || weight->shape.dims[0] != in->shape.dims[1]))
        return px_lower_error(d, n, "weight '%s' must have shape [%lld]", weight->name,
                              (long long)in->shape.dims[1]);
    const char *red = px_attr_string(n, "reduction", "mean");
    *reduction = px_reduction_from_name(red);
    if (*reduction < 0)
        return px_lower_error(d, n, "attribute reduction has unknown value '%s'", red);
    if (*reduction == PX_REDUCTION_NONE ? !px_lnn_same_dims(&loss->shape, &target->shape)
                                        : px_shape_numel(&loss->shape) != 1)
        return px_lower_error(d, n, "output '%s' has the wrong shape for reduction '%s'",
                              loss->name, red);
    return 0;
}

/* has_denominator: 1 when the node reads a LossDenominator (its input 3),
 * whose buffer is the kernel's last. */
static void emit_tail(px_kcall *k, const px_node *n, int reduction) {
    const px_attr *ii = px_node_attr(n, "ignore_index");
    px_kc_i64(k, reduction);
    px_kc_i64(k, ii != NULL);
    px_kc_i64(k, ii ? px_attr_int(n, "ignore_index", 0) : 0);
    px_kc_i64(k, px_lower_in(n, 3) != NULL);
}

/* buf: input, target, weight|NULL, loss, denominator|NULL.
 * p: tensor input, tensor target, tensor weight|absent, tensor loss, reduction,
 *    has_ignore_index, ignore_index, has_denominator (see px_k_nll_loss). */
int px_lower_nll_loss(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *in = px_lower_in(n, 0), *target = px_lower_in(n, 1),
                   *weight = px_lower_in(n, 2), *loss = px_lower_out(n, 0);
    int reduction;
    if (check_loss(n, in, target, weight, loss, &reduction, d)) return -1;
    px_kc_set_kernel(k, "px_k_nll_loss");
    px_kc_buf(k, in);
    px_kc_buf(k, target);
    px_kc_buf(k, weight);
    px_kc_buf(k, loss);
    px_kc_buf(k, px_lower_in(n, 3));
    px_kc_tensor(k, in);
    px_kc_tensor(k, target);
    px_lnn_tensor_opt(k, weight);
    px_kc_tensor(k, loss);
    emit_tail(k, n, reduction);
    return 0;
}

static int same_loss_attrs(const px_node *a, const px_node *b) {
    const px_attr *ia = px_node_attr(a, "ignore_index"), *ib = px_node_attr(b, "ignore_index");
    return !strcmp(px_attr_string(a, "reduction", "mean"),
                   px_attr_string(b, "reduction", "mean")) &&
           (ia != NULL) == (ib != NULL) && (!ia || ia->i == ib->i);
}

/* Whether SoftmaxCrossEntropyLossGrad node grad differentiates the loss node
 * fwd: same scores, labels, weights and attributes, float scores and dX of
 * the scores' dtype. */
static int sce_matches(const px_node *fwd, const px_node *grad) {
    if (fwd->dead || grad->dead || fwd->op != PX_OP_SoftmaxCrossEntropyLoss ||
        grad->op != PX_OP_SoftmaxCrossEntropyLossGrad)
        return 0;
    const px_value *x = px_lower_in(fwd, 0), *dx = px_lower_out(grad, 0);
    return x && dx && px_lower_in(grad, 1) == x && px_lower_in(grad, 2) == px_lower_in(fwd, 1) &&
           px_lower_in(grad, 3) == px_lower_in(fwd, 2) &&
           px_lower_in(grad, 4) == px_lower_in(fwd, 3) &&
           (x->dtype == PX_F32 || x->dtype == PX_F64) && dx->dtype == x->dtype &&
           px_lnn_same_dims(&dx->shape, &x->shape) && same_loss_attrs(fwd, grad);
}

const px_node *px_lnn_sce_grad_partner(const px_graph *g, const px_node *fwd) {
    int seen = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i] == fwd)
            seen = 1;
        else if (seen && sce_matches(fwd, g->nodes[i]))
            return g->nodes[i];
    }
    return NULL;
}

const px_node *px_lnn_sce_forward_partner(const px_graph *g, const px_node *grad) {
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i] == grad) return NULL;
        if (sce_matches(g->nodes[i], grad))
            return px_lnn_sce_grad_partner(g, g->nodes[i]) == grad ? g->nodes[i] : NULL;
    }
    return NULL;
}

/* buf: scores, labels, weights|NULL, loss, log_prob|NULL, probs|NULL,
 * denominator|NULL. With a gradient partner (px_lnn_sce_grad_partner),
 * px_k_sce_loss_probs leaves softmax(scores) in the partner's dX buffer
 * (probs), which the backward kernel then turns into dX in place.
 * p: tensor scores, tensor labels, tensor weights|absent, tensor loss,
 *    tensor log_prob|absent, reduction, has_ignore_index, ignore_index,
 *    has_denominator (see px_k_sce_loss). */
int px_lower_sce_loss(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    const px_value *in = px_lower_in(n, 0), *target = px_lower_in(n, 1),
                   *weight = px_lower_in(n, 2), *loss = px_lower_out(n, 0),
                   *log_prob = px_lower_out(n, 1);
    int reduction;
    if (check_loss(n, in, target, weight, loss, &reduction, d)) return -1;
    if (log_prob && (px_lnn_check(n, log_prob, "output log_prob", px_lnn_float_types, d) ||
                     !px_lnn_same_dims(&log_prob->shape, &in->shape)))
        return px_lower_error(d, n, "output log_prob must have the shape of the scores");
    const px_node *partner = px_lnn_sce_grad_partner(g, n);
    px_kc_set_kernel(k, partner ? "px_k_sce_loss_probs" : "px_k_sce_loss");
    px_kc_buf(k, in);
    px_kc_buf(k, target);
    px_kc_buf(k, weight);
    px_kc_buf(k, loss);
    px_kc_buf(k, log_prob);
    px_kc_buf(k, partner ? px_lower_out(partner, 0) : NULL);
    px_kc_buf(k, px_lower_in(n, 3));
    px_kc_tensor(k, in);
    px_kc_tensor(k, target);
    px_lnn_tensor_opt(k, weight);
    px_kc_tensor(k, loss);
    px_lnn_tensor_opt(k, log_prob);
    emit_tail(k, n, reduction);
    return 0;
}

/* buf: labels, weights|NULL, denominator.
 * p: tensor labels, tensor weights|absent, has_ignore_index, ignore_index,
 *    over_ranks (see px_k_loss_denominator). */
int px_lower_loss_denominator(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *labels = px_lower_in(n, 0), *weights = px_lower_in(n, 1),
                   *out = px_lower_out(n, 0);
    if (px_lnn_check(n, labels, "input labels", px_lnn_index_types, d) ||
        (weights && px_lnn_check(n, weights, "input weights", px_lnn_float_types, d)))
        return -1;
    if (!out || out->dtype != PX_F64 || px_shape_numel(&out->shape) != 1)
        return px_lower_error(d, n, "its output must be a float64 scalar");
    const px_attr *ii = px_node_attr(n, "ignore_index");
    px_kc_set_kernel(k, "px_k_loss_denominator");
    px_kc_buf(k, labels);
    px_kc_buf(k, weights);
    px_kc_buf(k, out);
    px_kc_tensor(k, labels);
    px_lnn_tensor_opt(k, weights);
    px_kc_i64(k, ii != NULL);
    px_kc_i64(k, ii ? ii->i : 0);
    px_kc_i64(k, px_attr_int(n, "over_ranks", 1));
    return 0;
}
