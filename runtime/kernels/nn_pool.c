/* Pooling: MaxPool (with optional Indices), AveragePool, GlobalAveragePool,
 * GlobalMaxPool. Windows are clamped to the input, so any output size the
 * compiler computed (ceil_mode, SAME padding) is safe to evaluate. */
#include "nn_internal.h"

#include "thread_pool.h"

#include <float.h>
#include <math.h>

/* Window geometry normalized to PX_NN_SPATIAL spatial dims. */
typedef struct pool_geom {
    int64_t planes; /* N * C */
    int64_t in[PX_NN_SPATIAL], k[PX_NN_SPATIAL], out[PX_NN_SPATIAL];
    int64_t stride[PX_NN_SPATIAL], dil[PX_NN_SPATIAL], pad[PX_NN_SPATIAL], pad_end[PX_NN_SPATIAL];
    int64_t in_size, out_size;
} pool_geom;

/* Reads tensor X, tensor Y, then kernel/strides/dilations/pads_begin[/pads_end]. */
static void read_geom(px_kcur *c, pool_geom *g, int with_pad_end, px_kt *x, px_kt *y) {
    *x = px_kp_tensor(c);
    *y = px_kp_tensor(c);
    int s = x->rank - 2, off = PX_NN_SPATIAL - s;
    for (int i = 0; i < PX_NN_SPATIAL; i++) {
        g->in[i] = g->k[i] = g->out[i] = g->stride[i] = g->dil[i] = 1;
        g->pad[i] = g->pad_end[i] = 0;
    }
    g->planes = x->dims[0] * x->dims[1];
    for (int i = 0; i < s; i++) {
        g->in[off + i] = x->dims[2 + i];
        g->out[off + i] = y->dims[2 + i];
    }
    for (int i = 0; i < s; i++) g->k[off + i] = px_kp_i64(c);
    for (int i = 0; i < s; i++) g->stride[off + i] = px_kp_i64(c);
    for (int i = 0; i < s; i++) g->dil[off + i] = px_kp_i64(c);
    for (int i = 0; i < s; i++) g->pad[off + i] = px_kp_i64(c);
    if (with_pad_end)
        for (int i = 0; i < s; i++) g->pad_end[off + i] = px_kp_i64(c);
    g->in_size = g->in[0] * g->in[1] * g->in[2];
    g->out_size = g->out[0] * g->out[1] * g->out[2];
}

/* Kernel taps [lo, hi) of window position o on axis i that land inside the input. */
static void taps(const pool_geom *g, int i, int64_t o, int64_t *lo, int64_t *hi) {
    int64_t start = o * g->stride[i] - g->pad[i], d = g->dil[i];
    *lo = start >= 0 ? 0 : (-start + d - 1) / d;
    *hi = g->in[i] - start > 0 ? (g->in[i] - start - 1) / d + 1 : 0;
    if (*hi > g->k[i]) *hi = g->k[i];
    if (*lo > *hi) *lo = *hi;
}

/* A pool split over the (n, c) planes: each output plane reads only its
 * own input plane, so any split gives the same bits. */
typedef struct pool_job {
    const pool_geom *g;
    const void *x;
    void *y;
    int64_t *idx;
    int flag; /* MaxPool: column-major indices; AveragePool: count_include_pad */
} pool_job;

static void run_planes(const pool_geom *g, px_range_fn fn, pool_job *j) {
    int64_t window = g->k[0] * g->k[1] * g->k[2];
    px_parallel_for(g->planes, px_grain_for(g->out_size * window + g->in_size), fn, j);
}

/* Max over each window; idx (if not NULL) gets the flat input index of the
 * first maximum: row-major over (n, c, spatial) for storage_order 0, and for
 * storage_order 1 the spatial offset is column-major (as onnxruntime does). */
#define MAXPOOL(NAME, T, ACC, LOAD, STORE, LOWEST)                                                 \
    static void NAME##_planes(void *ctx, int64_t plo, int64_t phi) {                               \
        const pool_job *j = ctx;                                                                   \
        const pool_geom *g = j->g;                                                                 \
        const T *x = j->x;                                                                         \
        T *y = (T *)j->y + plo * g->out_size;                                                      \
        int64_t *idx = j->idx ? j->idx + plo * g->out_size : NULL;                                 \
        int col_major = j->flag;                                                                   \
        for (int64_t pl = plo; pl < phi; pl++) {                                                   \
            const T *xp = x + pl * g->in_size;                                                     \
            for (int64_t o0 = 0; o0 < g->out[0]; o0++) {                                           \
                int64_t l0, h0;                                                                    \
                taps(g, 0, o0, &l0, &h0);                                                          \
                for (int64_t o1 = 0; o1 < g->out[1]; o1++) {                                       \
                    int64_t l1, h1;                                                                \
                    taps(g, 1, o1, &l1, &h1);                                                      \
                    for (int64_t o2 = 0; o2 < g->out[2]; o2++) {                                   \
                        int64_t l2, h2;                                                            \
                        taps(g, 2, o2, &l2, &h2);                                                  \
                        ACC best = LOWEST;                                                         \
                        if (!idx) {                                                                \
                            /* No Indices: the max alone, with selects (which tap wins is          \
                             * data dependent, and mispredicted branches dominated). Same          \
                             * result as below: the first tap, then strictly greater ones. */      \
                            if (l0 < h0 && l1 < h1 && l2 < h2) {                                   \
                                int64_t f0 = o0 * g->stride[0] - g->pad[0] + l0 * g->dil[0];       \
                                int64_t f1 = o1 * g->stride[1] - g->pad[1] + l1 * g->dil[1];       \
                                int64_t f2 = o2 * g->stride[2] - g->pad[2] + l2 * g->dil[2];       \
                                best = LOAD(xp[(f0 * g->in[1] + f1) * g->in[2] + f2]);             \
                                for (int64_t k0 = l0; k0 < h0; k0++) {                             \
                                    int64_t i0 = o0 * g->stride[0] - g->pad[0] + k0 * g->dil[0];   \
                                    for (int64_t k1 = l1; k1 < h1; k1++) {                         \
                                        int64_t i1 =                                               \
                                            o1 * g->stride[1] - g->pad[1] + k1 * g->dil[1];        \
                                        const T *row = xp + (i0 * g->in[1] + i1) * g->in[2];       \
                                        for (int64_t k2 = l2; k2 < h2; k2++) {                     \
                                            ACC v = LOAD(row[o2 * g->stride[2] - g->pad[2] +       \
                                                             k2 * g->dil[2]]);                     \
                                            best = v > best ? v : best;                            \
                                        }                                                          \
                                    }                                                              \
                                }                                                                  \
                            }                                                                      \
                            *y++ = STORE(best);                                                    \
                            continue;                                                              \
                        }                                                                          \
                        int64_t bi0 = -1, bi1 = -1, bi2 = -1;                                      \
                        for (int64_t k0 = l0; k0 < h0; k0++) {                                     \
                            int64_t i0 = o0 * g->stride[0] - g->pad[0] + k0 * g->dil[0];           \
                            for (int64_t k1 = l1; k1 < h1; k1++) {                                 \
                                int64_t i1 = o1 * g->stride[1] - g->pad[1] + k1 * g->dil[1];       \
                                const T *row = xp + (i0 * g->in[1] + i1) * g->in[2];               \
                                for (int64_t k2 = l2; k2 < h2; k2++) {                             \
                                    int64_t i2 = o2 * g->stride[2] - g->pad[2] + k2 * g->dil[2];   \
                                    ACC v = LOAD(row[i2]);                                         \
                                    if (v > best || bi0 < 0) {                                     \
                                        best = v;                                                  \
                                        bi0 = i0;                                                  \
                                        bi1 = i1;                                                  \
                                        bi2 = i2;                                                  \
                                    }                                                              \
                                }                                                                  \
                            }                                                                      \
                        }                                                                          \
                        *y++ = STORE(best);                                                        \
                        if (idx) {                                                                 \
                            int64_t sp;                                                            \
                            if (bi0 < 0)                                                           \
                                sp = -1;                                                           \
                            else if (col_major)                                                    \
                                sp = bi0 + bi1 * g->in[0] + bi2 * g->in[0] * g->in[1];             \
                            else                                                                   \
                                sp = (bi0 * g->in[1] + bi1) * g->in[2] + bi2;                      \
                            *idx++ = sp < 0 ? -1 : pl * g->in_size + sp;                           \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void NAME(const pool_geom *g, const T *x, T *y, int64_t *idx, int col_major) {          \
        pool_job j = {g, x, y, idx, col_major};                                                    \
        run_planes(g, NAME##_planes, &j);                                                          \
    }
#define ID(v) (v)
#define F16_LOAD(v) px_nn_f16_to_f32(v)
#define F16_STORE(v) px_nn_f32_to_f16(v)
#define BF16_LOAD(v) px_nn_bf16_to_f32(v)
#define BF16_STORE(v) px_nn_f32_to_bf16(v)
MAXPOOL(maxpool_f32, float, float, ID, ID, -INFINITY)
MAXPOOL(maxpool_f64, double, double, ID, ID, -INFINITY)
MAXPOOL(maxpool_f16, uint16_t, float, F16_LOAD, F16_STORE, -INFINITY)
MAXPOOL(maxpool_bf16, uint16_t, float, BF16_LOAD, BF16_STORE, -INFINITY)
MAXPOOL(maxpool_i8, int8_t, int8_t, ID, ID, INT8_MIN)
MAXPOOL(maxpool_u8, uint8_t, uint8_t, ID, ID, 0)

/* The common MaxPool 2 (2x2 windows, stride 2, no padding or dilation, 2-D
 * planes, also stacked along a third axis): no window leaves the input, so no tap
 * tables; the first tap, then strictly greater ones, as in the loops above. */
static int is_pool2(const pool_geom *g) {
    if (g->k[0] != 1 || g->stride[0] != 1 || g->pad[0] != 0 || g->in[0] != g->out[0]) return 0;
    for (int i = 1; i < PX_NN_SPATIAL; i++)
        if (g->k[i] != 2 || g->stride[i] != 2 || g->dil[i] != 1 || g->pad[i] != 0 ||
            2 * g->out[i] > g->in[i])
            return 0;
    return 1;
}

#define MAXPOOL2(NAME, T)                                                                          \
    static void NAME(void *ctx, int64_t plo, int64_t phi) {                                        \
        const pool_job *j = ctx;                                                                   \
        const pool_geom *g = j->g;                                                                 \
        int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2];                        \
        for (int64_t pl = plo; pl < phi; pl++)                                                     \
            for (int64_t d = 0; d < g->in[0]; d++) {                                               \
                const T *xp = (const T *)j->x + pl * g->in_size + d * H * W;                       \
                T *yp = (T *)j->y + pl * g->out_size + d * OH * OW;                                \
                for (int64_t o1 = 0; o1 < OH; o1++) {                                              \
                    const T *r0 = xp + 2 * o1 * W, *r1 = r0 + W;                                   \
                    T *yr = yp + o1 * OW;                                                          \
                    for (int64_t o2 = 0; o2 < OW; o2++) {                                          \
                        T best = r0[2 * o2], b = r0[2 * o2 + 1], c = r1[2 * o2],                   \
                          e = r1[2 * o2 + 1];                                                      \
                        best = b > best ? b : best;                                                \
                        best = c > best ? c : best;                                                \
                        yr[o2] = e > best ? e : best;                                              \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
    }
MAXPOOL2(maxpool2_f32, float)
MAXPOOL2(maxpool2_f64, double)

/* Max over each window (ONNX MaxPool).
 * buf: X [N,C,spatial...], Y [N,C,out...], Indices (int64, like Y; NULL if absent).
 * p:   tensor X, tensor Y, kernel[s], strides[s], dilations[s], pads_begin[s],
 *      storage_order (s = spatial rank, 1..3).
 * dtypes: f32 f64 f16 bf16 i8 u8. */
void px_k_maxpool(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    pool_geom g;
    px_kt x, y;
    read_geom(&c, &g, 0, &x, &y);
    int col_major = px_kp_i64(&c) != 0;
    int64_t *idx = buf[2];
    if (!idx && is_pool2(&g) && (x.dtype == PX_NN_F32 || x.dtype == PX_NN_F64)) {
        pool_job j = {&g, buf[0], buf[1], NULL, 0};
        run_planes(&g, x.dtype == PX_NN_F32 ? maxpool2_f32 : maxpool2_f64, &j);
        return;
    }
    switch (x.dtype) {
    case PX_NN_F32: maxpool_f32(&g, buf[0], buf[1], idx, col_major); return;
    case PX_NN_F64: maxpool_f64(&g, buf[0], buf[1], idx, col_major); return;
    case PX_NN_F16: maxpool_f16(&g, buf[0], buf[1], idx, col_major); return;
    case PX_NN_BF16: maxpool_bf16(&g, buf[0], buf[1], idx, col_major); return;
    case PX_NN_I8: maxpool_i8(&g, buf[0], buf[1], idx, col_major); return;
    case PX_NN_U8: maxpool_u8(&g, buf[0], buf[1], idx, col_major); return;
    default: px_rt_fail("px_k_maxpool: unsupported dtype %d", x.dtype);
    }
}

/* Number of taps of window position o on axis i inside the padded input
 * [-pad, in + pad_end): the divisor with count_include_pad. */
static int64_t padded_taps(const pool_geom *g, int i, int64_t o) {
    int64_t n = 0;
    for (int64_t k = 0; k < g->k[i]; k++) {
        int64_t pos = o * g->stride[i] - g->pad[i] + k * g->dil[i];
        n += pos >= -g->pad[i] && pos < g->in[i] + g->pad_end[i];
    }
    return n;
}

#define AVGPOOL(NAME, T, LOAD, STORE)                                                              \
    static void NAME##_planes(void *ctx, int64_t plo, int64_t phi) {                               \
        const pool_job *j = ctx;                                                                   \
        const pool_geom *g = j->g;                                                                 \
        const T *x = j->x;                                                                         \
        T *y = (T *)j->y + plo * g->out_size;                                                      \
        int include_pad = j->flag;                                                                 \
        for (int64_t pl = plo; pl < phi; pl++) {                                                   \
            const T *xp = x + pl * g->in_size;                                                     \
            for (int64_t o0 = 0; o0 < g->out[0]; o0++) {                                           \
                int64_t l0, h0;                                                                    \
                taps(g, 0, o0, &l0, &h0);                                                          \
                for (int64_t o1 = 0; o1 < g->out[1]; o1++) {                                       \
                    int64_t l1, h1;                                                                \
                    taps(g, 1, o1, &l1, &h1);                                                      \
                    for (int64_t o2 = 0; o2 < g->out[2]; o2++) {                                   \
                        int64_t l2, h2;                                                            \
                        taps(g, 2, o2, &l2, &h2);                                                  \
                        double sum = 0;                                                            \
                        for (int64_t k0 = l0; k0 < h0; k0++) {                                     \
                            int64_t i0 = o0 * g->stride[0] - g->pad[0] + k0 * g->dil[0];           \
                            for (int64_t k1 = l1; k1 < h1; k1++) {                                 \
                                int64_t i1 = o1 * g->stride[1] - g->pad[1] + k1 * g->dil[1];       \
                                const T *row = xp + (i0 * g->in[1] + i1) * g->in[2];               \
                                for (int64_t k2 = l2; k2 < h2; k2++)                               \
                                    sum +=                                                         \
                                        LOAD(row[o2 * g->stride[2] - g->pad[2] + k2 * g->dil[2]]); \
                            }                                                                      \
                        }                                                                          \
                        int64_t count = include_pad                                                \
                                            ? padded_taps(g, 0, o0) * padded_taps(g, 1, o1) *      \
                                                  padded_taps(g, 2, o2)                            \
                                            : (h0 - l0) * (h1 - l1) * (h2 - l2);                   \
                        *y++ = STORE(sum / (double)count);                                         \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void NAME(const pool_geom *g, const T *x, T *y, int include_pad) {                      \
        pool_job j = {g, x, y, NULL, include_pad};                                                 \
        run_planes(g, NAME##_planes, &j);                                                          \
    }
#define F16_STORE_D(v) px_nn_f32_to_f16((float)(v))
#define BF16_STORE_D(v) px_nn_f32_to_bf16((float)(v))
#define F32_STORE_D(v) ((float)(v))
AVGPOOL(avgpool_f32, float, ID, F32_STORE_D)
AVGPOOL(avgpool_f64, double, ID, ID)
AVGPOOL(avgpool_f16, uint16_t, F16_LOAD, F16_STORE_D)
AVGPOOL(avgpool_bf16, uint16_t, BF16_LOAD, BF16_STORE_D)

/* Mean over each window (ONNX AveragePool). The divisor counts the taps
 * inside X, or with count_include_pad the taps inside the padded input (taps
 * past the end padding, possible with ceil_mode, never count).
 * buf: X [N,C,spatial...], Y [N,C,out...].
 * p:   tensor X, tensor Y, kernel[s], strides[s], dilations[s], pads_begin[s],
 *      pads_end[s], count_include_pad (s = spatial rank, 1..3).
 * dtypes: f32 f64 f16 bf16. */
void px_k_avgpool(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    pool_geom g;
    px_kt x, y;
    read_geom(&c, &g, 1, &x, &y);
    int include_pad = px_kp_i64(&c) != 0;
    switch (x.dtype) {
    case PX_NN_F32: avgpool_f32(&g, buf[0], buf[1], include_pad); return;
    case PX_NN_F64: avgpool_f64(&g, buf[0], buf[1], include_pad); return;
    case PX_NN_F16: avgpool_f16(&g, buf[0], buf[1], include_pad); return;
    case PX_NN_BF16: avgpool_bf16(&g, buf[0], buf[1], include_pad); return;
    default: px_rt_fail("px_k_avgpool: unsupported dtype %d", x.dtype);
    }
}

/* Mean over all spatial positions of each (n, c).
 * buf: X [N,C,spatial...], Y [N,C,1...].
 * p:   tensor X, tensor Y.   dtypes: f32 f64 f16 bf16. */
void px_k_global_avgpool(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt x = px_kp_tensor(&c), y = px_kp_tensor(&c);
    int64_t planes = y.numel, inner = planes ? x.numel / planes : 0;
    if (x.dtype == PX_NN_F32) {
        const float *xp = buf[0];
        float *yp = buf[1];
        for (int64_t pl = 0; pl < planes; pl++) {
            double sum = 0;
            for (int64_t i = 0; i < inner; i++) sum += xp[pl * inner + i];
            yp[pl] = (float)(sum / (double)inner);
        }
        return;
    }
    for (int64_t pl = 0; pl < planes; pl++) {
        double sum = 0;
        for (int64_t i = 0; i < inner; i++) sum += px_nn_load(x.dtype, buf[0], pl * inner + i);
        px_nn_store(x.dtype, buf[1], pl, sum / (double)inner);
    }
}

/* Max over all spatial positions of each (n, c).
 * buf: X [N,C,spatial...], Y [N,C,1...].
 * p:   tensor X, tensor Y.   dtypes: f32 f64 f16 bf16. */
void px_k_global_maxpool(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt x = px_kp_tensor(&c), y = px_kp_tensor(&c);
    int64_t planes = y.numel, inner = planes ? x.numel / planes : 0;
    if (x.dtype == PX_NN_F32) {
        const float *xp = buf[0];
        float *yp = buf[1];
        for (int64_t pl = 0; pl < planes; pl++) {
            float best = -INFINITY;
            for (int64_t i = 0; i < inner; i++)
                if (xp[pl * inner + i] > best || i == 0) best = xp[pl * inner + i];
            yp[pl] = best;
        }
        return;
    }
    for (int64_t pl = 0; pl < planes; pl++) {
        double best = -INFINITY;
        for (int64_t i = 0; i < inner; i++) {
            double v = px_nn_load(x.dtype, buf[0], pl * inner + i);
            if (v > best || i == 0) best = v;
        }
        px_nn_store(x.dtype, buf[1], pl, best);
    }
}
