/* Backward kernels of Conv and the pools (ai.parallax ConvGradInput,
 * ConvGradWeight, MaxPoolGrad, AveragePoolGrad; lowered in
 * compiler/codegen/lower_grad.c). All share one buf / p layout:
 * buf: dY, A (W for ConvGradInput, X for ConvGradWeight and MaxPoolGrad,
 *      NULL for AveragePoolGrad), out (dX or dW).
 * p:   tensor dY, tensor A (AveragePoolGrad: out's again), tensor out,
 *      flag (group for conv, count_include_pad for AveragePoolGrad, else 0),
 *      kernel[s], strides[s], dilations[s], pads_begin[s], pads_end[s]
 *      with s = rank(out) - 2, 1..3.
 * float32 and float64; conv products go through BLAS per (image, group). */
#include "px_kernel.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

enum { F32 = 1, F64 = 11, SP = 3 };

/* Geometry normalized to 3 spatial dims (leading dims of size 1). in: the
 * forward input's spatial dims, out: dY's. */
typedef struct wgeom {
    px_kt dy, a, o;
    int64_t flag;
    int64_t in[SP], out[SP], k[SP], st[SP], dil[SP], pad[SP], pad_end[SP];
    int64_t in_size, out_size, k_size;
} wgeom;

static wgeom read_geom(const int64_t *p) {
    px_kcur c = {p};
    wgeom g;
    g.dy = px_kp_tensor(&c);
    g.a = px_kp_tensor(&c);
    g.o = px_kp_tensor(&c);
    g.flag = px_kp_i64(&c);
    int s = g.o.rank - 2, off = SP - s;
    for (int i = 0; i < SP; i++) {
        g.in[i] = g.out[i] = g.k[i] = g.st[i] = g.dil[i] = 1;
        g.pad[i] = g.pad_end[i] = 0;
    }
    int64_t *lists[5] = {g.k, g.st, g.dil, g.pad, g.pad_end};
    for (int l = 0; l < 5; l++)
        for (int i = 0; i < s; i++) lists[l][off + i] = px_kp_i64(&c);
    return g;
}

static void set_sizes(wgeom *g, const px_kt *x) {
    int s = x->rank - 2, off = SP - s;
    for (int i = 0; i < s; i++) {
        g->in[off + i] = x->dims[2 + i];
        g->out[off + i] = g->dy.dims[2 + i];
    }
    g->in_size = g->in[0] * g->in[1] * g->in[2];
    g->out_size = g->out[0] * g->out[1] * g->out[2];
    g->k_size = g->k[0] * g->k[1] * g->k[2];
}

/* Input position of output o and tap k on axis i (may fall in the padding). */
static inline int64_t pos(const wgeom *g, int i, int64_t o, int64_t k) {
    return o * g->st[i] - g->pad[i] + k * g->dil[i];
}

/* IM2COL: col[(c, k0, k1, k2), (o0, o1, o2)] = x[c, pos...] or 0 in the padding.
 * COL2IM: x[c, pos...] += col[...] for the positions inside x. */
#define IM2COL(NAME, T, GATHER)                                                                    \
    static void NAME(const wgeom *g, int64_t channels, T *x, T *col) {                             \
        for (int64_t c = 0; c < channels; c++)                                                     \
            for (int64_t k0 = 0; k0 < g->k[0]; k0++)                                               \
                for (int64_t k1 = 0; k1 < g->k[1]; k1++)                                           \
                    for (int64_t k2 = 0; k2 < g->k[2]; k2++)                                       \
                        for (int64_t o0 = 0; o0 < g->out[0]; o0++) {                               \
                            int64_t i0 = pos(g, 0, o0, k0);                                        \
                            for (int64_t o1 = 0; o1 < g->out[1]; o1++) {                           \
                                int64_t i1 = pos(g, 1, o1, k1);                                    \
                                int inside = i0 >= 0 && i0 < g->in[0] && i1 >= 0 && i1 < g->in[1]; \
                                T *xr = x + c * g->in_size + (i0 * g->in[1] + i1) * g->in[2];      \
                                for (int64_t o2 = 0; o2 < g->out[2]; o2++, col++) {                \
                                    int64_t i2 = pos(g, 2, o2, k2);                                \
                                    int in2 = inside && i2 >= 0 && i2 < g->in[2];                  \
                                    GATHER;                                                        \
                                }                                                                  \
                            }                                                                      \
                        }                                                                          \
    }
IM2COL(im2col_f32, float, *col = in2 ? xr[i2] : 0.0f)
IM2COL(im2col_f64, double, *col = in2 ? xr[i2] : 0.0)
IM2COL(col2im_f32, float, if (in2) xr[i2] += *col)
IM2COL(col2im_f64, double, if (in2) xr[i2] += *col)

/* Per image n and group q, with Cg = C/group, Mg = M/group, K = Cg*k_size,
 * P = out_size: dX_q += col2im(W_q^T [K x Mg] . dY_q [Mg x P]) and
 * dW_q [Mg x K] += dY_q . im2col(X_q)^T. */
#define CONV_GRAD(SUF, T, GEMM)                                                                    \
    static void conv_grad_input_##SUF(const wgeom *g, const T *dy, const T *w, T *dx) {            \
        int64_t N = g->o.dims[0], C = g->o.dims[1], M = g->a.dims[0], grp = g->flag;               \
        int64_t Cg = C / grp, Mg = M / grp, K = Cg * g->k_size, P = g->out_size;                   \
        T *col = malloc((size_t)(K * P > 0 ? K * P : 1) * sizeof(T));                              \
        if (!col) px_rt_fail("ConvGradInput: out of memory");                                      \
        memset(dx, 0, (size_t)g->o.numel * sizeof(T));                                             \
        for (int64_t n = 0; n < N; n++)                                                            \
            for (int64_t q = 0; q < grp; q++) {                                                    \
                GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)P, (int)Mg, 1,          \
                     w + q * Mg * K, (int)K, dy + (n * M + q * Mg) * P, (int)P, 0, col, (int)P);   \
                col2im_##SUF(g, Cg, dx + (n * C + q * Cg) * g->in_size, col);                      \
            }                                                                                      \
        free(col);                                                                                 \
    }                                                                                              \
    static void conv_grad_weight_##SUF(const wgeom *g, const T *dy, const T *x, T *dw) {           \
        int64_t N = g->a.dims[0], C = g->a.dims[1], M = g->o.dims[0], grp = g->flag;               \
        int64_t Cg = C / grp, Mg = M / grp, K = Cg * g->k_size, P = g->out_size;                   \
        T *col = malloc((size_t)(K * P > 0 ? K * P : 1) * sizeof(T));                              \
        if (!col) px_rt_fail("ConvGradWeight: out of memory");                                     \
        memset(dw, 0, (size_t)g->o.numel * sizeof(T));                                             \
        for (int64_t n = 0; n < N; n++)                                                            \
            for (int64_t q = 0; q < grp; q++) {                                                    \
                im2col_##SUF(g, Cg, (T *)x + (n * C + q * Cg) * g->in_size, col);                  \
                GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)Mg, (int)K, (int)P, 1,          \
                     dy + (n * M + q * Mg) * P, (int)P, col, (int)P, 1, dw + q * Mg * K, (int)K);  \
            }                                                                                      \
        free(col);                                                                                 \
    }
CONV_GRAD(f32, float, cblas_sgemm)
CONV_GRAD(f64, double, cblas_dgemm)

/* ConvGradInput: dX (out) from dY and W (A). */
void px_k_conv_grad_input(void *const *buf, const int64_t *p) {
    wgeom g = read_geom(p);
    set_sizes(&g, &g.o);
    if (g.o.dtype == F64)
        conv_grad_input_f64(&g, buf[0], buf[1], buf[2]);
    else if (g.o.dtype == F32)
        conv_grad_input_f32(&g, buf[0], buf[1], buf[2]);
    else
        px_rt_fail("px_k_conv_grad_input: unsupported dtype %d", g.o.dtype);
}

/* ConvGradWeight: dW (out) from dY and X (A). */
void px_k_conv_grad_weight(void *const *buf, const int64_t *p) {
    wgeom g = read_geom(p);
    set_sizes(&g, &g.a);
    if (g.o.dtype == F64)
        conv_grad_weight_f64(&g, buf[0], buf[1], buf[2]);
    else if (g.o.dtype == F32)
        conv_grad_weight_f32(&g, buf[0], buf[1], buf[2]);
    else
        px_rt_fail("px_k_conv_grad_weight: unsupported dtype %d", g.o.dtype);
}

/* Kernel taps [lo, hi) of window position o on axis i inside the input. */
static void taps(const wgeom *g, int i, int64_t o, int64_t *lo, int64_t *hi) {
    int64_t start = o * g->st[i] - g->pad[i], d = g->dil[i];
    *lo = start >= 0 ? 0 : (-start + d - 1) / d;
    *hi = g->in[i] - start > 0 ? (g->in[i] - start - 1) / d + 1 : 0;
    if (*hi > g->k[i]) *hi = g->k[i];
    if (*lo > *hi) *lo = *hi;
}

/* Taps of position o on axis i inside [-pad, in + pad_end): the
 * count_include_pad divisor (as px_k_avgpool). */
static int64_t padded_taps(const wgeom *g, int i, int64_t o) {
    int64_t n = 0;
    for (int64_t k = 0; k < g->k[i]; k++) {
        int64_t q = pos(g, i, o, k);
        n += q >= -g->pad[i] && q < g->in[i] + g->pad_end[i];
    }
    return n;
}

/* Walks every window of every (n, c) plane: BODY sees plane pointers xp /
 * dxp, the window's dY value gv, and its tap ranges l*, h*. */
#define FOR_WINDOWS(T, BODY)                                                                       \
    for (int64_t pl = 0; pl < planes; pl++) {                                                      \
        const T *xp = x ? x + pl * g.in_size : NULL;                                               \
        T *dxp = dx + pl * g.in_size;                                                              \
        const T *dyp = dy + pl * g.out_size;                                                       \
        for (int64_t o0 = 0; o0 < g.out[0]; o0++) {                                                \
            int64_t l0, h0;                                                                        \
            taps(&g, 0, o0, &l0, &h0);                                                             \
            for (int64_t o1 = 0; o1 < g.out[1]; o1++) {                                            \
                int64_t l1, h1;                                                                    \
                taps(&g, 1, o1, &l1, &h1);                                                         \
                for (int64_t o2 = 0; o2 < g.out[2]; o2++) {                                        \
                    int64_t l2, h2;                                                                \
                    taps(&g, 2, o2, &l2, &h2);                                                     \
                    T gv = *dyp++;                                                                 \
                    BODY                                                                           \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

/* The first maximum in the forward's scan order (as px_k_maxpool, ONNX and
 * PyTorch) receives the window's gradient. */
#define MAXPOOL_GRAD(NAME, T)                                                                      \
    static void NAME(wgeom g, const T *dy, const T *x, T *dx) {                                    \
        int64_t planes = g.o.dims[0] * g.o.dims[1];                                                \
        memset(dx, 0, (size_t)g.o.numel * sizeof(T));                                              \
        FOR_WINDOWS(                                                                               \
            T, int64_t best_i = -1; T best = 0;                                                    \
            for (int64_t k0 = l0; k0 < h0; k0++) for (int64_t k1 = l1; k1 < h1;                    \
                                                      k1++) for (int64_t k2 = l2; k2 < h2; k2++) { \
                int64_t i = (pos(&g, 0, o0, k0) * g.in[1] + pos(&g, 1, o1, k1)) * g.in[2] +        \
                            pos(&g, 2, o2, k2);                                                    \
                if (best_i < 0 || xp[i] > best) {                                                  \
                    best = xp[i];                                                                  \
                    best_i = i;                                                                    \
                }                                                                                  \
            } if (best_i >= 0) dxp[best_i] += gv;)                                                 \
    }
MAXPOOL_GRAD(maxpool_grad_f32, float)
MAXPOOL_GRAD(maxpool_grad_f64, double)

void px_k_maxpool_grad(void *const *buf, const int64_t *p) {
    wgeom g = read_geom(p);
    set_sizes(&g, &g.o);
    if (g.o.dtype == F64)
        maxpool_grad_f64(g, buf[0], buf[1], buf[2]);
    else if (g.o.dtype == F32)
        maxpool_grad_f32(g, buf[0], buf[1], buf[2]);
    else
        px_rt_fail("px_k_maxpool_grad: unsupported dtype %d", g.o.dtype);
}

/* Each window's dY / count is added to its taps inside X. */
#define AVGPOOL_GRAD(NAME, T)                                                                      \
    static void NAME(wgeom g, const T *dy, T *dx) {                                                \
        int64_t planes = g.o.dims[0] * g.o.dims[1];                                                \
        const T *x = NULL;                                                                         \
        memset(dx, 0, (size_t)g.o.numel * sizeof(T));                                              \
        FOR_WINDOWS(                                                                               \
            T, (void)xp;                                                                           \
            int64_t count =                                                                        \
                g.flag ? padded_taps(&g, 0, o0) * padded_taps(&g, 1, o1) * padded_taps(&g, 2, o2)  \
                       : (h0 - l0) * (h1 - l1) * (h2 - l2);                                        \
            T share = count ? (T)((double)gv / (double)count) : (T)0;                              \
            for (int64_t k0 = l0; k0 < h0; k0++) for (int64_t k1 = l1; k1 < h1;                    \
                                                      k1++) for (int64_t k2 = l2; k2 < h2; k2++)   \
                dxp[(pos(&g, 0, o0, k0) * g.in[1] + pos(&g, 1, o1, k1)) * g.in[2] +                \
                    pos(&g, 2, o2, k2)] += share;)                                                 \
    }
AVGPOOL_GRAD(avgpool_grad_f32, float)
AVGPOOL_GRAD(avgpool_grad_f64, double)

void px_k_avgpool_grad(void *const *buf, const int64_t *p) {
    wgeom g = read_geom(p);
    set_sizes(&g, &g.o);
    if (g.o.dtype == F64)
        avgpool_grad_f64(g, buf[0], buf[2]);
    else if (g.o.dtype == F32)
        avgpool_grad_f32(g, buf[0], buf[2]);
    else
        px_rt_fail("px_k_avgpool_grad: unsupported dtype %d", g.o.dtype);
}
