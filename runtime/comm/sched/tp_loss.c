/* The softmax cross-entropy of a vocabulary projection split by columns
 * over a tensor-parallel group (--tp K; passes/tp_vocab.c): rank t holds
 * the scores of classes [t*C, (t+1)*C) of every row. Each rank sends, per
 * row, its maximum m_t, its sum of exp(x - m_t) and its score of the row's
 * target (0 when another rank holds the target): 3 floats a row, never the
 * scores. Every rank then combines the K triples of each row in rank order
 * (in double), so all ranks of the group hold the same bits:
 *   M = max_t m_t,  S = sum_t s_t exp(m_t - M),  loss = M + log S - x_target
 * and the gradient of a score is (exp(x - M) / S - [it is the target]) times
 * the loss's gradient (over the counted rows for the mean).
 *
 *   px_k_tp_sce_loss       buf {scores, labels, loss, denominator|NULL}
 *   px_k_tp_sce_loss_grad  buf {dloss, scores, labels, dscores, denominator|NULL}
 *   p {rows, classes, tp, reduction, has_ignore_index, ignore_index}
 * The mean divides by the denominator when there is one (a LossDenominator:
 * the counted rows averaged over all ranks), else by the rows counted here. */
#include "sched.h"

#include <math.h>
#include <stdlib.h>

typedef struct sce_args {
    int64_t rows, classes, tp, reduction, has_ignore, ignore;
} sce_args;

static sce_args read_args(const int64_t *p) {
    px_kcur c = {p};
    sce_args a;
    a.rows = px_kp_i64(&c);
    a.classes = px_kp_i64(&c);
    a.tp = px_kp_i64(&c);
    a.reduction = px_kp_i64(&c);
    a.has_ignore = px_kp_i64(&c);
    a.ignore = px_kp_i64(&c);
    return a;
}

/* The class of row i on this rank (-1: another rank's), or -2 when ignored. */
static int64_t local_class(const sce_args *a, const int64_t *labels, int64_t i) {
    int64_t y = labels[i];
    if (a->has_ignore && y == a->ignore) return -2;
    if (y < 0 || y >= a->classes * a->tp)
        px_rt_fail("TPSoftmaxCrossEntropy: label %lld of row %lld is outside [0, %lld)",
                   (long long)y, (long long)i, (long long)(a->classes * a->tp));
    int64_t first = (px_comm_rank() % a->tp) * a->classes;
    return y >= first && y < first + a->classes ? y - first : -1;
}

/* lse[i] = M + log S of row i over the group, and target[i] its target's
 * score (any rank's); the rows' triples gathered from the group. */
static void row_stats(const sce_args *a, const float *x, const int64_t *labels, double *lse,
                      double *target) {
    int64_t n = a->rows, tp = a->tp;
    float *mine = malloc(sizeof(float) * (size_t)(3 * n + 1));
    float *all = malloc(sizeof(float) * (size_t)(3 * n * tp + 1));
    if (!mine || !all) px_rt_fail("out of memory for a tensor-parallel cross-entropy");
    for (int64_t i = 0; i < n; i++) {
        const float *row = x + i * a->classes;
        float m = -INFINITY;
        for (int64_t j = 0; j < a->classes; j++)
            if (row[j] > m) m = row[j];
        double s = 0;
        for (int64_t j = 0; j < a->classes; j++) s += exp((double)row[j] - m);
        int64_t cls = local_class(a, labels, i);
        mine[i] = m;
        mine[n + i] = (float)s;
        mine[2 * n + i] = cls >= 0 ? row[cls] : 0.0f;
    }
    double t0 = comm_now();
    px_comm_tp_gather(mine, all, 3 * n, (int)tp);
    comm_time_busy(comm_now() - t0);
    comm_time_waited(comm_now() - t0);
    for (int64_t i = 0; i < n; i++) {
        double m = -INFINITY, s = 0, z = 0;
        for (int64_t t = 0; t < tp; t++)
            if (all[t * 3 * n + i] > m) m = all[t * 3 * n + i];
        for (int64_t t = 0; t < tp; t++) {
            const float *part = all + t * 3 * n;
            if (part[n + i] > 0) s += part[n + i] * exp((double)part[i] - m);
            z += part[2 * n + i];
        }
        lse[i] = m + log(s);
        target[i] = z;
    }
    free(mine);
    free(all);
}

/* What the mean divides by: the denominator den (float64), or the rows the
 * loss counts (not ignored). */
static double counted(const sce_args *a, const int64_t *labels, const void *den) {
    if (den) return *(const double *)den;
    int64_t k = 0;
    for (int64_t i = 0; i < a->rows; i++) k += !(a->has_ignore && labels[i] == a->ignore);
    return (double)k;
}

void px_k_tp_sce_loss(void *const *buf, const int64_t *p) {
    sce_args a = read_args(p);
    const int64_t *labels = buf[1];
    double *lse = malloc(sizeof(double) * (size_t)(2 * a.rows + 1)), *target = lse + a.rows;
    if (!lse) px_rt_fail("out of memory for a tensor-parallel cross-entropy");
    row_stats(&a, buf[0], labels, lse, target);
    double sum = 0;
    for (int64_t i = 0; i < a.rows; i++)
        if (!(a.has_ignore && labels[i] == a.ignore)) sum += lse[i] - target[i];
    double k = counted(&a, labels, buf[3]);
    float *loss = buf[2];
    *loss = (float)(a.reduction == PX_REDUCTION_MEAN ? (k != 0 ? sum / k : NAN) : sum);
    free(lse);
}

void px_k_tp_sce_loss_grad(void *const *buf, const int64_t *p) {
    sce_args a = read_args(p);
    const float *x = buf[1];
    const int64_t *labels = buf[2];
    float *dx = buf[3];
    double *lse = malloc(sizeof(double) * (size_t)(2 * a.rows + 1)), *target = lse + a.rows;
    if (!lse) px_rt_fail("out of memory for a tensor-parallel cross-entropy");
    row_stats(&a, x, labels, lse, target);
    double k = counted(&a, labels, buf[4]);
    double g = *(const float *)buf[0];
    if (a.reduction == PX_REDUCTION_MEAN) g = k != 0 ? g / k : 0;
    for (int64_t i = 0; i < a.rows; i++) {
        const float *row = x + i * a.classes;
        float *out = dx + i * a.classes;
        int64_t cls = local_class(&a, labels, i);
        for (int64_t j = 0; j < a.classes; j++)
            out[j] = cls == -2 ? 0.0f : (float)(g * exp((double)row[j] - lse[i]));
        if (cls >= 0) out[cls] = (float)(g * (exp((double)row[cls] - lse[i]) - 1.0));
    }
    free(lse);
}
