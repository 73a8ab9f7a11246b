/* The gradient of a training-mode BatchNormalization (ai.parallax
 * BatchNormalizationGrad, passes/grad_conv.c) in one kernel: per channel,
 * the batch statistics again (the forward's bits), one pass for the sums
 * of dY and dY * (X - mean), one for dX. The primitive formula it replaces
 * made a dozen passes over X-sized tensors. */
#include "nn_internal.h"

#include "thread_pool.h"
#include "vec_clones.h"

#include <math.h>

typedef struct bn_grad_job {
    px_kt x;
    void *const *buf;
    int64_t N, C, inner;
    double eps;
} bn_grad_job;

/* Over one channel's N runs of `inner` elements, `stride` apart, in
 * double: sum(dy) and sum(dy * (x - mean)); then
 * dx = k1 * (dy - mdy) - k2 * (x - mean). Four partial sums per quantity
 * (one per lane), added in a fixed order: the bits depend on the shapes
 * alone. */
#define BN_GRAD_TYPE(T, S)                                                                         \
    PX_VEC_CLONES static void channel_sums_##S(const T *dy, const T *x, int64_t N, int64_t stride, \
                                               int64_t inner, double mean, double *sdy,            \
                                               double *sdyx) {                                     \
        double a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0, ta = 0, tb = 0;     \
        for (int64_t n = 0; n < N; n++) {                                                          \
            const T *g = dy + n * stride, *v = x + n * stride;                                     \
            int64_t i = 0;                                                                         \
            for (; i + 4 <= inner; i += 4) {                                                       \
                double g0 = g[i], g1 = g[i + 1], g2 = g[i + 2], g3 = g[i + 3];                     \
                a0 += g0;                                                                          \
                a1 += g1;                                                                          \
                a2 += g2;                                                                          \
                a3 += g3;                                                                          \
                b0 += g0 * ((double)v[i] - mean);                                                  \
                b1 += g1 * ((double)v[i + 1] - mean);                                              \
                b2 += g2 * ((double)v[i + 2] - mean);                                              \
                b3 += g3 * ((double)v[i + 3] - mean);                                              \
            }                                                                                      \
            for (; i < inner; i++) {                                                               \
                ta += g[i];                                                                        \
                tb += (double)g[i] * ((double)v[i] - mean);                                        \
            }                                                                                      \
        }                                                                                          \
        *sdy = ((a0 + a1) + (a2 + a3)) + ta;                                                       \
        *sdyx = ((b0 + b1) + (b2 + b3)) + tb;                                                      \
    }                                                                                              \
    PX_VEC_CLONES static void channel_dx_##S(const T *dy, const T *x, T *dx, int64_t N,            \
                                             int64_t stride, int64_t inner, double mean,           \
                                             double mdy, double k1, double k2) {                   \
        for (int64_t n = 0; n < N; n++) {                                                          \
            const T *g = dy + n * stride, *v = x + n * stride;                                     \
            T *o = dx + n * stride;                                                                \
            for (int64_t i = 0; i < inner; i++)                                                    \
                o[i] = (T)(k1 * ((double)g[i] - mdy) - k2 * ((double)v[i] - mean));                \
        }                                                                                          \
    }                                                                                              \
    static void channel_grad_##S(const bn_grad_job *j, int64_t ch) {                               \
        void *const *buf = j->buf;                                                                 \
        int64_t off = ch * j->inner, stride = j->C * j->inner;                                     \
        const T *dy = (const T *)buf[0] + off, *x = (const T *)buf[1] + off;                       \
        double mean, var, sdy, sdyx, count = (double)(j->N * j->inner);                            \
        px_nn_channel_stats(&j->x, buf[1], ch, j->N, j->C, j->inner, &mean, &var);                 \
        channel_sums_##S(dy, x, j->N, stride, j->inner, mean, &sdy, &sdyx);                        \
        double rstd = 1.0 / sqrt(var + j->eps), scale = ((const T *)buf[2])[ch];                   \
        if (buf[3]) {                                                                              \
            double k1 = scale * rstd, mdy = count > 0 ? sdy / count : 0;                           \
            double k2 = count > 0 ? k1 * rstd * rstd * sdyx / count : 0;                           \
            channel_dx_##S(dy, x, (T *)buf[3] + off, j->N, stride, j->inner, mean, mdy, k1, k2);   \
        }                                                                                          \
        if (buf[4]) ((T *)buf[4])[ch] = (T)(sdyx * rstd);                                          \
        if (buf[5]) ((T *)buf[5])[ch] = (T)sdy;                                                    \
    }
BN_GRAD_TYPE(float, f32)
BN_GRAD_TYPE(double, f64)

/* Channels [lo, hi): each from its own channel alone, so any split over
 * the rank's threads gives the same bits. */
static void bn_grad_channels(void *ctx, int64_t lo, int64_t hi) {
    const bn_grad_job *j = ctx;
    for (int64_t ch = lo; ch < hi; ch++) {
        if (j->x.dtype == PX_NN_F64)
            channel_grad_f64(j, ch);
        else
            channel_grad_f32(j, ch);
    }
}

/* With xhat = (X - mean) * rstd, rstd = 1 / sqrt(var + epsilon) and the
 * batch's mean and population variance over (N, spatial) per channel:
 *   dX = scale * rstd * (dY - mean(dY) - xhat * mean(dY * xhat)),
 *   dScale = sum(dY * xhat), dB = sum(dY).
 * buf: dY, X, scale, dX (NULL), dScale (NULL), dB (NULL); f32 or f64, one for all.
 * p:   tensor X, N, C, inner (the spatial dims' product), epsilon (f64). */
void px_k_batchnorm_grad(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    bn_grad_job j;
    j.x = px_kp_tensor(&c);
    j.N = px_kp_i64(&c);
    j.C = px_kp_i64(&c);
    j.inner = px_kp_i64(&c);
    j.eps = px_kp_f64(&c);
    j.buf = buf;
    if (j.x.dtype != PX_NN_F32 && j.x.dtype != PX_NN_F64)
        px_rt_fail("px_k_batchnorm_grad: unsupported dtype %d", j.x.dtype);
    px_parallel_for(j.C, px_grain_for(4 * j.N * j.inner), bn_grad_channels, &j);
}
