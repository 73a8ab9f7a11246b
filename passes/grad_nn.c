/* Gradient rules of MatMul, Gemm, Softmax, LogSoftmax and the two loss ops.
 * Matrix products become Gemm/MatMul nodes (BLAS); the losses get one
 * backward op each (ai.parallax::SoftmaxCrossEntropyLossGrad and
 * NegativeLogLikelihoodLossGrad, runtime/kernels/grad.c) that recomputes
 * the softmax rather than keeping the forward's probabilities alive. */
#include "grad_internal.h"
#include "shape_util.h"

#include <string.h>

/* x with its last two dims swapped. */
static px_value *swap_last2(px_ad *a, px_value *x) {
    int r = x->shape.rank;
    int64_t perm[PX_MAX_RANK];
    for (int i = 0; i < r; i++) perm[i] = i;
    perm[r - 2] = r - 1;
    perm[r - 1] = r - 2;
    return px_ad_transpose(a, x, r, perm);
}

/* Y = A @ B (rank >= 2, batch dims broadcast): dA = dY @ B^T, dB = A^T @ dY,
 * each reduced over the batch dims it was broadcast along. */
int px_grad_matmul(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *A = n->inputs[0], *B = n->inputs[1];
    if (A->shape.rank < 2 || B->shape.rank < 2)
        return px_ad_error(a, n, "no gradient rule for 1-D operands (ranks %d and %d)",
                           A->shape.rank, B->shape.rank);
    if (px_ad_wants(a, n, 0) && px_ad_accum(a, n, 0, px_ad_2(a, "MatMul", dy[0], swap_last2(a, B))))
        return -1;
    if (px_ad_wants(a, n, 1) && px_ad_accum(a, n, 1, px_ad_2(a, "MatMul", swap_last2(a, A), dy[0])))
        return -1;
    return 0;
}

static px_value *gemm(px_ad *a, px_value *x, px_value *y, int ta, int tb, double alpha) {
    if (!x || !y) return NULL;
    px_value *in[2] = {x, y};
    px_node *n = px_ad_op(a, "Gemm", "", 2, in, 1);
    px_node_set_attr_int(n, "transA", ta);
    px_node_set_attr_int(n, "transB", tb);
    px_node_set_attr_float(n, "alpha", (float)alpha);
    return px_ad_done(a, n);
}

/* Y = alpha op(A) op(B) + beta C. With A' = op(A), B' = op(B):
 * dA' = alpha dY B'^T and dB' = alpha A'^T dY, transposed back when the
 * forward transposed; dC = beta dY reduced to C's shape. */
int px_grad_gemm(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *A = n->inputs[0], *B = n->inputs[1], *g = dy[0];
    int ta = (int)px_attr_int(n, "transA", 0), tb = (int)px_attr_int(n, "transB", 0);
    double alpha = px_attr_float(n, "alpha", 1.0f), beta = px_attr_float(n, "beta", 1.0f);
    if (px_ad_wants(a, n, 0)) {
        px_value *dA = ta ? gemm(a, B, g, tb, 1, alpha) : gemm(a, g, B, 0, !tb, alpha);
        if (px_ad_accum(a, n, 0, dA)) return -1;
    }
    if (px_ad_wants(a, n, 1)) {
        px_value *dB = tb ? gemm(a, g, A, 1, ta, alpha) : gemm(a, A, g, !ta, 0, alpha);
        if (px_ad_accum(a, n, 1, dB)) return -1;
    }
    if (px_ad_wants(a, n, 2)) {
        px_value *dC = beta == 1.0 ? g : px_ad_2(a, "Mul", g, px_ad_scalar(a, g->dtype, beta));
        if (px_ad_accum(a, n, 2, dC)) return -1;
    }
    return 0;
}

/* The axes a Softmax/LogSoftmax normalizes over: one axis from opset 13,
 * all dims from axis on (the 2-D coercion) before. */
static int softmax_axes(px_ad *a, const px_node *n, int64_t *axes, int *na) {
    int rank = n->inputs[0]->shape.rank, ax;
    int64_t opset = px_graph_opset(a->g, "");
    int modern = opset == 0 || opset >= 13;
    if (px_su_norm_axis(n, a->d, px_attr_int(n, "axis", modern ? -1 : 1), rank, 0, "axis", &ax))
        return -1;
    *na = 0;
    for (int i = ax; i < (modern ? ax + 1 : rank); i++) axes[(*na)++] = i;
    return 0;
}

/* y = softmax(x): dx = y * (dy - sum(dy * y)) */
int px_grad_softmax(px_ad *a, px_node *n, px_value *const *dy) {
    int64_t axes[PX_MAX_RANK];
    int na;
    if (softmax_axes(a, n, axes, &na)) return -1;
    px_value *y = n->outputs[0];
    px_value *s = px_ad_reduce_sum(a, px_ad_2(a, "Mul", dy[0], y), na, axes, 1);
    return px_ad_accum(a, n, 0, px_ad_2(a, "Mul", y, px_ad_2(a, "Sub", dy[0], s)));
}

/* y = logsoftmax(x): dx = dy - exp(y) * sum(dy) */
int px_grad_logsoftmax(px_ad *a, px_node *n, px_value *const *dy) {
    int64_t axes[PX_MAX_RANK];
    int na;
    if (softmax_axes(a, n, axes, &na)) return -1;
    px_value *s = px_ad_reduce_sum(a, dy[0], na, axes, 1);
    px_value *p = px_ad_1(a, "Exp", n->outputs[0]);
    return px_ad_accum(a, n, 0, px_ad_2(a, "Sub", dy[0], px_ad_2(a, "Mul", p, s)));
}

static void copy_loss_attrs(px_node *to, const px_node *from) {
    const char *red = px_attr_string(from, "reduction", "mean");
    px_node_set_attr_string(to, "reduction", red);
    const px_attr *ig = px_node_attr(from, "ignore_index");
    if (ig) px_node_set_attr_int(to, "ignore_index", ig->i);
}

/* The inputs of a loss gradient: (dLoss, X, labels[, weights[,
 * denominator]]) from the loss's (X, labels[, weights[, denominator]]);
 * returns their count. */
static int loss_grad_inputs(const px_node *n, px_value *dloss, px_value **in) {
    in[0] = dloss;
    for (int i = 0; i < 4; i++) in[i + 1] = i < n->n_inputs ? n->inputs[i] : NULL;
    int k = 1 + n->n_inputs;
    while (k > 3 && !in[k - 1]) k--; /* trailing absent inputs */
    return k;
}

/* SoftmaxCrossEntropyLoss(scores, labels[, weights[, denominator]]) -> loss[, log_prob].
 * The loss output's gradient goes through the dedicated op; a gradient of
 * log_prob (rare) through the LogSoftmax rule over axis 1. */
int px_grad_sce(px_ad *a, px_node *n, px_value *const *dy) {
    if (px_ad_wants(a, n, 2))
        return px_ad_error(a, n, "no gradient rule for trained class weights");
    if (dy[0]) {
        px_value *in[5];
        int k = loss_grad_inputs(n, dy[0], in);
        px_node *g = px_ad_op(a, "SoftmaxCrossEntropyLossGrad", PX_DOMAIN_PARALLAX, k, in, 1);
        copy_loss_attrs(g, n);
        if (px_ad_accum(a, n, 0, px_ad_done(a, g))) return -1;
    }
    if (n->n_outputs > 1 && dy[1]) {
        int64_t axis = 1;
        px_value *s = px_ad_reduce_sum(a, dy[1], 1, &axis, 1);
        px_value *p = px_ad_1(a, "Exp", n->outputs[1]);
        if (px_ad_accum(a, n, 0, px_ad_2(a, "Sub", dy[1], px_ad_2(a, "Mul", p, s)))) return -1;
    }
    return 0;
}

int px_grad_nll(px_ad *a, px_node *n, px_value *const *dy) {
    if (px_ad_wants(a, n, 2))
        return px_ad_error(a, n, "no gradient rule for trained class weights");
    px_value *in[5];
    int k = loss_grad_inputs(n, dy[0], in);
    px_node *g = px_ad_op(a, "NegativeLogLikelihoodLossGrad", PX_DOMAIN_PARALLAX, k, in, 1);
    copy_loss_attrs(g, n);
    return px_ad_accum(a, n, 0, px_ad_done(a, g));
}

/* LayerNormalization over the dims from axis on, recomputing the statistics:
 * xhat = (x - mean) * rstd, y = xhat * scale + bias;
 * dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * scale,
 * dscale = dy * xhat and dbias = dy, both summed over the leading dims. */
int px_grad_layernorm(px_ad *a, px_node *n, px_value *const *dy) {
    if (n->n_outputs > 1 && ((n->outputs[1] && a->grad[n->outputs[1]->id]) ||
                             (n->n_outputs > 2 && n->outputs[2] && a->grad[n->outputs[2]->id])))
        return px_ad_error(a, n, "no gradient rule through the Mean / InvStdDev outputs");
    if (!dy[0]) return 0;
    px_value *x = n->inputs[0], *scale = n->inputs[1];
    int rank = x->shape.rank, ax;
    if (px_su_norm_axis(n, a->d, px_attr_int(n, "axis", -1), rank, 0, "axis", &ax)) return -1;
    int64_t axes[PX_MAX_RANK];
    int na = 0;
    double count = 1;
    for (int i = ax; i < rank; i++) {
        axes[na++] = i;
        count *= (double)x->shape.dims[i];
    }
    px_ad_norm nm = px_ad_normalize(a, x, na, axes, count, px_attr_float(n, "epsilon", 1e-5f));
    px_value *xhat = nm.xhat;
    if (px_ad_wants(a, n, 0) &&
        px_ad_accum(a, n, 0, px_ad_normalize_grad(a, &nm, px_ad_2(a, "Mul", dy[0], scale))))
        return -1;
    if (px_ad_wants(a, n, 1) && px_ad_accum(a, n, 1, px_ad_2(a, "Mul", dy[0], xhat))) return -1;
    return px_ad_accum(a, n, 2, dy[0]);
}
