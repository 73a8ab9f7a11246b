/* Segment reductions (ai.parallax SegmentReduce / SegmentReduceGrad, shape
 * in ir/shape_segment.c, lowered in compiler/codegen/lower_embedding_bag.c):
 * the reduce half of nn.EmbeddingBag after the import turned its Loop into
 * Gather + SegmentReduce.
 *
 * Segment m covers rows [starts[m], ends[m]) of data: bounds as Slice reads
 * them (negative ones count from N, then clamp to [0, N]), empty when
 * end <= start. Modes as PyTorch's EmbeddingBag: sum, mean (sum / count),
 * max (per element; ties keep the first row); an empty segment gives zeros.
 * Segments may overlap: the gradient accumulates.
 *
 * A SegmentReduce made from nn.EmbeddingBag's offsets (attribute offsets=1)
 * first checks them as PyTorch does: the first is 0, none decreases, none
 * passes the indices. Offsets that break this gave silently wrong bags. The
 * loaders check offsets read from data before any step runs, naming the
 * file, the sample and the value (runtime/program/bag_offsets.c); this
 * check stops the run, naming the bag and the values, for offsets computed
 * inside the graph. */
#include "kutil.h"

#include <stdint.h>
#include <string.h>

enum { MODE_SUM = 0, MODE_MEAN = 1, MODE_MAX = 2 };

static int64_t bound_at(const void *b, int dtype, int64_t m, int64_t n) {
    int64_t v = dtype == PXK_I32 ? ((const int32_t *)b)[m] : ((const int64_t *)b)[m];
    if (v < 0) v += n;
    return v < 0 ? 0 : v > n ? n : v;
}

/* The parameters both kernels share. */
typedef struct seg_args {
    int dtype, mode, bound_dtype, offsets;
    int64_t n, m, row; /* rows of data, segments, elements per row */
} seg_args;

static seg_args read_args(px_kcur *c, const char *what) {
    seg_args a;
    a.dtype = (int)px_kp_i64(c);
    a.mode = (int)px_kp_i64(c);
    a.bound_dtype = (int)px_kp_i64(c);
    a.n = px_kp_i64(c);
    a.m = px_kp_i64(c);
    a.row = px_kp_i64(c);
    a.offsets = (int)px_kp_i64(c);
    if (a.dtype != PXK_F32 && a.dtype != PXK_F64)
        px_rt_fail("%s kernel: unsupported dtype %d (float and double only)", what, a.dtype);
    if (a.bound_dtype != PXK_I32 && a.bound_dtype != PXK_I64)
        px_rt_fail("%s kernel: segment bounds must be int32 or int64, got dtype %d", what,
                   a.bound_dtype);
    if (a.mode < MODE_SUM || a.mode > MODE_MAX)
        px_rt_fail("%s kernel: unknown mode %d", what, a.mode);
    return a;
}

/* Forward for element type T. The max keeps the first maximum (strict >),
 * as PyTorch's CPU embedding_bag does. */
#define SEGMENT_FORWARD(T)                                                                         \
    static void forward_##T(const seg_args *a, const T *x, const void *st, const void *en, T *y) { \
        for (int64_t m = 0; m < a->m; m++) {                                                       \
            int64_t s = bound_at(st, a->bound_dtype, m, a->n),                                     \
                    e = bound_at(en, a->bound_dtype, m, a->n);                                     \
            T *out = y + m * a->row;                                                               \
            if (e <= s) {                                                                          \
                memset(out, 0, (size_t)a->row * sizeof(T));                                        \
                continue;                                                                          \
            }                                                                                      \
            memcpy(out, x + s * a->row, (size_t)a->row * sizeof(T));                               \
            for (int64_t j = s + 1; j < e; j++) {                                                  \
                const T *r = x + j * a->row;                                                       \
                if (a->mode == MODE_MAX) {                                                         \
                    for (int64_t k = 0; k < a->row; k++)                                           \
                        if (r[k] > out[k]) out[k] = r[k];                                          \
                } else {                                                                           \
                    for (int64_t k = 0; k < a->row; k++) out[k] += r[k];                           \
                }                                                                                  \
            }                                                                                      \
            if (a->mode == MODE_MEAN)                                                              \
                for (int64_t k = 0; k < a->row; k++) out[k] /= (T)(e - s);                         \
        }                                                                                          \
    }

/* Gradient for element type T: dX starts at zero; each segment adds dY (sum),
 * dY / count (mean), or dY at the row holding the maximum (max). */
#define SEGMENT_BACKWARD(T)                                                                        \
    static void backward_##T(const seg_args *a, const T *dy, const T *x, const void *st,           \
                             const void *en, T *dx) {                                              \
        memset(dx, 0, (size_t)(a->n * a->row) * sizeof(T));                                        \
        for (int64_t m = 0; m < a->m; m++) {                                                       \
            int64_t s = bound_at(st, a->bound_dtype, m, a->n),                                     \
                    e = bound_at(en, a->bound_dtype, m, a->n);                                     \
            const T *g = dy + m * a->row;                                                          \
            if (e <= s) continue;                                                                  \
            if (a->mode == MODE_MAX) {                                                             \
                for (int64_t k = 0; k < a->row; k++) {                                             \
                    int64_t best = s;                                                              \
                    for (int64_t j = s + 1; j < e; j++)                                            \
                        if (x[j * a->row + k] > x[best * a->row + k]) best = j;                    \
                    dx[best * a->row + k] += g[k];                                                 \
                }                                                                                  \
                continue;                                                                          \
            }                                                                                      \
            T scale = a->mode == MODE_MEAN ? (T)1 / (T)(e - s) : (T)1;                             \
            for (int64_t j = s; j < e; j++) {                                                      \
                T *r = dx + j * a->row;                                                            \
                if (a->mode == MODE_MEAN)                                                          \
                    for (int64_t k = 0; k < a->row; k++) r[k] += g[k] * scale;                     \
                else                                                                               \
                    for (int64_t k = 0; k < a->row; k++) r[k] += g[k];                             \
            }                                                                                      \
        }                                                                                          \
    }

typedef double f64;
SEGMENT_FORWARD(float)
SEGMENT_FORWARD(f64)
SEGMENT_BACKWARD(float)
SEGMENT_BACKWARD(f64)

static int64_t raw_bound(const void *b, int dtype, int64_t m) {
    return dtype == PXK_I32 ? ((const int32_t *)b)[m] : ((const int64_t *)b)[m];
}

/* EmbeddingBag's offsets: bag m spans [starts[m], ends[m]), ends being the
 * next offset (the last: the count of indices). */
static void check_offsets(const seg_args *a, const void *st, const void *en) {
    for (int64_t m = 0; m < a->m; m++) {
        int64_t s = raw_bound(st, a->bound_dtype, m), e = raw_bound(en, a->bound_dtype, m);
        const char *why = m == 0 && s != 0       ? "the first offset must be 0"
                          : s < 0                ? "an offset may not be negative"
                          : s > a->n || e > a->n ? "an offset may not pass the count of indices"
                          : e < s                ? "offsets may not decrease"
                                                 : NULL;
        if (!why) continue;
        px_rt_fail("EmbeddingBag offsets: bag %lld spans offsets %lld to %lld of %lld indices: %s "
                   "(offsets start at 0 and never decrease, as PyTorch's nn.EmbeddingBag takes "
                   "them)",
                   (long long)m, (long long)s, (long long)e, (long long)a->n, why);
    }
}

/* px_k_segment_reduce: Y[m] = reduce(X[starts[m] : ends[m]]).
 * buf: X [n, row], starts [>= m], ends [m], Y [m, row]
 * p:   dtype (1 float, 11 double), mode (0 sum, 1 mean, 2 max), bounds dtype
 *      (6 int32, 7 int64), n, m, row, offsets (1: check the bounds as
 *      EmbeddingBag offsets first) */
void px_k_segment_reduce(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    seg_args a = read_args(&c, "segment reduce");
    if (a.offsets) check_offsets(&a, buf[1], buf[2]);
    if (a.dtype == PXK_F32)
        forward_float(&a, buf[0], buf[1], buf[2], buf[3]);
    else
        forward_f64(&a, buf[0], buf[1], buf[2], buf[3]);
}

/* px_k_segment_reduce_grad: dX of px_k_segment_reduce.
 * buf: dY [m, row], X [n, row], starts, ends, dX [n, row]
 * p:   as px_k_segment_reduce */
void px_k_segment_reduce_grad(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    seg_args a = read_args(&c, "segment reduce gradient");
    if (a.dtype == PXK_F32)
        backward_float(&a, buf[0], buf[1], buf[2], buf[3], buf[4]);
    else
        backward_f64(&a, buf[0], buf[1], buf[2], buf[3], buf[4]);
}
