/* BatchNormalization (inference and training mode) and LayerNormalization.
 * Statistics accumulate in double; X and Y may be f32, f64, f16 or bf16. */
#include "nn_internal.h"

#include "px_train.h"
#include "thread_pool.h"
#include "vec_clones.h"

#include <math.h>

/* y[i] = x[i] * a + b over one contiguous run, any float dtype. */
static void affine_run(int dtype, const void *x, void *y, int64_t off, int64_t n, double a,
                       double b) {
    if (dtype == PX_NN_F32) {
        const float *xf = (const float *)x + off;
        float *yf = (float *)y + off;
        float af = (float)a, bf = (float)b;
        for (int64_t i = 0; i < n; i++) yf[i] = xf[i] * af + bf;
        return;
    }
    for (int64_t i = 0; i < n; i++)
        px_nn_store(dtype, y, off + i, px_nn_load(dtype, x, off + i) * a + b);
}

/* Sum of one channel's runs (N runs of `inner` floats, `stride` apart) in
 * double, minus `shift` per element and squared when `square` is set. Four
 * partial sums, one per lane (so the AVX2 copy vectorizes it), added in a
 * fixed order: the bits depend on the shapes alone. */
PX_VEC_CLONES static double channel_sum_f32(const float *x, int64_t N, int64_t stride,
                                            int64_t inner, double shift, int square) {
    double l0 = 0, l1 = 0, l2 = 0, l3 = 0, tail = 0;
    for (int64_t n = 0; n < N; n++) {
        const float *r = x + n * stride;
        int64_t i = 0;
        if (square) {
            for (; i + 4 <= inner; i += 4) {
                double d0 = r[i] - shift, d1 = r[i + 1] - shift, d2 = r[i + 2] - shift,
                       d3 = r[i + 3] - shift;
                l0 += d0 * d0;
                l1 += d1 * d1;
                l2 += d2 * d2;
                l3 += d3 * d3;
            }
            for (; i < inner; i++) tail += (r[i] - shift) * (r[i] - shift);
        } else {
            for (; i + 4 <= inner; i += 4) {
                l0 += r[i];
                l1 += r[i + 1];
                l2 += r[i + 2];
                l3 += r[i + 3];
            }
            for (; i < inner; i++) tail += r[i];
        }
    }
    return ((l0 + l1) + (l2 + l3)) + tail;
}

/* One channel's batch statistics (population variance), in double. */
void px_nn_channel_stats(const px_kt *x, const void *xb, int64_t ch, int64_t N, int64_t C,
                         int64_t inner, double *mean, double *var) {
    int64_t count = N * inner;
    if (count == 0) {
        *mean = *var = 0;
        return;
    }
    if (x->dtype == PX_NN_F32) {
        const float *xc = (const float *)xb + ch * inner;
        *mean = channel_sum_f32(xc, N, C * inner, inner, 0, 0) / (double)count;
        *var = channel_sum_f32(xc, N, C * inner, inner, *mean, 1) / (double)count;
        return;
    }
    double sum = 0, sq = 0;
    for (int64_t n = 0; n < N; n++) {
        int64_t off = (n * C + ch) * inner;
        for (int64_t i = 0; i < inner; i++) sum += px_nn_load(x->dtype, xb, off + i);
    }
    *mean = sum / (double)count;
    for (int64_t n = 0; n < N; n++) {
        int64_t off = (n * C + ch) * inner;
        for (int64_t i = 0; i < inner; i++) {
            double dv = px_nn_load(x->dtype, xb, off + i) - *mean;
            sq += dv * dv;
        }
    }
    *var = sq / (double)count;
}

typedef struct batchnorm_job {
    px_kt x, t_scale, t_b, t_mean, t_var, t_rmean, t_rvar;
    void *const *buf;
    int64_t N, C, inner;
    int training;
    double eps, momentum;
} batchnorm_job;

/* Channels [lo, hi): each channel's statistics, running outputs and Y
 * slices from that channel alone, so any split over the rank's threads
 * gives the same bits. */
static void batchnorm_channels(void *ctx, int64_t lo, int64_t hi) {
    const batchnorm_job *j = ctx;
    void *const *buf = j->buf;
    for (int64_t ch = lo; ch < hi; ch++) {
        double mean = px_nn_load(j->t_mean.dtype, buf[3], ch);
        double var = px_nn_load(j->t_var.dtype, buf[4], ch);
        if (j->training) {
            double bmean, bvar;
            px_nn_channel_stats(&j->x, buf[0], ch, j->N, j->C, j->inner, &bmean, &bvar);
            if (buf[6])
                px_nn_store(j->t_rmean.dtype, buf[6], ch,
                            mean * j->momentum + bmean * (1 - j->momentum));
            if (buf[7])
                px_nn_store(j->t_rvar.dtype, buf[7], ch,
                            var * j->momentum + bvar * (1 - j->momentum));
            mean = bmean;
            var = bvar;
        } else {
            if (buf[6]) px_nn_store(j->t_rmean.dtype, buf[6], ch, mean);
            if (buf[7]) px_nn_store(j->t_rvar.dtype, buf[7], ch, var);
        }
        double a = px_nn_load(j->t_scale.dtype, buf[1], ch) / sqrt(var + j->eps);
        double b = px_nn_load(j->t_b.dtype, buf[2], ch) - mean * a;
        for (int64_t n = 0; n < j->N; n++)
            affine_run(j->x.dtype, buf[0], buf[5], (n * j->C + ch) * j->inner, j->inner, a, b);
    }
}

/* Y = (X - mean) / sqrt(var + epsilon) * scale + B per channel.
 * Inference: mean/var are the inputs. Training: mean/var are the batch
 * statistics over (N, spatial) (population variance), and the optional
 * running outputs get input_stat * momentum + batch_stat * (1 - momentum).
 * `channels` counts the statistics entries (C, or C*spatial for opset 7's
 * spatial=0, in which case inner = 1). The channels are split over the
 * rank's threads.
 * buf: X, scale, B, input_mean, input_var, Y, running_mean (NULL), running_var (NULL).
 * p:   tensor X, N, channels, inner, tensor scale, tensor B, tensor input_mean,
 *      tensor input_var, tensor running_mean (dtype 0 if absent), tensor running_var
 *      (dtype 0 if absent), training (0/1), epsilon (f64), momentum (f64). */
void px_k_batchnorm(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    batchnorm_job j;
    j.x = px_kp_tensor(&c);
    j.N = px_kp_i64(&c);
    j.C = px_kp_i64(&c);
    j.inner = px_kp_i64(&c);
    j.t_scale = px_kp_tensor(&c);
    j.t_b = px_kp_tensor(&c);
    j.t_mean = px_kp_tensor(&c);
    j.t_var = px_kp_tensor(&c);
    j.t_rmean = px_kp_tensor(&c);
    j.t_rvar = px_kp_tensor(&c);
    /* A validation in eval mode (px_train.eval_mode) normalizes with the
     * running statistics as inference does; the running outputs then repeat
     * them (and nothing assigns them in that pass). */
    j.training = (int)px_kp_i64(&c) && !px_train.eval_mode;
    j.eps = px_kp_f64(&c);
    j.momentum = px_kp_f64(&c);
    j.buf = buf;
    px_parallel_for(j.C, px_grain_for(3 * j.N * j.inner), batchnorm_channels, &j);
}

/* LayerNorm rows [lo, hi): each row's statistics and outputs from that
 * row alone, so any split over the rank's threads gives the same bits. */
typedef struct layernorm_job {
    px_kt x, y;
    void *const *buf;
    const double *sb;
    int64_t inner;
    double eps;
    int dt_stat;
} layernorm_job;

static void layernorm_rows(void *ctx, int64_t lo, int64_t hi) {
    const layernorm_job *jb = ctx;
    const px_kt x = jb->x, y = jb->y;
    void *const *buf = jb->buf;
    const double *sb = jb->sb, eps = jb->eps;
    const int64_t inner = jb->inner;
    const int dt_stat = jb->dt_stat;
    for (int64_t r = lo; r < hi; r++) {
        int64_t off = r * inner;
        double sum = 0, sq = 0;
        if (x.dtype == PX_NN_F32 &&
            y.dtype == PX_NN_F32) { /* the common case, without conversions */
            const float *xr = (const float *)buf[0] + off;
            float *yr = (float *)buf[3] + off;
            for (int64_t j = 0; j < inner; j++) sum += xr[j];
            double mean = sum / (double)inner;
            for (int64_t j = 0; j < inner; j++) sq += (xr[j] - mean) * (xr[j] - mean);
            double inv_std = 1.0 / sqrt(sq / (double)inner + eps);
            for (int64_t j = 0; j < inner; j++)
                yr[j] = (float)((xr[j] - mean) * inv_std * sb[j] + sb[inner + j]);
            if (buf[4]) px_nn_store(dt_stat, buf[4], r, mean);
            if (buf[5]) px_nn_store(dt_stat, buf[5], r, inv_std);
            continue;
        }
        for (int64_t j = 0; j < inner; j++) sum += px_nn_load(x.dtype, buf[0], off + j);
        double mean = sum / (double)inner;
        for (int64_t j = 0; j < inner; j++) {
            double dv = px_nn_load(x.dtype, buf[0], off + j) - mean;
            sq += dv * dv;
        }
        double inv_std = 1.0 / sqrt(sq / (double)inner + eps);
        for (int64_t j = 0; j < inner; j++) {
            double v = (px_nn_load(x.dtype, buf[0], off + j) - mean) * inv_std;
            px_nn_store(y.dtype, buf[3], off + j, v * sb[j] + sb[inner + j]);
        }
        if (buf[4]) px_nn_store(dt_stat, buf[4], r, mean);
        if (buf[5]) px_nn_store(dt_stat, buf[5], r, inv_std);
    }
}

/* Y = (X - mean) * inv_std * Scale + B, with mean and 1/sqrt(var + epsilon)
 * taken over the trailing dims of X from `axis` (each of the `outer` rows of
 * `inner` elements). Scale and B broadcast unidirectionally to X[axis:]:
 * their element strides over those dims are given (0 where broadcast).
 * buf: X, Scale, B (NULL), Y, Mean (NULL), InvStdDev (NULL).
 * p:   tensor X, axis, epsilon (f64), dtype Scale, scale_strides[rank-axis],
 *      dtype B (0 if absent), b_strides[rank-axis], tensor Y,
 *      dtype of Mean/InvStdDev (the stash type; 0 if neither is present). */
void px_k_layernorm(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt x = px_kp_tensor(&c);
    int axis = (int)px_kp_i64(&c), nd = x.rank - axis;
    double eps = px_kp_f64(&c);
    int dt_scale = (int)px_kp_i64(&c);
    int64_t s_str[PX_K_MAX_RANK], b_str[PX_K_MAX_RANK];
    px_kp_ints(&c, s_str, nd);
    int dt_b = (int)px_kp_i64(&c);
    px_kp_ints(&c, b_str, nd);
    px_kt y = px_kp_tensor(&c);
    int dt_stat = (int)px_kp_i64(&c);
    int64_t inner = 1;
    for (int i = axis; i < x.rank; i++) inner *= x.dims[i];
    int64_t outer = inner ? x.numel / inner : 0;
    /* Scale and B expanded to one row of `inner` values */
    double *sb = px_nn_scratch(0, (size_t)(2 * inner) * sizeof(double));
    int64_t idx[PX_K_MAX_RANK] = {0};
    for (int64_t j = 0; j < inner; j++) {
        int64_t os = 0, ob = 0;
        for (int i = 0; i < nd; i++) {
            os += idx[i] * s_str[i];
            ob += idx[i] * b_str[i];
        }
        sb[j] = px_nn_load(dt_scale, buf[1], os);
        sb[inner + j] = buf[2] ? px_nn_load(dt_b, buf[2], ob) : 0.0;
        for (int i = nd - 1; i >= 0 && ++idx[i] == x.dims[axis + i]; i--) idx[i] = 0;
    }
    layernorm_job job = {x, y, buf, sb, inner, eps, dt_stat};
    px_parallel_for(outer, px_grain_for(3 * inner), layernorm_rows, &job);
}
