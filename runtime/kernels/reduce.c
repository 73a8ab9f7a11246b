/* Kernels of the reduce family (see px_kernel.h for the ABI): the Reduce*
 * ops, ArgMax/ArgMin, and the ops that act along one axis (Softmax,
 * LogSoftmax, Hardmax, CumSum).
 *
 * float32 and float64 run typed loops; other dtypes are staged through
 * double (exact for integers below 2^53). Reductions reassociate: a row
 * reduced to one value uses 8 partial accumulators so it vectorizes without
 * -ffast-math. */
#include "kutil.h"
#include "softmax_rows.h"
#include "thread_pool.h"
#include "vec_clones.h"

#include <stdlib.h>

/* The expression macros declare a local T not every expression uses. */
#pragma GCC diagnostic ignored "-Wunused-local-typedefs"

/* ======================= Reduce* ======================= */

enum rkind { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LOGSUMEXP, R_SUMSQ };

/* Per-element contribution and combination of each accumulation. s is the
 * shift of sumexp (the running max), unused by the others. */
#define PRE_ID(v, s) (v)
#define PRE_ABS(v, s) ((v) < 0 ? -(v) : (v))
#define PRE_SQ(v, s) ((v) * (v))
#define PRE_EXP(v, s)                                                                              \
    (sizeof(T) == sizeof(float) ? (T)expf((float)((v) - (s))) : (T)exp((double)((v) - (s))))
enum { C_KIND_ADD, C_KIND_MUL, C_KIND_MAX, C_KIND_MIN };
/* The row_/acc_ pair a pass uses. */
enum { F_SUM, F_SUMABS, F_SUMSQ, F_PROD, F_MAX, F_MIN, F_SUMEXP };
#define C_ADD(a, b) ((a) + (b))
#define C_MUL(a, b) ((a) * (b))
/* NaN propagates like numpy.max / numpy.min */
#define C_MAX(a, b) ((b) != (b) || (b) > (a) ? (b) : (a))
#define C_MIN(a, b) ((b) != (b) || (b) < (a) ? (b) : (a))

/* row_NAME_S: reduces x[0..n) to one value; acc_NAME_S: y[i] = y[i] (+) x[i]. */
#define RED_FNS(T_, S, NAME, ID, PRE, COMB)                                                        \
    static T_ row_##NAME##_##S(const T_ *restrict x, int64_t n, T_ sh) {                           \
        typedef T_ T;                                                                              \
        T acc[8];                                                                                  \
        for (int j = 0; j < 8; j++) acc[j] = (ID);                                                 \
        int64_t i = 0;                                                                             \
        for (; i + 8 <= n; i += 8)                                                                 \
            for (int j = 0; j < 8; j++) {                                                          \
                T v = x[i + j];                                                                    \
                acc[j] = COMB(acc[j], PRE(v, sh));                                                 \
            }                                                                                      \
        T r = (ID);                                                                                \
        for (; i < n; i++) {                                                                       \
            T v = x[i];                                                                            \
            r = COMB(r, PRE(v, sh));                                                               \
        }                                                                                          \
        for (int j = 0; j < 8; j++) r = COMB(r, acc[j]);                                           \
        (void)sh;                                                                                  \
        return r;                                                                                  \
    }                                                                                              \
    static void acc_##NAME##_##S(const T_ *restrict x, T_ *restrict y, int64_t n,                  \
                                 const T_ *restrict sh) {                                          \
        typedef T_ T;                                                                              \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T v = x[i];                                                                            \
            y[i] = COMB(y[i], PRE(v, sh[i]));                                                      \
        }                                                                                          \
        (void)sh;                                                                                  \
    }

/* Everything the accumulation of one kind needs, for one element type. */
#define RED_TYPE(T, S)                                                                             \
    RED_FNS(T, S, sum, 0, PRE_ID, C_ADD)                                                           \
    RED_FNS(T, S, sumabs, 0, PRE_ABS, C_ADD)                                                       \
    RED_FNS(T, S, sumsq, 0, PRE_SQ, C_ADD)                                                         \
    RED_FNS(T, S, prod, 1, PRE_ID, C_MUL)                                                          \
    RED_FNS(T, S, max, -INFINITY, PRE_ID, C_MAX)                                                   \
    RED_FNS(T, S, min, INFINITY, PRE_ID, C_MIN)                                                    \
    RED_FNS(T, S, sumexp, 0, PRE_EXP, C_ADD)                                                       \
                                                                                                   \
    typedef T (*row_fn_##S)(const T *restrict, int64_t, T);                                        \
    typedef void (*acc_fn_##S)(const T *restrict, T *restrict, int64_t, const T *restrict);        \
                                                                                                   \
    typedef struct pass_job_##S {                                                                  \
        const pxk_bcast *it;                                                                       \
        const T *x;                                                                                \
        T *y;                                                                                      \
        int fns; /* which row_/acc_ pair: F_SUM... */                                              \
        int comb;                                                                                  \
        const T *sh;                                                                               \
    } pass_job_##S;                                                                                \
    /* Rows [lo, hi) of the iteration, each accumulated whole into y. */                           \
    static inline __attribute__((always_inline)) void rows_body_##S(                               \
        const pass_job_##S *j, int64_t lo, int64_t hi, row_fn_##S row, acc_fn_##S acc) {           \
        const pxk_bcast *it = j->it;                                                               \
        pxk_bcast_pos pos;                                                                         \
        pxk_bcast_seek(it, &pos, lo);                                                              \
        int64_t n = it->inner;                                                                     \
        for (int64_t r = lo; r < hi; r++, pxk_bcast_next(it, &pos)) {                              \
            const T *rx = j->x + pos.off[0];                                                       \
            T *ry = j->y + pos.off[1];                                                             \
            if (it->inner_stride[1] == 0) {                                                        \
                T v = row(rx, n, j->sh ? j->sh[pos.off[1]] : (T)0);                                \
                *ry = j->comb == C_KIND_MUL   ? *ry * v                                            \
                      : j->comb == C_KIND_MAX ? C_MAX(*ry, v)                                      \
                      : j->comb == C_KIND_MIN ? C_MIN(*ry, v)                                      \
                                              : *ry + v;                                           \
            } else {                                                                               \
                /* acc reads its shift argument only for sumexp */                                 \
                acc(rx, ry, n, j->sh ? j->sh + pos.off[1] : rx);                                   \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    /* Columns [lo, hi) of the inner dim (kept in y) over every row. */                            \
    static inline __attribute__((always_inline)) void cols_body_##S(                               \
        const pass_job_##S *j, int64_t lo, int64_t hi, acc_fn_##S acc) {                           \
        const pxk_bcast *it = j->it;                                                               \
        pxk_bcast_pos pos = {0};                                                                   \
        for (int64_t r = 0; r < it->rows; r++, pxk_bcast_next(it, &pos)) {                         \
            const T *rx = j->x + pos.off[0] + lo;                                                  \
            acc(rx, j->y + pos.off[1] + lo, hi - lo, j->sh ? j->sh + pos.off[1] + lo : rx);        \
        }                                                                                          \
    }                                                                                              \
    PX_VEC_CLONES static void pass_rows_##S(void *ctx, int64_t lo, int64_t hi) {                   \
        const pass_job_##S *j = ctx;                                                               \
        switch (j->fns) {                                                                          \
        case F_SUM: rows_body_##S(j, lo, hi, row_sum_##S, acc_sum_##S); break;                     \
        case F_SUMABS: rows_body_##S(j, lo, hi, row_sumabs_##S, acc_sumabs_##S); break;            \
        case F_SUMSQ: rows_body_##S(j, lo, hi, row_sumsq_##S, acc_sumsq_##S); break;               \
        case F_PROD: rows_body_##S(j, lo, hi, row_prod_##S, acc_prod_##S); break;                  \
        case F_MAX: rows_body_##S(j, lo, hi, row_max_##S, acc_max_##S); break;                     \
        case F_MIN: rows_body_##S(j, lo, hi, row_min_##S, acc_min_##S); break;                     \
        default: rows_body_##S(j, lo, hi, row_sumexp_##S, acc_sumexp_##S); break;                  \
        }                                                                                          \
    }                                                                                              \
    PX_VEC_CLONES static void pass_cols_##S(void *ctx, int64_t lo, int64_t hi) {                   \
        const pass_job_##S *j = ctx;                                                               \
        switch (j->fns) {                                                                          \
        case F_SUM: cols_body_##S(j, lo, hi, acc_sum_##S); break;                                  \
        case F_SUMABS: cols_body_##S(j, lo, hi, acc_sumabs_##S); break;                            \
        case F_SUMSQ: cols_body_##S(j, lo, hi, acc_sumsq_##S); break;                              \
        case F_PROD: cols_body_##S(j, lo, hi, acc_prod_##S); break;                                \
        case F_MAX: cols_body_##S(j, lo, hi, acc_max_##S); break;                                  \
        case F_MIN: cols_body_##S(j, lo, hi, acc_min_##S); break;                                  \
        default: cols_body_##S(j, lo, hi, acc_sumexp_##S); break;                                  \
        }                                                                                          \
    }                                                                                              \
    /* One pass over x accumulating into y (which holds the identity). comb                        \
     * says how a row's value joins y (the combination of row and acc);                            \
     * sh is sumexp's shift per output element (NULL otherwise). Split over                        \
     * the rank's threads so that every element of y is formed by one thread                       \
     * in the serial order: by columns when the inner dim is kept, by rows                         \
     * when each row has its own element of y; otherwise serial. */                                \
    static void pass_##S(const pxk_bcast *it, const T *x, T *y, int64_t ny, int fns, int comb,     \
                         const T *sh) {                                                            \
        pass_job_##S j = {it, x, y, fns, comb, sh};                                                \
        if (it->inner_stride[1] != 0) {                                                            \
            int64_t g = px_grain_for(it->rows);                                                    \
            px_parallel_for(it->inner, (g + 63) & ~(int64_t)63, pass_cols_##S, &j);                \
        } else if (it->rows == ny)                                                                 \
            px_parallel_for(it->rows, px_grain_for(it->inner), pass_rows_##S, &j);                 \
        else                                                                                       \
            pass_rows_##S(&j, 0, it->rows);                                                        \
    }                                                                                              \
                                                                                                   \
    PX_VEC_CLONES static void reduce_##S(int kind, const pxk_bcast *it, const T *x, T *y,          \
                                         int64_t ny, int64_t count) {                              \
        T id = kind == R_PROD                         ? 1                                          \
               : kind == R_MAX || kind == R_LOGSUMEXP ? -INFINITY                                  \
               : kind == R_MIN                        ? INFINITY                                   \
                                                      : 0;                                                                \
        for (int64_t i = 0; i < ny; i++) y[i] = id;                                                \
        switch (kind) {                                                                            \
        case R_SUM:                                                                                \
        case R_MEAN:                                                                               \
        case R_LOGSUM: pass_##S(it, x, y, ny, F_SUM, C_KIND_ADD, 0); break;                        \
        case R_L1: pass_##S(it, x, y, ny, F_SUMABS, C_KIND_ADD, 0); break;                         \
        case R_L2:                                                                                 \
        case R_SUMSQ: pass_##S(it, x, y, ny, F_SUMSQ, C_KIND_ADD, 0); break;                       \
        case R_PROD: pass_##S(it, x, y, ny, F_PROD, C_KIND_MUL, 0); break;                         \
        case R_MAX: pass_##S(it, x, y, ny, F_MAX, C_KIND_MAX, 0); break;                           \
        case R_MIN: pass_##S(it, x, y, ny, F_MIN, C_KIND_MIN, 0); break;                           \
        case R_LOGSUMEXP: {                                                                        \
            /* max first, then sum exp(x - max): no overflow */                                    \
            pass_##S(it, x, y, ny, F_MAX, C_KIND_MAX, 0);                                          \
            T *s = calloc((size_t)ny, sizeof *s);                                                  \
            if (!s) px_rt_fail("ReduceLogSumExp: out of memory");                                  \
            for (int64_t i = 0; i < ny; i++) y[i] = isfinite(y[i]) ? y[i] : 0;                     \
            pass_##S(it, x, s, ny, F_SUMEXP, C_KIND_ADD, y);                                       \
            for (int64_t i = 0; i < ny; i++) y[i] = y[i] + (T)log((double)s[i]);                   \
            free(s);                                                                               \
            return;                                                                                \
        }                                                                                          \
        }                                                                                          \
        switch (kind) {                                                                            \
        case R_MEAN:                                                                               \
            for (int64_t i = 0; i < ny; i++) y[i] = (T)((double)y[i] / (double)count);             \
            break;                                                                                 \
        case R_L2:                                                                                 \
            for (int64_t i = 0; i < ny; i++) y[i] = (T)sqrt((double)y[i]);                         \
            break;                                                                                 \
        case R_LOGSUM:                                                                             \
            for (int64_t i = 0; i < ny; i++) y[i] = (T)log((double)y[i]);                          \
            break;                                                                                 \
        default: break;                                                                            \
        }                                                                                          \
    }

RED_TYPE(float, f32)
RED_TYPE(double, f64)

/* Every Reduce kernel px_k_reduce_KIND:
 *   buf: [X, AXES or NULL, Y]
 *   p:   X tensor, Y tensor, X.rank flags (1: the dim is reduced),
 *        keepdims, noop_with_empty_axes, AXES dtype, AXES element count
 * With AXES NULL (constant or attribute axes, the usual case) the flags say
 * what to reduce and the rest is unused. Otherwise the axes are read at run
 * time (int32 or int64) and must produce Y's compiled shape.
 * Y has X's element count divided by the reduced dims' (keepdims or not:
 * the layout is the same). No reduced dim reduces nothing (each element is
 * its own group: ReduceSumSquare squares, ReduceL2 takes |x|...). An empty
 * group gives the identity: 0 for sums, 1 for Prod, -inf/+inf for Max/Min,
 * log(0) = -inf for LogSum and LogSumExp, NaN for Mean. */
static const char *const reduce_names[] = {
    "ReduceSum", "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",
    "ReduceL1",  "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};

/* Turns run-time axes into flags, checking them against Y's shape. */
static void runtime_axes(int kind, const px_kt *X, const px_kt *Y, const void *axes, int dt,
                         int64_t n_axes, int keepdims, int noop, int *flags) {
    for (int i = 0; i < X->rank; i++) flags[i] = n_axes == 0 && !noop;
    for (int64_t i = 0; i < n_axes; i++) {
        int64_t a = dt == PXK_I32 ? ((const int32_t *)axes)[i] : ((const int64_t *)axes)[i];
        if (a < -X->rank || a >= X->rank)
            px_rt_fail("%s: axis %lld is out of range for a rank-%d input", reduce_names[kind],
                       (long long)a, X->rank);
        if (a < 0) a += X->rank;
        if (flags[a]) px_rt_fail("%s: axis %lld is listed twice", reduce_names[kind], (long long)a);
        flags[a] = 1;
    }
    int r = 0, ok = 1;
    for (int i = 0; i < X->rank; i++) {
        if (flags[i] && !keepdims) continue;
        if (r >= Y->rank || Y->dims[r] != (flags[i] ? 1 : X->dims[i])) ok = 0;
        r++;
    }
    if (!ok || r != Y->rank)
        px_rt_fail("%s: the axes given at run time do not give the output shape the program "
                   "was compiled for",
                   reduce_names[kind]);
}

/* The largest (or lowest) value of an integer dtype, stored at y[i]. */
static void int_extreme(void *y, int dt, int64_t i, int largest) {
    int bits = pxk_dtype_size(dt) * 8;
    if (pxk_is_unsigned(dt)) {
        pxk_set_i64(y, dt, i, largest ? -1 : 0); /* all ones wraps to the maximum */
        return;
    }
    int64_t max = (int64_t)((UINT64_C(1) << (bits - 1)) - 1);
    pxk_set_i64(y, dt, i, largest ? max : -max - 1);
}

static void reduce_kernel(int kind, void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt X = px_kp_tensor(&c), Y = px_kp_tensor(&c);
    int flags[PX_K_MAX_RANK];
    for (int i = 0; i < X.rank; i++) flags[i] = px_kp_i64(&c) != 0;
    int keepdims = px_kp_i64(&c) != 0, noop = px_kp_i64(&c) != 0;
    int axes_dt = (int)px_kp_i64(&c);
    int64_t n_axes = px_kp_i64(&c);
    if (buf[1]) runtime_axes(kind, &X, &Y, buf[1], axes_dt, n_axes, keepdims, noop, flags);
    int64_t kept[PX_K_MAX_RANK], count = 1;
    for (int i = 0; i < X.rank; i++) {
        kept[i] = flags[i] ? 1 : X.dims[i];
        if (flags[i]) count *= X.dims[i];
    }
    if (Y.numel == 0) return;
    px_kt ops[2] = {X, pxk_kt_make(X.dtype, X.rank, kept)};
    pxk_bcast it;
    pxk_bcast_init(&it, X.rank, X.dims, 2, ops);
    if (X.dtype == PXK_F32) {
        reduce_f32(kind, &it, buf[0], buf[2], Y.numel, count);
        return;
    }
    if (X.dtype == PXK_F64) {
        reduce_f64(kind, &it, buf[0], buf[2], Y.numel, count);
        return;
    }
    /* other dtypes: through double */
    double *x = malloc((size_t)(X.numel ? X.numel : 1) * sizeof *x);
    double *y = malloc((size_t)Y.numel * sizeof *y);
    if (!x || !y) px_rt_fail("Reduce: out of memory");
    for (int64_t i = 0; i < X.numel; i++) x[i] = pxk_get_f64(buf[0], X.dtype, i);
    reduce_f64(kind, &it, x, y, Y.numel, count);
    for (int64_t i = 0; i < Y.numel; i++) {
        if (!pxk_is_float(Y.dtype) && isinf(y[i])) /* empty Max/Min on integers */
            int_extreme(buf[2], Y.dtype, i, y[i] > 0);
        else
            pxk_set_f64(buf[2], Y.dtype, i, y[i]);
    }
    free(x);
    free(y);
}

#define REDUCE_KERNEL(NAME, KIND)                                                                  \
    void px_k_reduce_##NAME(void *const *buf, const int64_t *p) {                                  \
        reduce_kernel(KIND, buf, p);                                                               \
    }
REDUCE_KERNEL(sum, R_SUM)
REDUCE_KERNEL(mean, R_MEAN)
REDUCE_KERNEL(max, R_MAX)
REDUCE_KERNEL(min, R_MIN)
REDUCE_KERNEL(prod, R_PROD)
REDUCE_KERNEL(l1, R_L1)
REDUCE_KERNEL(l2, R_L2)
REDUCE_KERNEL(log_sum, R_LOGSUM)
REDUCE_KERNEL(log_sum_exp, R_LOGSUMEXP)
REDUCE_KERNEL(sum_square, R_SUMSQ)

/* ======================= ArgMax / ArgMin ======================= */

/* px_k_argmax, px_k_argmin:
 *   buf: [X, Y (int64)]
 *   p:   X tensor, Y tensor, axis (normalized), select_last_index
 * Ties give the first index, or the last with select_last_index. */
#define ARG_LOOP(T, GET)                                                                           \
    for (int64_t o = 0; o < outer; o++)                                                            \
        for (int64_t k = 0; k < inner; k++) {                                                      \
            int64_t base = o * n * inner + k, best_j = 0;                                          \
            T best = GET(base);                                                                    \
            for (int64_t j = 1; j < n; j++) {                                                      \
                T v = GET(base + j * inner);                                                       \
                int better = is_min ? v < best : v > best;                                         \
                if (better || (last && v == best)) {                                               \
                    best = v;                                                                      \
                    best_j = j;                                                                    \
                }                                                                                  \
            }                                                                                      \
            y[o * inner + k] = n ? best_j : 0;                                                     \
        }

static void arg_kernel(int is_min, void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt X = px_kp_tensor(&c);
    (void)px_kp_tensor(&c);
    int axis = (int)px_kp_i64(&c), last = px_kp_i64(&c) != 0;
    int64_t outer = 1, inner = 1, n = X.dims[axis];
    for (int i = 0; i < axis; i++) outer *= X.dims[i];
    for (int i = axis + 1; i < X.rank; i++) inner *= X.dims[i];
    int64_t *y = buf[1];
    if (n == 0) {
        for (int64_t i = 0; i < outer * inner; i++) y[i] = 0;
        return;
    }
    const void *x = buf[0];
    int dt = X.dtype;
#define GET_F32(i) (((const float *)x)[i])
#define GET_F64(i) pxk_get_f64(x, dt, i)
#define GET_I64(i) pxk_get_i64(x, dt, i)
    if (dt == PXK_F32) {
        ARG_LOOP(float, GET_F32)
    } else if (pxk_is_float(dt)) {
        ARG_LOOP(double, GET_F64)
    } else if (dt == PXK_U64) {
#define GET_U64(i) (((const uint64_t *)x)[i])
        ARG_LOOP(uint64_t, GET_U64)
    } else {
        ARG_LOOP(int64_t, GET_I64)
    }
}

void px_k_argmax(void *const *buf, const int64_t *p) {
    arg_kernel(0, buf, p);
}

void px_k_argmin(void *const *buf, const int64_t *p) {
    arg_kernel(1, buf, p);
}

/* ======================= Softmax / LogSoftmax / Hardmax ======================= */

/* px_k_softmax, px_k_log_softmax, px_k_hardmax:
 *   buf: [X, Y]
 *   p:   X tensor, Y tensor (same shape), outer, n, inner
 * The op acts along n with stride inner, for each of outer blocks (the
 * lowering folds opset<13 "coerce to 2-D at axis" into n = the product of
 * the trailing dims, inner = 1). Float dtypes; float16/bfloat16 go through
 * float. Hardmax marks the first maximum. */
enum { SM_SOFTMAX, SM_LOG, SM_HARD };

#define SOFTMAX_T(T, S, EXP, LOG)                                                                  \
    PX_VEC_CLONES static void softmax_##S(int kind, const T *x, T *y, int64_t outer, int64_t n,    \
                                          int64_t inner, T *m, T *s) {                             \
        for (int64_t o = 0; o < outer; o++) {                                                      \
            const T *xo = x + o * n * inner;                                                       \
            T *yo = y + o * n * inner;                                                             \
            for (int64_t k = 0; k < inner; k++) {                                                  \
                m[k] = xo[k];                                                                      \
                s[k] = 0;                                                                          \
            }                                                                                      \
            if (kind == SM_HARD) {                                                                 \
                int64_t *arg = (int64_t *)(void *)s; /* s is sized for int64 too */                \
                for (int64_t k = 0; k < inner; k++) arg[k] = 0;                                    \
                for (int64_t j = 1; j < n; j++)                                                    \
                    for (int64_t k = 0; k < inner; k++)                                            \
                        if (xo[j * inner + k] > m[k]) {                                            \
                            m[k] = xo[j * inner + k];                                              \
                            arg[k] = j;                                                            \
                        }                                                                          \
                for (int64_t j = 0; j < n; j++)                                                    \
                    for (int64_t k = 0; k < inner; k++) yo[j * inner + k] = arg[k] == j;           \
                continue;                                                                          \
            }                                                                                      \
            for (int64_t j = 1; j < n; j++)                                                        \
                for (int64_t k = 0; k < inner; k++) {                                              \
                    T v = xo[j * inner + k];                                                       \
                    m[k] = v > m[k] ? v : m[k];                                                    \
                }                                                                                  \
            if (kind == SM_SOFTMAX) {                                                              \
                for (int64_t j = 0; j < n; j++)                                                    \
                    for (int64_t k = 0; k < inner; k++) {                                          \
                        T e = EXP(xo[j * inner + k] - m[k]);                                       \
                        yo[j * inner + k] = e;                                                     \
                        s[k] += e;                                                                 \
                    }                                                                              \
                for (int64_t k = 0; k < inner; k++) s[k] = 1 / s[k];                               \
                for (int64_t j = 0; j < n; j++)                                                    \
                    for (int64_t k = 0; k < inner; k++) yo[j * inner + k] *= s[k];                 \
            } else {                                                                               \
                for (int64_t j = 0; j < n; j++)                                                    \
                    for (int64_t k = 0; k < inner; k++) s[k] += EXP(xo[j * inner + k] - m[k]);     \
                for (int64_t k = 0; k < inner; k++) s[k] = m[k] + LOG(s[k]);                       \
                for (int64_t j = 0; j < n; j++)                                                    \
                    for (int64_t k = 0; k < inner; k++)                                            \
                        yo[j * inner + k] = xo[j * inner + k] - s[k];                              \
            }                                                                                      \
        }                                                                                          \
    }

SOFTMAX_T(float, f32, expf, logf)
SOFTMAX_T(double, f64, exp, log)

/* Softmax over a contiguous last axis (inner 1) of float32: rows split
 * over the rank's threads, each row computed alone (any split, same bits). */
typedef struct softmax_rows_job {
    const float *x;
    float *y;
    int64_t n;
} softmax_rows_job;

static void softmax_rows(void *ctx, int64_t lo, int64_t hi) {
    const softmax_rows_job *j = ctx;
    for (int64_t r = lo; r < hi; r++) {
        const float *x = j->x + r * j->n;
        float *y = j->y + r * j->n;
        float m, s;
        if (!px_softmax_row_f32(x, y, j->n)) softmax_f32(SM_SOFTMAX, x, y, 1, j->n, 1, &m, &s);
    }
}

static void softmax_kernel(int kind, void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt X = px_kp_tensor(&c);
    (void)px_kp_tensor(&c);
    int64_t outer = px_kp_i64(&c), n = px_kp_i64(&c), inner = px_kp_i64(&c);
    if (X.numel == 0) return;
    if (kind == SM_SOFTMAX && X.dtype == PXK_F32 && inner == 1) {
        softmax_rows_job j = {buf[0], buf[1], n};
        px_parallel_for(outer, px_grain_for(4 * n), softmax_rows, &j);
        return;
    }
    /* scratch: running max and sum (or argmax) per inner position */
    double *scratch = malloc((size_t)inner * 2 * sizeof(double));
    if (!scratch) px_rt_fail("Softmax: out of memory");
    if (X.dtype == PXK_F64) {
        softmax_f64(kind, buf[0], buf[1], outer, n, inner, scratch, scratch + inner);
    } else if (X.dtype == PXK_F32) {
        float *m = (float *)(void *)scratch, *s = (float *)(void *)(scratch + inner);
        softmax_f32(kind, buf[0], buf[1], outer, n, inner, m, s);
    } else {
        float *x = calloc((size_t)X.numel, sizeof *x), *y = calloc((size_t)X.numel, sizeof *y);
        if (!x || !y) px_rt_fail("Softmax: out of memory");
        pxk_to_f32(buf[0], X.dtype, 0, x, X.numel);
        softmax_f32(kind, x, y, outer, n, inner, (float *)(void *)scratch,
                    (float *)(void *)(scratch + inner));
        pxk_from_f32(y, buf[1], X.dtype, 0, X.numel);
        free(x);
        free(y);
    }
    free(scratch);
}

void px_k_softmax(void *const *buf, const int64_t *p) {
    softmax_kernel(SM_SOFTMAX, buf, p);
}

void px_k_log_softmax(void *const *buf, const int64_t *p) {
    softmax_kernel(SM_LOG, buf, p);
}

void px_k_hardmax(void *const *buf, const int64_t *p) {
    softmax_kernel(SM_HARD, buf, p);
}

/* ======================= CumSum ======================= */

/* px_k_cumsum:
 *   buf: [X, AXIS or NULL, Y]
 *   p:   X tensor, Y tensor, axis, exclusive, reverse
 * With AXIS NULL the axis is the (normalized) parameter; otherwise it is
 * read at run time from the scalar AXIS, whose dtype (int32 or int64) is
 * passed as the axis parameter. */
#define CUMSUM_T(T, S)                                                                             \
    static void cumsum_##S(const T *x, T *y, int64_t outer, int64_t n, int64_t inner, int excl,    \
                           int rev) {                                                              \
        for (int64_t o = 0; o < outer; o++)                                                        \
            for (int64_t k = 0; k < inner; k++) {                                                  \
                T acc = 0;                                                                         \
                for (int64_t jj = 0; jj < n; jj++) {                                               \
                    int64_t j = rev ? n - 1 - jj : jj, idx = (o * n + j) * inner + k;              \
                    T v = x[idx];                                                                  \
                    if (excl) {                                                                    \
                        y[idx] = acc;                                                              \
                        acc += v;                                                                  \
                    } else {                                                                       \
                        acc += v;                                                                  \
                        y[idx] = acc;                                                              \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
    }
CUMSUM_T(float, f32)
CUMSUM_T(double, f64)
CUMSUM_T(int32_t, i32)
CUMSUM_T(int64_t, i64)
CUMSUM_T(uint32_t, u32)
CUMSUM_T(uint64_t, u64)

void px_k_cumsum(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt X = px_kp_tensor(&c);
    (void)px_kp_tensor(&c);
    int64_t axis = px_kp_i64(&c);
    int excl = px_kp_i64(&c) != 0, rev = px_kp_i64(&c) != 0;
    if (buf[1]) {
        int64_t a = axis == PXK_I32 ? *(const int32_t *)buf[1] : *(const int64_t *)buf[1];
        if (a < -X.rank || a >= X.rank)
            px_rt_fail("CumSum: axis %lld is out of range for a rank-%d input", (long long)a,
                       X.rank);
        axis = a < 0 ? a + X.rank : a;
    }
    int64_t outer = 1, inner = 1, n = X.rank ? X.dims[axis] : 1;
    for (int i = 0; i < axis; i++) outer *= X.dims[i];
    for (int i = (int)axis + 1; i < X.rank; i++) inner *= X.dims[i];
    if (X.numel == 0) return;
    switch (X.dtype) {
    case PXK_F32: cumsum_f32(buf[0], buf[2], outer, n, inner, excl, rev); return;
    case PXK_F64: cumsum_f64(buf[0], buf[2], outer, n, inner, excl, rev); return;
    case PXK_I32: cumsum_i32(buf[0], buf[2], outer, n, inner, excl, rev); return;
    case PXK_I64: cumsum_i64(buf[0], buf[2], outer, n, inner, excl, rev); return;
    case PXK_U32: cumsum_u32(buf[0], buf[2], outer, n, inner, excl, rev); return;
    case PXK_U64: cumsum_u64(buf[0], buf[2], outer, n, inner, excl, rev); return;
    default: {
        /* float16 / bfloat16: accumulate in float */
        float *x = calloc((size_t)X.numel, sizeof *x), *y = calloc((size_t)X.numel, sizeof *y);
        if (!x || !y) px_rt_fail("CumSum: out of memory");
        pxk_to_f32(buf[0], X.dtype, 0, x, X.numel);
        cumsum_f32(x, y, outer, n, inner, excl, rev);
        pxk_from_f32(y, buf[2], X.dtype, 0, X.numel);
        free(x);
        free(y);
    }
    }
}
