/* InstanceNormalization: each (sample, channel) row of X is normalized over
 * its spatial elements, then scaled and shifted per channel. Statistics
 * accumulate in double; X and Y may be f32, f64, f16 or bf16. */
#include "nn_internal.h"

#include "thread_pool.h"

#include <math.h>

typedef struct instancenorm_job {
    void *const *buf;
    int dtype, dt_scale, dt_b;
    int64_t channels, inner;
    double eps;
} instancenorm_job;

/* Rows [lo, hi) of N*C: each row's statistics and outputs come from that
 * row alone, so any split over the rank's threads gives the same bits. */
static void instancenorm_rows(void *ctx, int64_t lo, int64_t hi) {
    const instancenorm_job *jb = ctx;
    void *const *buf = jb->buf;
    const int64_t inner = jb->inner;
    for (int64_t r = lo; r < hi; r++) {
        int64_t off = r * inner, ch = r % jb->channels;
        double s = px_nn_load(jb->dt_scale, buf[1], ch), b = px_nn_load(jb->dt_b, buf[2], ch);
        double sum = 0, sq = 0;
        if (jb->dtype == PX_NN_F32) { /* the common case, without conversions */
            const float *xr = (const float *)buf[0] + off;
            float *yr = (float *)buf[3] + off;
            for (int64_t j = 0; j < inner; j++) sum += xr[j];
            double mean = sum / (double)inner;
            for (int64_t j = 0; j < inner; j++) sq += (xr[j] - mean) * (xr[j] - mean);
            double a = s / sqrt(sq / (double)inner + jb->eps);
            for (int64_t j = 0; j < inner; j++) yr[j] = (float)((xr[j] - mean) * a + b);
            continue;
        }
        for (int64_t j = 0; j < inner; j++) sum += px_nn_load(jb->dtype, buf[0], off + j);
        double mean = sum / (double)inner;
        for (int64_t j = 0; j < inner; j++) {
            double dv = px_nn_load(jb->dtype, buf[0], off + j) - mean;
            sq += dv * dv;
        }
        double a = s / sqrt(sq / (double)inner + jb->eps);
        for (int64_t j = 0; j < inner; j++)
            px_nn_store(jb->dtype, buf[3], off + j,
                        (px_nn_load(jb->dtype, buf[0], off + j) - mean) * a + b);
    }
}

/* Y = (X - mean) / sqrt(var + epsilon) * scale[c] + B[c], mean and
 * (biased) var over the spatial dims of each (n, c).
 * buf: X, scale, B, Y (Y has X's dtype and shape).
 * p:   tensor X (rank >= 3), dtype scale, dtype B, epsilon (f64). */
void px_k_instancenorm(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt x = px_kp_tensor(&c);
    int dt_scale = (int)px_kp_i64(&c), dt_b = (int)px_kp_i64(&c);
    double eps = px_kp_f64(&c);
    int64_t inner = 1;
    for (int i = 2; i < x.rank; i++) inner *= x.dims[i];
    int64_t rows = x.dims[0] * x.dims[1];
    if (rows == 0 || inner == 0) return;
    instancenorm_job job = {buf, x.dtype, dt_scale, dt_b, x.dims[1], inner, eps};
    px_parallel_for(rows, px_grain_for(3 * inner), instancenorm_rows, &job);
}
