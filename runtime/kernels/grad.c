/* Kernels of the ai.parallax backward ops made by autodiff (see px_kernel.h
 * for the ABI). Arithmetic is in double whatever the float dtype, except the
 * float32 softmax rows of the cross-entropy gradient (see softmax_row_f32). */
/* Nothing here inspects floating-point exception flags; without this GCC
 * keeps the clamps in px_rnn_expf as branches and the row loops scalar. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "px_enums.h"
#include "px_kernel.h"
#include "rnn_math.h"
#include "thread_pool.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { F32 = 1, I32 = 6, I64 = 7, F64 = 11 };

static inline double load(const void *p, int dtype, int64_t i) {
    return dtype == F64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

static inline void store(void *p, int dtype, int64_t i, double v) {
    if (dtype == F64)
        ((double *)p)[i] = v;
    else
        ((float *)p)[i] = (float)v;
}

static inline int64_t load_index(const void *p, int dtype, int64_t i) {
    return dtype == I32 ? (int64_t)((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

/* runtime/kernels/gather_grad.c */
void px_k_gather_grad(void *const *buf, const int64_t *p);

/* GatherGradDense: dX = 0, then dX[pre, idx[k], post] += dY[pre, k, post].
 * buf: dY, indices (int32/int64), dX.
 * p:   tensor dY, tensor indices, tensor dX, axis. */
void px_k_gather_grad_dense(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt dy = px_kp_tensor(&c), ix = px_kp_tensor(&c), dx = px_kp_tensor(&c);
    int64_t axis = px_kp_i64(&c), outer = 1, inner = 1, rows = dx.dims[axis], k = ix.numel;
    for (int64_t i = 0; i < axis; i++) outer *= dx.dims[i];
    for (int64_t i = axis + 1; i < dx.rank; i++) inner *= dx.dims[i];
    for (int64_t i = 0; i < dx.numel; i++) store(buf[2], dx.dtype, i, 0.0);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < k; j++) {
            int64_t r = load_index(buf[1], ix.dtype, j);
            if (r < -rows || r >= rows)
                px_rt_fail("Gather gradient: index %lld out of range for %lld rows", (long long)r,
                           (long long)rows);
            if (r < 0) r += rows;
            for (int64_t q = 0; q < inner; q++) {
                int64_t to = (o * rows + r) * inner + q;
                store(buf[2], dx.dtype, to,
                      load(buf[2], dx.dtype, to) + load(buf[0], dy.dtype, (o * k + j) * inner + q));
            }
        }
}

/* GatherElementsGrad: dX = 0, then dX[i with its axis coordinate replaced by
 * idx[i]] += dY[i] for every position i of dY (dY and indices share a shape;
 * dX has their rank). The backward of GatherElements and of TopK's Values.
 * buf: dY, indices (int32/int64), dX.
 * p:   tensor dY, tensor indices, tensor dX, axis. */
void px_k_gather_elements_grad(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt dy = px_kp_tensor(&c), ix = px_kp_tensor(&c), dx = px_kp_tensor(&c);
    int axis = (int)px_kp_i64(&c), r = dx.rank;
    int64_t stride[PX_K_MAX_RANK], s = 1, rows = dx.dims[axis], pos[PX_K_MAX_RANK] = {0}, base = 0;
    for (int d = r - 1; d >= 0; d--) {
        stride[d] = s;
        s *= dx.dims[d];
    }
    for (int64_t i = 0; i < dx.numel; i++) store(buf[2], dx.dtype, i, 0.0);
    for (int64_t e = 0; e < dy.numel; e++) {
        int64_t v = load_index(buf[1], ix.dtype, e);
        if (v < -rows || v >= rows)
            px_rt_fail("GatherElements gradient: index %lld out of range for %lld elements along "
                       "axis %d",
                       (long long)v, (long long)rows, axis);
        if (v < 0) v += rows;
        int64_t to = base + v * stride[axis];
        store(buf[2], dx.dtype, to, load(buf[2], dx.dtype, to) + load(buf[0], dy.dtype, e));
        /* odometer over dY's shape; base leaves out the axis coordinate */
        for (int d = r - 1; d >= 0; d--) {
            if (d != axis) base += stride[d];
            if (++pos[d] < dy.dims[d]) break;
            if (d != axis) base -= stride[d] * dy.dims[d];
            pos[d] = 0;
        }
    }
}

/* Shared by both loss gradients. X [N, C, d...], labels [N, d...].
 * softmax: 1 for SoftmaxCrossEntropyLoss (dX = g_i (softmax - onehot)),
 *          0 for NegativeLogLikelihoodLoss (dX = -g_i onehot),
 * with g_i = dLoss_i * w_i (/ sum of w over the batch for mean), w_i =
 * weights[label] (1 without weights) and 0 at ignore_index. */
/* dx = gi * softmax(x) for one float32 row of contiguous classes (the
 * language-model case: 1000 classes per position): a branch-free expf, the
 * exponentials kept in dx, eight partial sums, then one scaling pass, all of
 * which vectorize. The label's -gi is the caller's. Returns 0 when the row
 * holds NaN or infinities (the caller takes the general path). */
PX_VEC_CLONES static int softmax_row_f32(const float *x, float *dx, int64_t cls, double gi) {
    float mx = px_rnn_row_maxf(x, cls);
    if (!(mx > -INFINITY && mx < INFINITY)) return 0;
    float acc[8] = {0};
    int64_t k = 0;
    for (; k + 8 <= cls; k += 8)
        for (int j = 0; j < 8; j++) {
            float e = px_rnn_expf(x[k + j] - mx);
            dx[k + j] = e;
            acc[j] += e;
        }
    double sum = 0;
    for (; k < cls; k++) {
        dx[k] = px_rnn_expf(x[k] - mx);
        sum += dx[k];
    }
    for (int j = 0; j < 8; j++) sum += acc[j];
    float scale = (float)(gi / sum);
    for (k = 0; k < cls; k++) dx[k] *= scale;
    return 1;
}

/* row[k] *= s (s == 0 clears the row, NaNs included). */
PX_VEC_CLONES static void scale_row_f32(float *row, int64_t n, float s) {
    if (s == 0.0f)
        memset(row, 0, (size_t)n * sizeof *row);
    else
        for (int64_t k = 0; k < n; k++) row[k] *= s;
}

typedef struct loss_grad_job {
    px_kt dl, x, lab, w;
    int64_t red, has_ignore, ignore;
    const void *dlp, *xp, *lp, *wp;
    void *dx;
    int64_t cls, inner;
    double total;
    int softmax;
} loss_grad_job;

/* Positions [lo, hi) (sample b, trailing index j) of the loss gradient: each
 * writes only its own row of dX, so any split gives the same bits. */
static void loss_grad_positions(void *ctx, int64_t lo, int64_t hi) {
    const loss_grad_job *g = ctx;
    const px_kt dl = g->dl, x = g->x, lab = g->lab, w = g->w;
    const int64_t red = g->red, has_ignore = g->has_ignore, ignore = g->ignore;
    const void *dlp = g->dlp, *xp = g->xp, *lp = g->lp, *wp = g->wp;
    void *dx = g->dx;
    const int64_t cls = g->cls, inner = g->inner;
    const double total = g->total;
    const int softmax = g->softmax;
    for (int64_t i = lo; i < hi; i++) {
        int64_t b = i / inner, j = i % inner, l = load_index(lp, lab.dtype, i);
        int ignored = has_ignore && l == ignore;
        double gi = 0;
        if (!ignored) {
            double wi = w.dtype ? load(wp, w.dtype, l) : 1.0;
            gi = (red == PX_REDUCTION_NONE ? load(dlp, dl.dtype, i) : load(dlp, dl.dtype, 0)) * wi;
            if (red == PX_REDUCTION_MEAN) gi /= total;
        }
        int64_t base = b * cls * inner + j;
        if (softmax == 2) {
            if (x.dtype == F32 && inner == 1) {
                scale_row_f32((float *)dx + base, cls, ignored ? 0.0f : (float)gi);
            } else {
                for (int64_t k = 0; k < cls; k++) {
                    int64_t o = base + k * inner;
                    store(dx, x.dtype, o, ignored ? 0.0 : gi * load(dx, x.dtype, o));
                }
            }
            if (!ignored)
                store(dx, x.dtype, base + l * inner, load(dx, x.dtype, base + l * inner) - gi);
            continue;
        }
        if (softmax == 1 && !ignored && x.dtype == F32 && inner == 1 &&
            softmax_row_f32((const float *)xp + base, (float *)dx + base, cls, gi)) {
            ((float *)dx)[base + l] -= (float)gi;
            continue;
        }
        if (softmax) {
            double mx = -INFINITY, sum = 0;
            for (int64_t k = 0; k < cls; k++) {
                double v = load(xp, x.dtype, base + k * inner);
                if (v > mx) mx = v;
            }
            for (int64_t k = 0; k < cls; k++) sum += exp(load(xp, x.dtype, base + k * inner) - mx);
            for (int64_t k = 0; k < cls; k++) {
                double sm = exp(load(xp, x.dtype, base + k * inner) - mx) / sum;
                store(dx, x.dtype, base + k * inner,
                      ignored ? 0.0 : gi * (sm - (k == l ? 1.0 : 0.0)));
            }
        } else {
            for (int64_t k = 0; k < cls; k++)
                store(dx, x.dtype, base + k * inner, (!ignored && k == l) ? -gi : 0.0);
        }
    }
}

/* softmax: 0 NegativeLogLikelihoodLoss, 1 SoftmaxCrossEntropyLoss from the
 * scores, 2 SoftmaxCrossEntropyLoss from the probabilities that
 * px_k_sce_loss_probs left in dX (then X is not read; it may be NULL). */
static void loss_grad(void *const *buf, const int64_t *p, int softmax) {
    px_kcur c = {p};
    px_kt dl = px_kp_tensor(&c), x = px_kp_tensor(&c), lab = px_kp_tensor(&c), w = px_kp_tensor(&c);
    int64_t red = px_kp_i64(&c), has_ignore = px_kp_i64(&c), ignore = px_kp_i64(&c),
            has_denominator = px_kp_i64(&c);
    const void *dlp = buf[0], *xp = buf[1], *lp = buf[2], *wp = buf[3];
    void *dx = buf[4];
    int64_t n = x.dims[0], cls = x.dims[1], inner = (n > 0 && cls > 0) ? x.numel / (n * cls) : 0;
    int64_t positions = n * inner;
    double total = 0;
    for (int64_t i = 0; i < positions; i++) {
        int64_t l = load_index(lp, lab.dtype, i);
        if (has_ignore && l == ignore) continue;
        if (l < 0 || l >= cls)
            px_rt_fail("%s gradient: label %lld out of range for %lld classes",
                       softmax ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss",
                       (long long)l, (long long)cls);
        total += w.dtype ? load(wp, w.dtype, l) : 1.0;
    }
    if (has_denominator) { /* the kept weight averaged over the ranks (LossDenominator) */
        if (!buf[5]) px_rt_fail("loss gradient: no buffer for the denominator");
        total = *(const double *)buf[5];
    }
    loss_grad_job job = {dl, x,  lab, w,  red, has_ignore, ignore, dlp,
                         xp, lp, wp,  dx, cls, inner,      total,  softmax};
    px_parallel_for(positions, px_grain_for(4 * cls), loss_grad_positions, &job);
}

/* SoftmaxCrossEntropyLossGrad / NegativeLogLikelihoodLossGrad.
 * buf: dLoss, X, labels (int32/int64), weights [C] or NULL, dX (like X),
 *      denominator (float64 [], the forward's) or NULL.
 * p:   tensor dLoss, tensor X, tensor labels, tensor weights (dtype 0, rank
 *      0 when absent), reduction (0 none, 1 sum, 2 mean), has_ignore,
 *      ignore_index, has_denominator (1: the mean divides by buf[5]). */
void px_k_sce_loss_grad(void *const *buf, const int64_t *p) {
    loss_grad(buf, p, 1);
}

void px_k_nll_loss_grad(void *const *buf, const int64_t *p) {
    loss_grad(buf, p, 0);
}

/* px_k_sce_loss_grad when px_k_sce_loss_probs of the forward pass left
 * softmax(X) in dX: dX = g_i (dX - onehot) in place, no exponentials.
 * buf: dLoss, NULL (X is not read), labels, weights or NULL, dX.
 * p:   as px_k_sce_loss_grad. */
void px_k_sce_loss_grad_probs(void *const *buf, const int64_t *p) {
    loss_grad(buf, p, 2);
}
