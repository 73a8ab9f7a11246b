/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss -> px_k_nll_loss,
 * px_k_sce_loss (runtime/kernels/nn_loss.c). */
#include "lower_nn_internal.h"

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
    if (!strcmp(red, "none"))
        *reduction = 0;
    else if (!strcmp(red, "sum"))
        *reduction = 1;
    else if (!strcmp(red, "mean"))
        *reduction = 2;
    else
        return px_lower_error(d, n, "attribute reduction has unknown value '%s'", red);
    if (*reduction == 0 ? !px_lnn_same_dims(&loss->shape, &target->shape)
                        : px_shape_numel(&loss->shape) != 1)
        return px_lower_error(d, n, "output '%s' has the wrong shape for reduction '%s'",
                              loss->name, red);
    return 0;
}

static void emit_tail(px_kcall *k, const px_node *n, int reduction) {
    const px_attr *ii = px_node_attr(n, "ignore_index");
    px_kc_i64(k, reduction);
    px_kc_i64(k, ii != NULL);
    px_kc_i64(k, ii ? px_attr_int(n, "ignore_index", 0) : 0);
}

/* buf: input, target, weight|NULL, loss.
 * p: tensor input, tensor target, tensor weight|absent, tensor loss, reduction,
 *    has_ignore_index, ignore_index (see px_k_nll_loss). */
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
    px_kc_tensor(k, in);
    px_kc_tensor(k, target);
    px_lnn_tensor_opt(k, weight);
    px_kc_tensor(k, loss);
    emit_tail(k, n, reduction);
    return 0;
}

/* buf: scores, labels, weights|NULL, loss, log_prob|NULL.
 * p: tensor scores, tensor labels, tensor weights|absent, tensor loss,
 *    tensor log_prob|absent, reduction, has_ignore_index, ignore_index (see px_k_sce_loss). */
int px_lower_sce_loss(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *in = px_lower_in(n, 0), *target = px_lower_in(n, 1),
                   *weight = px_lower_in(n, 2), *loss = px_lower_out(n, 0),
                   *log_prob = px_lower_out(n, 1);
    int reduction;
    if (check_loss(n, in, target, weight, loss, &reduction, d)) return -1;
    if (log_prob && (px_lnn_check(n, log_prob, "output log_prob", px_lnn_float_types, d) ||
                     !px_lnn_same_dims(&log_prob->shape, &in->shape)))
        return px_lower_error(d, n, "output log_prob must have the shape of the scores");
    px_kc_set_kernel(k, "px_k_sce_loss");
    px_kc_buf(k, in);
    px_kc_buf(k, target);
    px_kc_buf(k, weight);
    px_kc_buf(k, loss);
    px_kc_buf(k, log_prob);
    px_kc_tensor(k, in);
    px_kc_tensor(k, target);
    px_lnn_tensor_opt(k, weight);
    px_kc_tensor(k, loss);
    px_lnn_tensor_opt(k, log_prob);
    emit_tail(k, n, reduction);
    return 0;
}
