/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, following the
 * ONNX reference: input (N, C, d1..dk), target (N, d1..dk); a target equal
 * to ignore_index contributes 0 with weight 0; "mean" divides the weighted
 * sum by the sum of the gathered weights (the element count when there are
 * neither weights nor ignore_index). Sums accumulate in double. */
/* Nothing here inspects floating-point exception flags; without this GCC
 * keeps the clamps in px_rnn_expf as branches and the row loops scalar. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "px_enums.h"
#include "nn_internal.h"
#include "rnn_math.h"
#include "thread_pool.h"

#include <math.h>

typedef struct loss_args {
    px_kt in, target, weight, loss, lp; /* lp: log_prob (SoftmaxCrossEntropyLoss) */
    int64_t N, C, D;                    /* input viewed as (N, C, D) */
    int reduction, has_ignore, has_denominator;
    int64_t ignore_index;
} loss_args;

static void read_common(px_kcur *c, loss_args *a) {
    a->in = px_kp_tensor(c);
    a->target = px_kp_tensor(c);
    a->weight = px_kp_tensor(c);
    a->loss = px_kp_tensor(c);
}

static void read_tail(px_kcur *c, loss_args *a) {
    a->reduction = (int)px_kp_i64(c);
    a->has_ignore = (int)px_kp_i64(c);
    a->ignore_index = px_kp_i64(c);
    a->has_denominator = (int)px_kp_i64(c);
    a->N = a->in.dims[0];
    a->C = a->in.dims[1];
    a->D = a->N > 0 && a->C > 0 ? a->in.numel / (a->N * a->C) : 0;
}

/* The class of target element t, or -1 when ignored; ends the program on a
 * class outside [0, C). */
static int64_t target_class(const loss_args *a, const void *target, int64_t t, const char *op) {
    int64_t cls = px_nn_load_index(a->target.dtype, target, t);
    if (a->has_ignore && cls == a->ignore_index) return -1;
    if (cls < 0 || cls >= a->C)
        px_rt_fail("%s: target %lld at position %lld is outside [0, %lld)", op, (long long)cls,
                   (long long)t, (long long)a->C);
    return cls;
}

/* Writes the per-element losses (reduction none) or their reduction; the
 * mean divides by the LossDenominator (den, the kept weight averaged over
 * the ranks) when the node has one, else by the rank's own wsum. */
static void finish(const loss_args *a, void *out, double sum, double wsum, const void *den) {
    if (a->has_denominator && !den) px_rt_fail("loss: no buffer for the denominator");
    if (a->reduction == PX_REDUCTION_SUM)
        px_nn_store(a->loss.dtype, out, 0, sum);
    else if (a->reduction == PX_REDUCTION_MEAN)
        px_nn_store(a->loss.dtype, out, 0,
                    sum / (a->has_denominator ? *(const double *)den : wsum));
}

/* loss[n, d] = -input[n, target[n,d], d] * weight[target[n,d]], reduced.
 * buf: input, target (int32/int64), weight (NULL if absent), loss,
 *      denominator (float64 [], NULL if absent).
 * p:   tensor input, tensor target, tensor weight (dtype 0 if absent), tensor loss,
 *      reduction (0 none, 1 sum, 2 mean), has_ignore_index, ignore_index,
 *      has_denominator (1: mean divides by buf[4]). */
void px_k_nll_loss(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    loss_args a;
    read_common(&c, &a);
    read_tail(&c, &a);
    double sum = 0, wsum = 0;
    for (int64_t n = 0; n < a.N; n++)
        for (int64_t d = 0; d < a.D; d++) {
            int64_t t = n * a.D + d, cls = target_class(&a, buf[1], t, "NegativeLogLikelihoodLoss");
            double w = 0, l = 0;
            if (cls >= 0) {
                w = buf[2] ? px_nn_load(a.weight.dtype, buf[2], cls) : 1.0;
                l = -px_nn_load(a.in.dtype, buf[0], (n * a.C + cls) * a.D + d) * w;
            }
            if (a.reduction == PX_REDUCTION_NONE) px_nn_store(a.loss.dtype, buf[3], t, l);
            sum += l;
            wsum += w;
        }
    finish(&a, buf[3], sum, wsum, a.has_denominator ? buf[4] : NULL);
}

/* NLL of log_softmax(scores) over the class axis; log_prob (optional) gets
 * the log-probabilities, shaped like scores.
 * buf: scores, labels (int32/int64), weights (NULL if absent), loss, log_prob (NULL),
 *      probs (NULL; see px_k_sce_loss_probs), denominator (float64 [], NULL).
 * p:   tensor scores, tensor labels, tensor weights (dtype 0 if absent), tensor loss,
 *      tensor log_prob (dtype 0 if absent), reduction (0 none, 1 sum, 2 mean),
 *      has_ignore_index, ignore_index, has_denominator (1: mean divides by buf[6]). */
/* log(sum_k exp(x[base + k*D])) over the C classes of one (n, d) column.
 * float32 rows with contiguous classes (D == 1, the language-model case)
 * take a vectorizable path: a branch-free expf and eight partial sums, so
 * that a 1000-class row costs microseconds instead of 1000 libm calls. */
PX_VEC_CLONES static double column_logsumexp(const loss_args *a, const void *in, int64_t base) {
    if (a->in.dtype == 1 && a->D == 1) {
        const float *x = (const float *)in + base;
        int64_t C = a->C;
        float mx = px_rnn_row_maxf(x, C);
        if (!(mx > -INFINITY && mx < INFINITY)) goto general; /* NaN, inf or all -inf */
        float acc[8] = {0};
        int64_t k = 0;
        for (; k + 8 <= C; k += 8)
            for (int j = 0; j < 8; j++) acc[j] += px_rnn_expf(x[k + j] - mx);
        double se = 0;
        for (; k < C; k++) se += px_rnn_expf(x[k] - mx);
        for (int j = 0; j < 8; j++) se += acc[j];
        return mx + log(se);
    }
general:;
    double mx = -INFINITY, se = 0;
    for (int64_t k = 0; k < a->C; k++) {
        double v = px_nn_load(a->in.dtype, in, base + k * a->D);
        if (v > mx) mx = v;
    }
    for (int64_t k = 0; k < a->C; k++) se += exp(px_nn_load(a->in.dtype, in, base + k * a->D) - mx);
    return mx + log(se);
}

/* Row (n, d) of the probabilities softmax(scores) into probs (same layout
 * as the scores); returns the row's log-sum-exp. float32 rows of contiguous
 * classes take the vectorizable path: the exponentials go straight into
 * probs and are scaled once, so each score costs one expf. */
PX_VEC_CLONES static double column_softmax(const loss_args *a, const void *in, void *probs,
                                           int64_t base) {
    if (a->in.dtype == 1 && a->D == 1) {
        const float *x = (const float *)in + base;
        float *pr = (float *)probs + base;
        int64_t C = a->C;
        float mx = px_rnn_row_maxf(x, C);
        if (mx > -INFINITY && mx < INFINITY) {
            float acc[8] = {0};
            int64_t k = 0;
            for (; k + 8 <= C; k += 8)
                for (int j = 0; j < 8; j++) {
                    float e = px_rnn_expf(x[k + j] - mx);
                    pr[k + j] = e;
                    acc[j] += e;
                }
            double se = 0;
            for (; k < C; k++) {
                pr[k] = px_rnn_expf(x[k] - mx);
                se += pr[k];
            }
            for (int j = 0; j < 8; j++) se += acc[j];
            float inv = (float)(1.0 / se);
            for (k = 0; k < C; k++) pr[k] *= inv;
            return mx + log(se);
        }
    }
    double lse = column_logsumexp(a, in, base);
    for (int64_t k = 0; k < a->C; k++)
        px_nn_store(a->in.dtype, probs, base + k * a->D,
                    exp(px_nn_load(a->in.dtype, in, base + k * a->D) - lse));
    return lse;
}

typedef struct sce_job {
    const loss_args *a;
    void *const *buf;
    void *probs;
    double *terms; /* per position: loss, weight */
} sce_job;

/* Positions [lo, hi) of the (n, d) grid: each one's softmax/log-sum-exp,
 * log-probabilities and loss term, independent of every other position. */
static void sce_positions(void *ctx, int64_t lo, int64_t hi) {
    const sce_job *j = ctx;
    const loss_args *a = j->a;
    void *const *buf = j->buf;
    for (int64_t t = lo; t < hi; t++) {
        int64_t n = t / a->D, d = t % a->D;
        int64_t base = n * a->C * a->D + d; /* scores[n, 0, d] */
        double lse = j->probs ? column_softmax(a, buf[0], j->probs, base)
                              : column_logsumexp(a, buf[0], base);
        int64_t cls = target_class(a, buf[1], t, "SoftmaxCrossEntropyLoss");
        double w = 0, l = 0;
        if (cls >= 0) {
            w = buf[2] ? px_nn_load(a->weight.dtype, buf[2], cls) : 1.0;
            l = -(px_nn_load(a->in.dtype, buf[0], base + cls * a->D) - lse) * w;
        }
        /* after the last read of this column: log_prob may share the scores' buffer */
        if (buf[4])
            for (int64_t k = 0; k < a->C; k++)
                px_nn_store(a->lp.dtype, buf[4], base + k * a->D,
                            px_nn_load(a->in.dtype, buf[0], base + k * a->D) - lse);
        if (a->reduction == PX_REDUCTION_NONE) px_nn_store(a->loss.dtype, buf[3], t, l);
        j->terms[2 * t] = l;
        j->terms[2 * t + 1] = w;
    }
}

/* probs: NULL, or where to leave softmax(scores) for px_k_sce_loss_grad_probs.
 * Positions are split over the rank's threads; the loss terms are summed
 * afterwards in position order, so the result does not depend on the split. */
static void sce_loss(void *const *buf, const int64_t *p, void *probs) {
    px_kcur c = {p};
    loss_args a;
    read_common(&c, &a);
    a.lp = px_kp_tensor(&c);
    read_tail(&c, &a);
    int64_t positions = a.N * a.D;
    sce_job j = {&a, buf, probs, px_nn_scratch(0, (size_t)(2 * positions) * sizeof(double))};
    px_parallel_for(positions, px_grain_for(4 * a.C), sce_positions, &j);
    double sum = 0, wsum = 0;
    for (int64_t t = 0; t < positions; t++) {
        sum += j.terms[2 * t];
        wsum += j.terms[2 * t + 1];
    }
    finish(&a, buf[3], sum, wsum, a.has_denominator ? buf[6] : NULL);
}

void px_k_sce_loss(void *const *buf, const int64_t *p) {
    sce_loss(buf, p, NULL);
}

/* px_k_sce_loss that also leaves softmax(scores) in buf[5] (the scores'
 * shape and dtype, float32 or float64) for the backward pass
 * (px_k_sce_loss_grad_probs), which then needs neither the scores nor a
 * second round of exponentials.
 * buf: scores, labels, weights|NULL, loss, log_prob|NULL, probs, denominator|NULL.
 * p:   as px_k_sce_loss. */
void px_k_sce_loss_probs(void *const *buf, const int64_t *p) {
    if (!buf[5]) px_rt_fail("SoftmaxCrossEntropyLoss: no buffer for the probabilities");
    sce_loss(buf, p, buf[5]);
}
