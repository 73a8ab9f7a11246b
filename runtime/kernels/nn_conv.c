/* Convolution (ONNX Conv, 1-3 spatial dims): im2col per (image, group)
 * followed by one BLAS GEMM; a 1x1 kernel with unit strides and no padding
 * multiplies the input directly. f16/bf16 compute in float. */
#include "nn_internal.h"

#include "conv_shift.h"
#include "conv_single.h"
#include "gemm_small.h"
#include "stash.h"
#include "thread_pool.h"

#include <cblas.h>
#include <string.h>

/* Window geometry normalized to PX_NN_SPATIAL spatial dims (leading dims of
 * size 1 added for 1-D and 2-D). */
typedef struct conv_geom {
    int64_t N, C, M, group;
    int64_t in[PX_NN_SPATIAL], k[PX_NN_SPATIAL], out[PX_NN_SPATIAL];
    int64_t stride[PX_NN_SPATIAL], dil[PX_NN_SPATIAL], pad[PX_NN_SPATIAL];
    int64_t in_size, k_size, out_size; /* products over the spatial dims */
} conv_geom;

/* Columns of one group of one image: col[(c, kd, kh, kw), (od, oh, ow)]
 * = x[c, od*s - p + kd*dil, ...] or 0 in the padding. The valid range of
 * ow is computed once per tap, and the runs are short (a feature map's
 * width), so they are plain loops rather than memcpy / memset calls; a
 * "same" convolution with unit strides copies whole shifted planes
 * (conv_shift.h). */
#define IM2COL(NAME, T, S)                                                                         \
    static void NAME(const conv_geom *g, int64_t channels, const T *x, T *col) {                   \
        const int64_t *in = g->in, *k = g->k, *out = g->out;                                       \
        int64_t O2 = out[2], s2 = g->stride[2];                                                    \
        for (int64_t c = 0; c < channels; c++)                                                     \
            for (int64_t k0 = 0; k0 < k[0]; k0++)                                                  \
                for (int64_t k1 = 0; k1 < k[1]; k1++)                                              \
                    for (int64_t k2 = 0; k2 < k[2]; k2++) {                                        \
                        const T *xc = x + c * g->in_size;                                          \
                        int64_t base = k2 * g->dil[2] - g->pad[2];                                 \
                        /* valid o2: 0 <= o2*s2 + base < in[2] */                                  \
                        int64_t lo = base >= 0 ? 0 : (-base + s2 - 1) / s2;                        \
                        int64_t hi = in[2] - base > 0 ? (in[2] - base - 1) / s2 + 1 : 0;           \
                        if (hi > O2) hi = O2;                                                      \
                        if (lo > hi) lo = hi;                                                      \
                        if (px_conv_shift_fits(g->stride[1], s2, O2, in[2])) {                     \
                            int64_t b1 = k1 * g->dil[1] - g->pad[1], l1, h1, n = out[1] * O2;      \
                            px_conv_shift_rows(b1, in[1], out[1], &l1, &h1);                       \
                            for (int64_t o0 = 0; o0 < out[0]; o0++, col += n) {                    \
                                int64_t i0 = o0 * g->stride[0] - g->pad[0] + k0 * g->dil[0];       \
                                if (i0 < 0 || i0 >= in[0])                                         \
                                    memset(col, 0, (size_t)n * sizeof(T));                         \
                                else                                                               \
                                    px_im2col_shift_##S(col, xc + i0 * in[1] * in[2], out[1], O2,  \
                                                        in[1] * in[2], b1 * in[2] + base, l1, h1,  \
                                                        lo, hi);                                   \
                            }                                                                      \
                            continue;                                                              \
                        }                                                                          \
                        for (int64_t o0 = 0; o0 < out[0]; o0++) {                                  \
                            int64_t i0 = o0 * g->stride[0] - g->pad[0] + k0 * g->dil[0];           \
                            for (int64_t o1 = 0; o1 < out[1]; o1++, col += O2) {                   \
                                int64_t i1 = o1 * g->stride[1] - g->pad[1] + k1 * g->dil[1];       \
                                if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1]) {              \
                                    for (int64_t o2 = 0; o2 < O2; o2++) col[o2] = 0;               \
                                    continue;                                                      \
                                }                                                                  \
                                const T *row = xc + (i0 * in[1] + i1) * in[2] + base;              \
                                for (int64_t o2 = 0; o2 < lo; o2++) col[o2] = 0;                   \
                                if (s2 == 1)                                                       \
                                    for (int64_t o2 = lo; o2 < hi; o2++) col[o2] = row[o2];        \
                                else                                                               \
                                    for (int64_t o2 = lo; o2 < hi; o2++) col[o2] = row[o2 * s2];   \
                                for (int64_t o2 = hi; o2 < O2; o2++) col[o2] = 0;                  \
                            }                                                                      \
                        }                                                                          \
                    }                                                                              \
    }
IM2COL(im2col_f32, float, f32)
IM2COL(im2col_f64, double, f64)

static int is_pointwise(const conv_geom *g) {
    for (int i = 0; i < PX_NN_SPATIAL; i++)
        if (g->k[i] != 1 || g->stride[i] != 1 || g->pad[i] != 0 || g->in[i] != g->out[i]) return 0;
    return 1;
}

/* y_g [mg x P] = beta * y_g + W_g [mg x rows] . col [rows x P] */
static void conv_gemm_f32(int64_t mg, int64_t P, int64_t rows, const float *w, const float *col,
                          float beta, float *y) {
    if (px_gemm_small_fits(mg, P, rows))
        px_gemm_small_f32(mg, P, rows, w, rows, 1, col, P, beta != 0, y, P);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mg, (int)P, (int)rows, 1, w,
                    (int)(rows > 0 ? rows : 1), col, (int)P, beta, y, (int)P);
}
static void conv_gemm_f64(int64_t mg, int64_t P, int64_t rows, const double *w, const double *col,
                          double beta, double *y) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mg, (int)P, (int)rows, 1, w,
                (int)(rows > 0 ? rows : 1), col, (int)P, beta, y, (int)P);
}

/* y[n, m, :] = W_g * col (+ bias) for every image and group. The (image,
 * group) pairs are split over the rank's threads: each writes its own slice
 * of y with its own im2col scratch (px_nn_scratch is per thread), so the
 * bits do not depend on the split. */
typedef struct conv_job {
    const conv_geom *g;
    const void *x, *w, *bias;
    void *y;
    void *cols; /* NULL, or the stash of every pair's columns (kept for ConvGradWeight) */
} conv_job;

#define CONV_RUN(NAME, T, IM2COL_FN, SUF)                                                          \
    static void NAME##_pairs(void *ctx, int64_t lo, int64_t hi) {                                  \
        const conv_job *j = ctx;                                                                   \
        const conv_geom *g = j->g;                                                                 \
        const T *x = j->x, *w = j->w, *bias = j->bias;                                             \
        T *y = j->y;                                                                               \
        int64_t cg = g->C / g->group, mg = g->M / g->group, rows = cg * g->k_size;                 \
        int pointwise = is_pointwise(g);                                                           \
        T *col = pointwise || j->cols                                                              \
                     ? NULL                                                                        \
                     : px_nn_scratch(3, (size_t)(rows * g->out_size) * sizeof(T));                 \
        for (int64_t t = lo; t < hi; t++) {                                                        \
            if (j->cols) col = (T *)j->cols + t * rows * g->out_size;                              \
            int64_t n = t / g->group, gr = t % g->group;                                           \
            const T *xg = x + (n * g->C + gr * cg) * g->in_size;                                   \
            T *yg = y + (n * g->M + gr * mg) * g->out_size;                                        \
            const T *wg = w + gr * mg * rows;                                                      \
            if (!pointwise) IM2COL_FN(g, cg, xg, col);                                             \
            T beta = 0;                                                                            \
            if (bias) {                                                                            \
                for (int64_t m = 0; m < mg; m++)                                                   \
                    for (int64_t i = 0; i < g->out_size; i++)                                      \
                        yg[m * g->out_size + i] = bias[gr * mg + m];                               \
                beta = 1;                                                                          \
            }                                                                                      \
            if (mg == 1) /* depthwise */                                                           \
                px_conv1_forward_##SUF(wg, pointwise ? xg : col, rows, g->out_size, beta, yg);     \
            else                                                                                   \
                conv_gemm_##SUF(mg, g->out_size, rows, wg, pointwise ? xg : col, beta, yg);        \
        }                                                                                          \
    }                                                                                              \
    static void NAME(const conv_geom *g, const T *x, const T *w, const T *bias, T *y,              \
                     void *cols) {                                                                 \
        conv_job j = {g, x, w, bias, y, is_pointwise(g) ? NULL : cols};                            \
        int64_t per_pair = (g->M / g->group) * g->out_size * (g->C / g->group) * g->k_size;        \
        px_parallel_for(g->N * g->group, px_grain_for(per_pair / 8 + 1), NAME##_pairs, &j);        \
    }
CONV_RUN(conv_f32, float, im2col_f32, f32)
CONV_RUN(conv_f64, double, im2col_f64, f64)

static px_conv_cols_key conv_cols_key(const conv_geom *g, const void *x, int dtype) {
    px_conv_cols_key k;
    memset(&k, 0, sizeof k);
    k.x = x;
    k.dtype = dtype;
    k.N = g->N;
    k.C = g->C;
    k.group = g->group;
    for (int i = 0; i < PX_NN_SPATIAL; i++) {
        k.in[i] = g->in[i];
        k.out[i] = g->out[i];
        k.k[i] = g->k[i];
        k.stride[i] = g->stride[i];
        k.dil[i] = g->dil[i];
        k.pad[i] = g->pad[i];
    }
    return k;
}

/* Y = Conv(X, W) + B.
 * buf: X [N,C,spatial...], W [M, C/group, kernel...], B [M] (NULL if absent), Y [N,M,out...].
 * p:   tensor X, tensor W, tensor B (dtype 0, rank 0 if absent), tensor Y, group,
 *      strides[s], dilations[s], pads_begin[s] (s = spatial rank, 1..3),
 *      keep_cols (1: a ConvGradWeight of X follows; float and double calls
 *      leave their im2col columns in a stash for it, stash.h). The end pads
 *      are implied by Y's shape; positions outside X read as 0.
 * dtypes: f32, f64, f16, bf16 (one for all tensors). */
void px_k_conv(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt x = px_kp_tensor(&c), w = px_kp_tensor(&c), b = px_kp_tensor(&c), y = px_kp_tensor(&c);
    (void)b;
    conv_geom g;
    int s = x.rank - 2, off = PX_NN_SPATIAL - s;
    g.N = x.dims[0];
    g.C = x.dims[1];
    g.M = w.dims[0];
    g.group = px_kp_i64(&c);
    for (int i = 0; i < PX_NN_SPATIAL; i++) {
        g.in[i] = g.k[i] = g.out[i] = g.stride[i] = g.dil[i] = 1;
        g.pad[i] = 0;
    }
    for (int i = 0; i < s; i++) {
        g.in[off + i] = x.dims[2 + i];
        g.k[off + i] = w.dims[2 + i];
        g.out[off + i] = y.dims[2 + i];
    }
    for (int i = 0; i < s; i++) g.stride[off + i] = px_kp_i64(&c);
    for (int i = 0; i < s; i++) g.dil[off + i] = px_kp_i64(&c);
    for (int i = 0; i < s; i++) g.pad[off + i] = px_kp_i64(&c);
    g.in_size = g.in[0] * g.in[1] * g.in[2];
    g.k_size = g.k[0] * g.k[1] * g.k[2];
    g.out_size = g.out[0] * g.out[1] * g.out[2];
    int keep_cols = px_kp_i64(&c) != 0;
    if (y.numel == 0) return;
    void *cols = NULL;
    if (keep_cols && (x.dtype == PX_NN_F32 || x.dtype == PX_NN_F64) && !is_pointwise(&g)) {
        px_conv_cols_key k = conv_cols_key(&g, buf[0], x.dtype);
        size_t es = x.dtype == PX_NN_F64 ? sizeof(double) : sizeof(float);
        size_t n = (size_t)(g.N * g.C * g.k_size) * (size_t)g.out_size;
        cols = px_stash_begin(&k, sizeof k, buf[0], n * es);
    }
    switch (x.dtype) {
    case PX_NN_F32: conv_f32(&g, buf[0], buf[1], buf[2], buf[3], cols); return;
    case PX_NN_F64: conv_f64(&g, buf[0], buf[1], buf[2], buf[3], cols); return;
    case PX_NN_F16:
    case PX_NN_BF16: {
        float *fx = px_nn_scratch(0, (size_t)x.numel * sizeof(float));
        float *fw = px_nn_scratch(1, (size_t)(w.numel + g.M) * sizeof(float));
        float *fy = px_nn_scratch(2, (size_t)y.numel * sizeof(float));
        px_nn_half_to_f32(x.dtype, buf[0], fx, x.numel);
        px_nn_half_to_f32(x.dtype, buf[1], fw, w.numel);
        float *fb = NULL;
        if (buf[2]) {
            fb = fw + w.numel;
            px_nn_half_to_f32(x.dtype, buf[2], fb, g.M);
        }
        conv_f32(&g, fx, fw, fb, fy, NULL);
        px_nn_f32_to_half(x.dtype, fy, buf[3], y.numel);
        return;
    }
    default: px_rt_fail("px_k_conv: unsupported dtype %d", x.dtype);
    }
}
