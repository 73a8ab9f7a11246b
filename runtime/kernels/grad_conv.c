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
#include "nn_internal.h"
#include "rnn_math.h"

#include "conv_shift.h"
#include "conv_single.h"
#include "gemm_small.h"
#include "stash.h"
#include "thread_pool.h"

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

/* Outputs [lo, hi) on axis i whose tap k lands inside the input, i.e.
 * 0 <= o * st + k * dil - pad < in. */
static inline void valid_outputs(const wgeom *g, int i, int64_t k, int64_t *lo, int64_t *hi) {
    int64_t base = k * g->dil[i] - g->pad[i], s = g->st[i];
    int64_t l = base >= 0 ? 0 : (-base + s - 1) / s;
    int64_t h = g->in[i] - base > 0 ? (g->in[i] - base - 1) / s + 1 : 0;
    if (h > g->out[i]) h = g->out[i];
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* IM2COL: col[(c, k0, k1, k2), (o0, o1, o2)] = x[c, pos...] or 0 in the padding.
 * COL2IM: x[c, pos...] += col[...] for the positions inside x.
 * Row (c, k0, k1, k2) of col starts at cols + row * ld (ld >= out_size).
 * The valid output ranges are computed once per tap, so the innermost loop
 * is a plain (strided) copy or add without bounds tests. */
#define COL_WALK(NAME, T, XCONST, OUTSIDE_ROWS, OUTSIDE_ELEMS, INSIDE, INSIDE_UNIT)                \
    static void NAME(const wgeom *g, int64_t channels, XCONST T *x, T *cols, int64_t ld) {         \
        int64_t O1 = g->out[1], O2 = g->out[2], tap = 0;                                           \
        for (int64_t c = 0; c < channels; c++)                                                     \
            for (int64_t k0 = 0; k0 < g->k[0]; k0++)                                               \
                for (int64_t k1 = 0; k1 < g->k[1]; k1++)                                           \
                    for (int64_t k2 = 0; k2 < g->k[2]; k2++) {                                     \
                        T *col = cols + tap++ * ld;                                                \
                        int64_t l0, h0, l1, h1, l2, h2;                                            \
                        valid_outputs(g, 0, k0, &l0, &h0);                                         \
                        valid_outputs(g, 1, k1, &l1, &h1);                                         \
                        valid_outputs(g, 2, k2, &l2, &h2);                                         \
                        int64_t s2 = g->st[2], b2 = k2 * g->dil[2] - g->pad[2];                    \
                        XCONST T *xc = x + c * g->in_size;                                         \
                        for (int64_t o0 = 0; o0 < g->out[0]; o0++) {                               \
                            if (o0 < l0 || o0 >= h0) {                                             \
                                int64_t n = O1 * O2;                                               \
                                OUTSIDE_ROWS;                                                      \
                                col += n;                                                          \
                                continue;                                                          \
                            }                                                                      \
                            int64_t i0 = pos(g, 0, o0, k0);                                        \
                            for (int64_t o1 = 0; o1 < O1; o1++, col += O2) {                       \
                                if (o1 < l1 || o1 >= h1) {                                         \
                                    int64_t n = O2;                                                \
                                    OUTSIDE_ROWS;                                                  \
                                    continue;                                                      \
                                }                                                                  \
                                int64_t i1 = pos(g, 1, o1, k1);                                    \
                                XCONST T *xr = xc + (i0 * g->in[1] + i1) * g->in[2];               \
                                OUTSIDE_ELEMS;                                                     \
                                if (s2 == 1) {                                                     \
                                    for (int64_t o2 = l2; o2 < h2; o2++) INSIDE_UNIT;              \
                                } else {                                                           \
                                    for (int64_t o2 = l2; o2 < h2; o2++) INSIDE;                   \
                                }                                                                  \
                            }                                                                      \
                        }                                                                          \
                    }                                                                              \
    }
#define ZERO_ROWS memset(col, 0, (size_t)n * sizeof(*col))
#define ZERO_EDGES                                                                                 \
    do {                                                                                           \
        for (int64_t o2 = 0; o2 < l2; o2++) col[o2] = 0;                                           \
        for (int64_t o2 = h2; o2 < O2; o2++) col[o2] = 0;                                          \
    } while (0)
COL_WALK(im2col_f32, float, const, ZERO_ROWS, ZERO_EDGES, col[o2] = xr[o2 * s2 + b2],
         col[o2] = xr[o2 + b2])
COL_WALK(im2col_f64, double, const, ZERO_ROWS, ZERO_EDGES, col[o2] = xr[o2 * s2 + b2],
         col[o2] = xr[o2 + b2])
COL_WALK(col2im_f32, float, , (void)n, (void)0, xr[o2 * s2 + b2] += col[o2], xr[o2 + b2] += col[o2])
COL_WALK(col2im_f64, double, , (void)n, (void)0, xr[o2 * s2 + b2] += col[o2],
         xr[o2 + b2] += col[o2])

/* col2im through shifted planes (conv_shift.h) when the geometry allows:
 * the same sums in the same tap order, whole planes at a time. */
#define COL2IM_FAST(SUF, T)                                                                        \
    static void col2im_fast_##SUF(const wgeom *g, int64_t channels, T *x, T *cols, int64_t ld) {   \
        if (!px_conv_shift_fits(g->st[1], g->st[2], g->out[2], g->in[2])) {                        \
            col2im_##SUF(g, channels, x, cols, ld);                                                \
            return;                                                                                \
        }                                                                                          \
        int64_t O1 = g->out[1], O2 = g->out[2], n = O1 * O2, plane = g->in[1] * g->in[2], tap = 0; \
        for (int64_t c = 0; c < channels; c++)                                                     \
            for (int64_t k0 = 0; k0 < g->k[0]; k0++)                                               \
                for (int64_t k1 = 0; k1 < g->k[1]; k1++)                                           \
                    for (int64_t k2 = 0; k2 < g->k[2]; k2++) {                                     \
                        T *col = cols + tap++ * ld, *xc = x + c * g->in_size;                      \
                        int64_t l1, h1, l2, h2, b1 = k1 * g->dil[1] - g->pad[1];                   \
                        int64_t shift = b1 * g->in[2] + k2 * g->dil[2] - g->pad[2];                \
                        valid_outputs(g, 2, k2, &l2, &h2);                                         \
                        px_conv_shift_rows(b1, g->in[1], O1, &l1, &h1);                            \
                        for (int64_t o0 = 0; o0 < g->out[0]; o0++) {                               \
                            int64_t i0 = pos(g, 0, o0, k0);                                        \
                            if (i0 >= 0 && i0 < g->in[0])                                          \
                                px_col2im_shift_##SUF(xc + i0 * plane, col + o0 * n, O2, plane,    \
                                                      shift, l1, h1, l2, h2);                      \
                        }                                                                          \
                    }                                                                              \
    }
COL2IM_FAST(f32, float)
COL2IM_FAST(f64, double)

/* A 1x1 kernel with unit strides and no padding: the columns are X itself. */
static int is_pointwise(const wgeom *g) {
    for (int i = 0; i < SP; i++)
        if (g->k[i] != 1 || g->st[i] != 1 || g->pad[i] != 0 || g->in[i] != g->out[i]) return 0;
    return 1;
}

/* Per image n and group q, with Cg = C/group, Mg = M/group, K = Cg*k_size,
 * P = out_size: dX_q = col2im(W_q^T [K x Mg] . dY_q [Mg x P]) and
 * dW_q [Mg x K] += dY_q . im2col(X_q)^T. The column buffer is the kernels'
 * per-thread scratch, so steady-state steps do not allocate. */
typedef struct grad_input_job {
    const wgeom *g;
    const void *dy, *w;
    void *dx;
} grad_input_job;

/* ConvGradWeight sums over the images. The images are cut into a number of
 * chunks fixed by the shapes alone (never by the thread count): each chunk's
 * sum, in image order, is one job, and dW = chunk 0 + chunk 1 + ... in
 * chunk order, so the bits are the same for any --threads. At most
 * MAX_CHUNKS chunks, fewer when the partial sums would pass
 * MAX_PARTIAL_BYTES. */
enum { MAX_CHUNKS = 8 };
#define MAX_PARTIAL_BYTES ((size_t)64 << 20)

typedef struct grad_weight_job {
    const wgeom *g;
    const void *dy, *x;
    void *dw, *partial; /* partial: chunks 1.. (chunk 0 sums into dw) */
    int64_t chunks;
    const void *cols; /* NULL, or the forward's columns of every (image, group) (stash.h) */
} grad_weight_job;

/* The columns the forward Conv of X kept (stash.h), or NULL. */
static const void *forward_cols(const wgeom *g, const void *x) {
    px_conv_cols_key k;
    memset(&k, 0, sizeof k);
    k.x = x;
    k.dtype = g->o.dtype;
    k.N = g->a.dims[0];
    k.C = g->a.dims[1];
    k.group = g->flag;
    for (int i = 0; i < SP; i++) {
        k.in[i] = g->in[i];
        k.out[i] = g->out[i];
        k.k[i] = g->k[i];
        k.stride[i] = g->st[i];
        k.dil[i] = g->dil[i];
        k.pad[i] = g->pad[i];
    }
    return px_stash_take(&k, sizeof k);
}

static int64_t weight_chunks(const wgeom *g, size_t es) {
    int64_t N = g->a.dims[0], chunks = N < MAX_CHUNKS ? N : MAX_CHUNKS;
    size_t one = (size_t)g->o.numel * es;
    if (one > 0 && (size_t)(chunks - 1) * one > MAX_PARTIAL_BYTES)
        chunks = 1 + (int64_t)(MAX_PARTIAL_BYTES / one);
    return chunks < 1 ? 1 : chunks;
}

/* First image of chunk c of `chunks` over N images. */
static inline int64_t chunk_start(int64_t N, int64_t chunks, int64_t c) {
    return N * c / chunks;
}

/* The partial sums' buffer, kept and grown across calls (kernels run on the
 * rank's compute thread, which calls this before splitting the work). */
static void *partial_sums(size_t bytes) {
    static void *p;
    static size_t cap;
    if (bytes == 0) return NULL;
    if (cap < bytes) {
        free(p);
        size_t want = (bytes + 63) & ~(size_t)63;
        p = aligned_alloc(64, want);
        if (!p) px_rt_fail("ConvGradWeight: out of memory for %zu bytes of partial sums", bytes);
        cap = want;
    }
    return p;
}

/* cols [K x P] = W_q^T [K x Mg] . dY_q [Mg x P] */
static void grad_cols_gemm_f32(int64_t K, int64_t P, int64_t Mg, const float *w, const float *dy,
                               float *cols) {
    if (px_gemm_small_fits(K, P, Mg))
        px_gemm_small_f32(K, P, Mg, w, 1, K, dy, P, 0, cols, P);
    else
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)P, (int)Mg, 1, w,
                    (int)(K > 0 ? K : 1), dy, (int)(P > 0 ? P : 1), 0, cols, (int)(P > 0 ? P : 1));
}
static void grad_cols_gemm_f64(int64_t K, int64_t P, int64_t Mg, const double *w, const double *dy,
                               double *cols) {
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)P, (int)Mg, 1, w,
                (int)(K > 0 ? K : 1), dy, (int)(P > 0 ? P : 1), 0, cols, (int)(P > 0 ? P : 1));
}

/* The weight-gradient chunks [lo, hi) through the small products
 * (gemm_small.h) when they fit: per chunk and group, one product sums
 * dY_q . cols_q^T over all the chunk's images, the columns being the
 * forward's (stash), X itself (1x1) or built here for the whole chunk, so
 * the bits are the same either way. Returns 0 (nothing done) otherwise. */
static int grad_weight_small_f32(const grad_weight_job *j, int64_t lo, int64_t hi) {
    const wgeom *g = j->g;
    int64_t N = g->a.dims[0], C = g->a.dims[1], M = g->o.dims[0], grp = g->flag;
    int64_t Cg = C / grp, Mg = M / grp, K = Cg * g->k_size, P = g->out_size;
    if (Mg == 1 || !px_gemm_small_fits(Mg, K, P)) return 0;
    int pointwise = is_pointwise(g);
    const float *dy = j->dy, *x = j->x;
    for (int64_t ch = lo; ch < hi; ch++) {
        float *dw = ch == 0 ? (float *)j->dw : (float *)j->partial + (ch - 1) * g->o.numel;
        memset(dw, 0, (size_t)g->o.numel * sizeof(float));
        int64_t n0 = chunk_start(N, j->chunks, ch), count = chunk_start(N, j->chunks, ch + 1) - n0;
        const float *cols = NULL;
        int64_t b_next = grp * K * P;
        if (pointwise) {
            cols = x + n0 * C * g->in_size;
            b_next = C * g->in_size;
        } else if (j->cols) {
            cols = (const float *)j->cols + n0 * grp * K * P;
        } else {
            float *built = px_nn_scratch(3, (size_t)(count * grp * K * P) * sizeof(float));
            for (int64_t t = 0; t < count * grp; t++)
                im2col_f32(g, Cg, x + ((n0 + t / grp) * C + t % grp * Cg) * g->in_size,
                           built + t * K * P, P);
            cols = built;
        }
        for (int64_t q = 0; q < grp; q++)
            px_gemm_small_nt_f32(Mg, K, P, count, dy + (n0 * M + q * Mg) * P, P, M * P,
                                 cols + q * (pointwise ? Cg * g->in_size : K * P), P, b_next,
                                 dw + q * Mg * K, K);
    }
    return 1;
}
static int grad_weight_small_f64(const grad_weight_job *j, int64_t lo, int64_t hi) {
    (void)j, (void)lo, (void)hi;
    return 0;
}

/* conv_grad_input splits the (image, group) pairs over the rank's threads:
 * each pair writes only its own slice of dX, through its thread's scratch. */
#define CONV_GRAD(SUF, T, GEMM)                                                                    \
    static void grad_input_pairs_##SUF(void *ctx, int64_t lo, int64_t hi) {                        \
        const grad_input_job *j = ctx;                                                             \
        const wgeom *g = j->g;                                                                     \
        const T *dy = j->dy, *w = j->w;                                                            \
        T *dx = j->dx;                                                                             \
        int64_t C = g->o.dims[1], M = g->a.dims[0], grp = g->flag;                                 \
        int64_t Cg = C / grp, Mg = M / grp, K = Cg * g->k_size, P = g->out_size;                   \
        int pointwise = is_pointwise(g);                                                           \
        T *col = pointwise ? NULL : px_nn_scratch(3, (size_t)(K * P > 0 ? K * P : 1) * sizeof(T)); \
        for (int64_t t = lo; t < hi; t++) {                                                        \
            int64_t n = t / grp, q = t % grp;                                                      \
            T *dxq = dx + (n * C + q * Cg) * g->in_size;                                           \
            if (Mg == 1) /* depthwise */                                                           \
                px_conv1_grad_cols_##SUF(w + q * K, dy + (n * M + q) * P, K, P,                    \
                                         pointwise ? dxq : col);                                   \
            else                                                                                   \
                grad_cols_gemm_##SUF(K, P, Mg, w + q * Mg * K, dy + (n * M + q * Mg) * P,          \
                                     pointwise ? dxq : col);                                       \
            if (!pointwise) col2im_fast_##SUF(g, Cg, dxq, col, P);                                 \
        }                                                                                          \
    }                                                                                              \
    static void conv_grad_input_##SUF(const wgeom *g, const T *dy, const T *w, T *dx) {            \
        int64_t N = g->o.dims[0], C = g->o.dims[1], M = g->a.dims[0], grp = g->flag;               \
        int64_t Cg = C / grp, Mg = M / grp, K = Cg * g->k_size, P = g->out_size;                   \
        if (!is_pointwise(g)) memset(dx, 0, (size_t)g->o.numel * sizeof(T));                       \
        grad_input_job j = {g, dy, w, dx};                                                         \
        px_parallel_for(N *grp, px_grain_for(K *P *Mg / 8 + 1), grad_input_pairs_##SUF, &j);       \
    }                                                                                              \
    static void grad_weight_chunks_##SUF(void *ctx, int64_t lo, int64_t hi) {                      \
        const grad_weight_job *j = ctx;                                                            \
        const wgeom *g = j->g;                                                                     \
        const T *dy = j->dy, *x = j->x;                                                            \
        int64_t N = g->a.dims[0], C = g->a.dims[1], M = g->o.dims[0], grp = g->flag;               \
        int64_t Cg = C / grp, Mg = M / grp, K = Cg * g->k_size, P = g->out_size;                   \
        if (grad_weight_small_##SUF(j, lo, hi)) return;                                            \
        int pointwise = is_pointwise(g);                                                           \
        T *col = pointwise || j->cols                                                              \
                     ? NULL                                                                        \
                     : px_nn_scratch(3, (size_t)(K * P > 0 ? K * P : 1) * sizeof(T));              \
        for (int64_t ch = lo; ch < hi; ch++) {                                                     \
            T *dw = ch == 0 ? (T *)j->dw : (T *)j->partial + (ch - 1) * g->o.numel;                \
            memset(dw, 0, (size_t)g->o.numel * sizeof(T));                                         \
            for (int64_t n = chunk_start(N, j->chunks, ch); n < chunk_start(N, j->chunks, ch + 1); \
                 n++)                                                                              \
                for (int64_t q = 0; q < grp; q++) {                                                \
                    const T *xq = x + (n * C + q * Cg) * g->in_size, *cq = col;                    \
                    if (j->cols)                                                                   \
                        cq = (const T *)j->cols + (n * grp + q) * K * P;                           \
                    else if (!pointwise)                                                           \
                        im2col_##SUF(g, Cg, xq, col, P);                                           \
                    if (Mg == 1) /* depthwise */                                                   \
                        px_conv1_grad_weight_##SUF(dy + (n * M + q) * P, pointwise ? xq : cq, K,   \
                                                   P, dw + q * K);                                 \
                    else                                                                           \
                        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)Mg, (int)K, (int)P, 1,  \
                             dy + (n * M + q * Mg) * P, (int)(P > 0 ? P : 1), pointwise ? xq : cq, \
                             (int)(P > 0 ? P : 1), 1, dw + q * Mg * K, (int)(K > 0 ? K : 1));      \
                }                                                                                  \
        }                                                                                          \
    }                                                                                              \
    /* dW[lo, hi) += the chunks' partial sums, in chunk order */                                   \
    static void add_partials_##SUF(void *ctx, int64_t lo, int64_t hi) {                            \
        const grad_weight_job *j = ctx;                                                            \
        T *dw = j->dw;                                                                             \
        int64_t numel = j->g->o.numel;                                                             \
        for (int64_t ch = 1; ch < j->chunks; ch++) {                                               \
            const T *part = (const T *)j->partial + (ch - 1) * numel;                              \
            for (int64_t i = lo; i < hi; i++) dw[i] += part[i];                                    \
        }                                                                                          \
    }                                                                                              \
    static void conv_grad_weight_##SUF(const wgeom *g, const T *dy, const T *x, T *dw) {           \
        int64_t chunks = weight_chunks(g, sizeof(T));                                              \
        const void *cols = is_pointwise(g) ? NULL : forward_cols(g, x);                            \
        grad_weight_job j = {                                                                      \
            g,      dy,  x, dw, partial_sums((size_t)(chunks - 1) * g->o.numel * sizeof(T)),       \
            chunks, cols};                                                                         \
        int64_t per_chunk = g->a.dims[0] / chunks * g->o.numel * g->out_size;                      \
        px_parallel_for(chunks, px_grain_for(per_chunk / 8 + 1), grad_weight_chunks_##SUF, &j);    \
        if (chunks > 1) px_parallel_for(g->o.numel, px_grain_for(chunks), add_partials_##SUF, &j); \
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

/* Per-axis window tables, built once per call so the window walk does no
 * divisions: for output o on axis i, taps [lo, hi) land inside the input,
 * start = o * st - pad is the input position of tap 0, and cnt is the
 * count_include_pad divisor factor (taps inside [-pad, in + pad_end)). */
typedef struct axis_tab {
    int64_t *lo, *hi, *start, *cnt;
} axis_tab;

static void build_tabs(const wgeom *g, axis_tab tab[SP]) {
    int64_t total = g->out[0] + g->out[1] + g->out[2];
    int64_t *mem = px_nn_scratch(0, (size_t)(4 * total) * sizeof(int64_t));
    for (int i = 0; i < SP; i++) {
        tab[i].lo = mem;
        tab[i].hi = mem + g->out[i];
        tab[i].start = mem + 2 * g->out[i];
        tab[i].cnt = mem + 3 * g->out[i];
        mem += 4 * g->out[i];
        for (int64_t o = 0; o < g->out[i]; o++) {
            taps(g, i, o, &tab[i].lo[o], &tab[i].hi[o]);
            tab[i].start[o] = o * g->st[i] - g->pad[i];
            tab[i].cnt[o] = padded_taps(g, i, o);
        }
    }
}

/* Walks every window of every (n, c) plane, running the variadic body with
 * plane pointers xp / dxp, the window's dY value gv, its tap ranges l*, h*
 * (taps inside X), base: the flat offset in the plane of its tap (0, 0, 0)
 * (which may lie in the padding), and d0, d1, d2: the flat offsets of one
 * dilated tap step per axis. Tap (k0, k1, k2) is at base + k0*d0 + k1*d1 + k2*d2. */
#define FOR_WINDOWS(T, ...)                                                                        \
    const wgeom g = j->g;                                                                          \
    const axis_tab *tb = j->tb;                                                                    \
    const T *dy = j->dy, *x = j->x;                                                                \
    T *dx = j->dx;                                                                                 \
    memset(dx + plo * g.in_size, 0, (size_t)((phi - plo) * g.in_size) * sizeof(T));                \
    int64_t d0 = g.dil[0] * g.in[1] * g.in[2], d1 = g.dil[1] * g.in[2], d2 = g.dil[2];             \
    for (int64_t pl = plo; pl < phi; pl++) {                                                       \
        const T *xp = x ? x + pl * g.in_size : NULL;                                               \
        T *dxp = dx + pl * g.in_size;                                                              \
        const T *dyp = dy + pl * g.out_size;                                                       \
        for (int64_t o0 = 0; o0 < g.out[0]; o0++) {                                                \
            int64_t l0 = tb[0].lo[o0], h0 = tb[0].hi[o0];                                          \
            int64_t r0 = tb[0].start[o0] * g.in[1] * g.in[2];                                      \
            for (int64_t o1 = 0; o1 < g.out[1]; o1++) {                                            \
                int64_t l1 = tb[1].lo[o1], h1 = tb[1].hi[o1];                                      \
                int64_t r1 = r0 + tb[1].start[o1] * g.in[2];                                       \
                for (int64_t o2 = 0; o2 < g.out[2]; o2++) {                                        \
                    int64_t l2 = tb[2].lo[o2], h2 = tb[2].hi[o2];                                  \
                    int64_t base = r1 + tb[2].start[o2];                                           \
                    T gv = *dyp++;                                                                 \
                    __VA_ARGS__                                                                    \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

/* A pool gradient split over the (n, c) planes: each plane of dX takes
 * only its own plane's windows, so any split gives the same bits. */
typedef struct pool_grad_job {
    wgeom g;
    axis_tab tb[SP];
    const void *dy, *x;
    void *dx;
} pool_grad_job;

static void run_pool_grad(wgeom g, const void *dy, const void *x, void *dx, px_range_fn planes_fn) {
    pool_grad_job j = {.g = g, .dy = dy, .x = x, .dx = dx};
    build_tabs(&j.g, j.tb);
    int64_t window = g.k[0] * g.k[1] * g.k[2];
    px_parallel_for(g.o.dims[0] * g.o.dims[1], px_grain_for(g.out_size * window + g.in_size),
                    planes_fn, &j);
}

/* MaxPool 2 (2x2 windows, stride 2, no padding or dilation; see
 * nn_pool.c): the windows tile the input without overlap, so each dX cell
 * is written once, 0 + dY at the window's first maximum (the += of the
 * general walk on a zeroed dX) and 0 elsewhere, and no memset is needed
 * but for the last row / column an odd size leaves out. */
static int is_pool2(const wgeom *g) {
    if (g->k[0] != 1 || g->st[0] != 1 || g->pad[0] != 0 || g->in[0] != g->out[0]) return 0;
    for (int i = 1; i < SP; i++)
        if (g->k[i] != 2 || g->st[i] != 2 || g->dil[i] != 1 || g->pad[i] != 0 ||
            2 * g->out[i] > g->in[i])
            return 0;
    return 1;
}

/* float32: px_rnn_f32_to_bits / px_rnn_bits_to_f32 (rnn_math.h) */
static inline uint64_t bits_f64(double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}
static inline double f64_of(uint64_t u) {
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* Selects with all-ones / zero masks of type U (the float's bit width), so
 * no branch depends on which tap wins (data dependent: mispredictions
 * dominated this loop). (v > best) replaces, as in the general walk. */
#define MAXPOOL2_GRAD(NAME, T, U, BITS, OF)                                                        \
    static void NAME(void *ctx, int64_t plo, int64_t phi) {                                        \
        const pool_grad_job *j = ctx;                                                              \
        const wgeom *g = &j->g;                                                                    \
        int64_t H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2];                        \
        for (int64_t pl = plo; pl < phi; pl++)                                                     \
            for (int64_t d = 0; d < g->in[0]; d++) {                                               \
                const T *xp = (const T *)j->x + pl * g->in_size + d * H * W;                       \
                const T *dyp = (const T *)j->dy + pl * g->out_size + d * OH * OW;                  \
                T *dxp = (T *)j->dx + pl * g->in_size + d * H * W;                                 \
                for (int64_t o1 = 0; o1 < OH; o1++) {                                              \
                    const T *r0 = xp + 2 * o1 * W, *r1 = r0 + W, *gr = dyp + o1 * OW;              \
                    T *d0 = dxp + 2 * o1 * W, *d1 = d0 + W;                                        \
                    for (int64_t o2 = 0; o2 < OW; o2++) {                                          \
                        T a = r0[2 * o2], b = r0[2 * o2 + 1], c = r1[2 * o2], e = r1[2 * o2 + 1];  \
                        U gv = BITS((T)0 + gr[o2]);                                                \
                        U tb = -(U)(b > a);                                                        \
                        U best = (BITS(b) & tb) | (BITS(a) & ~tb);                                 \
                        U tc = -(U)(c > OF(best));                                                 \
                        best = (BITS(c) & tc) | (best & ~tc);                                      \
                        U te = -(U)(e > OF(best));                                                 \
                        /* the winner: e if te, else c if tc, else b if tb, else a */              \
                        d0[2 * o2] = OF(gv & ~(tb | tc | te));                                     \
                        d0[2 * o2 + 1] = OF(gv & tb & ~tc & ~te);                                  \
                        d1[2 * o2] = OF(gv & tc & ~te);                                            \
                        d1[2 * o2 + 1] = OF(gv & te);                                              \
                    }                                                                              \
                    for (int64_t w = 2 * OW; w < W; w++) d0[w] = d1[w] = 0;                        \
                }                                                                                  \
                for (int64_t h = 2 * OH; h < H; h++)                                               \
                    memset(dxp + h * W, 0, (size_t)W * sizeof(T));                                 \
            }                                                                                      \
    }
MAXPOOL2_GRAD(maxpool2_grad_f32, float, uint32_t, px_rnn_f32_to_bits, px_rnn_bits_to_f32)
MAXPOOL2_GRAD(maxpool2_grad_f64, double, uint64_t, bits_f64, f64_of)

/* Moves (bi, best) to tap i if it is strictly greater, without a branch. */
#define MAX_STEP(I)                                                                                \
    do {                                                                                           \
        int64_t i_ = (I), take_ = -(int64_t)(xp[i_] > best);                                       \
        bi = (i_ & take_) | (bi & ~take_);                                                         \
        best = xp[i_] > best ? xp[i_] : best;                                                      \
    } while (0)

/* The first maximum in the forward's scan order (as px_k_maxpool, ONNX and
 * PyTorch) receives the window's gradient. The scan starts from the first tap
 * and updates with selects rather than branches: which tap wins is data
 * dependent, and mispredicted branches dominated this kernel. */
#define MAXPOOL_GRAD(NAME, T)                                                                      \
    static void NAME(void *ctx, int64_t plo, int64_t phi) {                                        \
        const pool_grad_job *j = ctx;                                                              \
        FOR_WINDOWS(                                                                               \
            T, if (l0 >= h0 || l1 >= h1 || l2 >= h2) continue;                                     \
            if (h0 - l0 == 1 && h1 - l1 == 2 && h2 - l2 == 2) {                                    \
                /* a whole 2x2 window (MaxPool 2): scan order a, b / c, d */                       \
                int64_t ia = base + l0 * d0 + l1 * d1 + l2 * d2, ic = ia + d1;                     \
                int64_t bi = ia;                                                                   \
                T best = xp[ia];                                                                   \
                MAX_STEP(ia + d2);                                                                 \
                MAX_STEP(ic);                                                                      \
                MAX_STEP(ic + d2);                                                                 \
                dxp[bi] += gv;                                                                     \
                continue;                                                                          \
            } int64_t best_i = base + l0 * d0 + l1 * d1 + l2 * d2;                                 \
            T best = xp[best_i]; for (int64_t k0 = l0; k0 < h0; k0++) {                            \
                for (int64_t k1 = l1; k1 < h1; k1++) {                                             \
                    int64_t row = base + k0 * d0 + k1 * d1;                                        \
                    for (int64_t k2 = l2; k2 < h2; k2++) {                                         \
                        int64_t i = row + k2 * d2;                                                 \
                        T v = xp[i];                                                               \
                        int64_t take = -(int64_t)(v > best); /* all ones or 0 */                   \
                        best_i = (i & take) | (best_i & ~take);                                    \
                        best = v > best ? v : best;                                                \
                    }                                                                              \
                }                                                                                  \
            } dxp[best_i] += gv;)                                                                  \
    }
MAXPOOL_GRAD(maxpool_grad_f32, float)
MAXPOOL_GRAD(maxpool_grad_f64, double)

void px_k_maxpool_grad(void *const *buf, const int64_t *p) {
    wgeom g = read_geom(p);
    set_sizes(&g, &g.o);
    int pool2 = is_pool2(&g);
    if (g.o.dtype == F64)
        run_pool_grad(g, buf[0], buf[1], buf[2], pool2 ? maxpool2_grad_f64 : maxpool_grad_f64);
    else if (g.o.dtype == F32)
        run_pool_grad(g, buf[0], buf[1], buf[2], pool2 ? maxpool2_grad_f32 : maxpool_grad_f32);
    else
        px_rt_fail("px_k_maxpool_grad: unsupported dtype %d", g.o.dtype);
}

/* Each window's dY / count is added to its taps inside X. */
#define AVGPOOL_GRAD(NAME, T)                                                                      \
    static void NAME(void *ctx, int64_t plo, int64_t phi) {                                        \
        const pool_grad_job *j = ctx;                                                              \
        FOR_WINDOWS(                                                                               \
            T, (void)xp; int64_t count = g.flag ? tb[0].cnt[o0] * tb[1].cnt[o1] * tb[2].cnt[o2]    \
                                                : (h0 - l0) * (h1 - l1) * (h2 - l2);               \
            T share = count ? (T)((double)gv / (double)count) : (T)0;                              \
            for (int64_t k0 = l0; k0 < h0; k0++) {                                                 \
                for (int64_t k1 = l1; k1 < h1; k1++) {                                             \
                    int64_t row = base + k0 * d0 + k1 * d1;                                        \
                    for (int64_t k2 = l2; k2 < h2; k2++) dxp[row + k2 * d2] += share;              \
                }                                                                                  \
            })                                                                                     \
    }
AVGPOOL_GRAD(avgpool_grad_f32, float)
AVGPOOL_GRAD(avgpool_grad_f64, double)

void px_k_avgpool_grad(void *const *buf, const int64_t *p) {
    wgeom g = read_geom(p);
    set_sizes(&g, &g.o);
    if (g.o.dtype == F64)
        run_pool_grad(g, buf[0], NULL, buf[2], avgpool_grad_f64);
    else if (g.o.dtype == F32)
        run_pool_grad(g, buf[0], NULL, buf[2], avgpool_grad_f32);
    else
        px_rt_fail("px_k_avgpool_grad: unsupported dtype %d", g.o.dtype);
}
