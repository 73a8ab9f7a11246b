/* Kernels of the elementwise family (see px_kernel.h for the ABI): unary
 * math, Cast, Clip, IsNaN/IsInf, broadcasting binary and variadic ops,
 * comparisons and logic, Where.
 *
 * Speed: float32/float64 (and int32/int64 where the op takes integers) run
 * typed loops over restrict pointers that the compiler vectorizes; other
 * dtypes go through float staging (float16, bfloat16) or the generic
 * element accessors of kutil.h. Broadcasting walks rows of the coalesced
 * output shape (kutil.h's pxk_bcast), so the inner loop has no division.
 *
 * Aliasing: the buffer planner may give an output the same buffer as an
 * input of the same shape (in place). Every loop reads element i before it
 * writes element i and never reads another index after writing, so exact
 * aliasing is safe; partial overlap is never planned. */
#include "kutil.h"

#include <float.h>
#include <stdlib.h>

/* The expression macros below declare a local T for the element type, which
 * not every expression uses. */
#pragma GCC diagnostic ignored "-Wunused-local-typedefs"

/* Elements staged through float at a time for float16/bfloat16. */
#define STAGE 256

/* ======================= unary float math ======================= */

/* Every unary kernel:
 *   buf: [X, Y]
 *   p:   X tensor, Y tensor (same shape), alpha (f64), beta (f64)
 * alpha/beta carry the op's attributes (0 when it has none):
 *   Celu alpha; Elu alpha; HardSigmoid alpha, beta; LeakyRelu alpha;
 *   Selu alpha, gamma (as beta); Shrink lambd, bias (as beta);
 *   ThresholdedRelu alpha.
 * Float ops accept float16, bfloat16, float, double. */
typedef void (*unary_f32_fn)(const float *restrict x, float *restrict y, int64_t n, float a,
                             float b);
typedef void (*unary_f64_fn)(const double *restrict x, double *restrict y, int64_t n, double a,
                             double b);

static void unary_float_run(const char *op, const int64_t *p, void *const *buf, unary_f32_fn f32,
                            unary_f64_fn f64) {
    px_kcur c = {p};
    px_kt X = px_kp_tensor(&c);
    (void)px_kp_tensor(&c);
    double a = px_kp_f64(&c), b = px_kp_f64(&c);
    switch (X.dtype) {
    case PXK_F32: f32(buf[0], buf[1], X.numel, (float)a, (float)b); return;
    case PXK_F64: f64(buf[0], buf[1], X.numel, a, b); return;
    case PXK_F16:
    case PXK_BF16: {
        float in[STAGE], out[STAGE];
        for (int64_t i = 0; i < X.numel; i += STAGE) {
            int64_t n = X.numel - i < STAGE ? X.numel - i : STAGE;
            pxk_to_f32(buf[0], X.dtype, i, in, n);
            f32(in, out, n, (float)a, (float)b);
            pxk_from_f32(out, buf[1], X.dtype, i, n);
        }
        return;
    }
    default: px_rt_fail("%s kernel: unsupported dtype %d", op, X.dtype);
    }
}

/* Defines px_k_NAME from an expression in x (the element), a, b and T
 * (float or double); math functions use their float/double versions. */
#define UNARY_FLOAT(NAME, OPNAME, EXPR)                                                            \
    static void NAME##_f32(const float *restrict xs, float *restrict y, int64_t n, float a,        \
                           float b) {                                                              \
        typedef float T;                                                                           \
        (void)a;                                                                                   \
        (void)b;                                                                                   \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T x = xs[i];                                                                           \
            y[i] = (T)(EXPR);                                                                      \
        }                                                                                          \
    }                                                                                              \
    static void NAME##_f64(const double *restrict xs, double *restrict y, int64_t n, double a,     \
                           double b) {                                                             \
        typedef double T;                                                                          \
        (void)a;                                                                                   \
        (void)b;                                                                                   \
        for (int64_t i = 0; i < n; i++) {                                                          \
            T x = xs[i];                                                                           \
            y[i] = (T)(EXPR);                                                                      \
        }                                                                                          \
    }                                                                                              \
    void px_k_##NAME(void *const *buf, const int64_t *p) {                                         \
        unary_float_run(OPNAME, p, buf, NAME##_f32, NAME##_f64);                                   \
    }

/* Type-generic math for the expressions (float for T=float, double otherwise). */
#define M1(fn, x) (sizeof(T) == sizeof(float) ? (T)fn##f((float)(x)) : (T)fn((double)(x)))
#define MEXP(x) M1(exp, x)
#define MLOG(x) M1(log, x)
#define MLOG1P(x) M1(log1p, x)
#define MEXPM1(x) M1(expm1, x)
#define MTANH(x) M1(tanh, x)
#define MERF(x) M1(erf, x)
#define MABS(x) M1(fabs, x)

/* Softplus without overflow: log(1 + e^x) = max(x, 0) + log1p(e^-|x|). */
#define SOFTPLUS(x) ((x) > 0 ? (x) : (T)0) + MLOG1P(MEXP(-MABS(x)))

UNARY_FLOAT(acos, "Acos", M1(acos, x))
UNARY_FLOAT(acosh, "Acosh", M1(acosh, x))
UNARY_FLOAT(asin, "Asin", M1(asin, x))
UNARY_FLOAT(asinh, "Asinh", M1(asinh, x))
UNARY_FLOAT(atan, "Atan", M1(atan, x))
UNARY_FLOAT(atanh, "Atanh", M1(atanh, x))
UNARY_FLOAT(ceil, "Ceil", M1(ceil, x))
UNARY_FLOAT(cos, "Cos", M1(cos, x))
UNARY_FLOAT(cosh, "Cosh", M1(cosh, x))
UNARY_FLOAT(erf, "Erf", MERF(x))
UNARY_FLOAT(exp, "Exp", MEXP(x))
UNARY_FLOAT(floor, "Floor", M1(floor, x))
UNARY_FLOAT(log, "Log", MLOG(x))
UNARY_FLOAT(reciprocal, "Reciprocal", (T)1 / x)
/* nearbyint rounds halves to even in the default rounding mode, as ONNX Round. */
UNARY_FLOAT(round, "Round", M1(nearbyint, x))
UNARY_FLOAT(sin, "Sin", M1(sin, x))
UNARY_FLOAT(sinh, "Sinh", M1(sinh, x))
UNARY_FLOAT(sqrt, "Sqrt", M1(sqrt, x))
UNARY_FLOAT(tan, "Tan", M1(tan, x))
UNARY_FLOAT(tanh, "Tanh", MTANH(x))
UNARY_FLOAT(sigmoid, "Sigmoid", x >= 0 ? (T)1 / ((T)1 + MEXP(-x)) : MEXP(x) / ((T)1 + MEXP(x)))
UNARY_FLOAT(softplus, "Softplus", SOFTPLUS(x))
UNARY_FLOAT(softsign, "Softsign", x / ((T)1 + MABS(x)))
UNARY_FLOAT(mish, "Mish", x *MTANH(SOFTPLUS(x)))
UNARY_FLOAT(elu, "Elu", x < 0 ? (T)a * MEXPM1(x) : x)
UNARY_FLOAT(celu, "Celu", (x > 0 ? x : (T)0) + (x < 0 ? (T)a * MEXPM1(x / (T)a) : (T)0))
UNARY_FLOAT(selu, "Selu", (T)b *(x > 0 ? x : (T)a * MEXPM1(x)))
UNARY_FLOAT(leaky_relu, "LeakyRelu", x < 0 ? (T)a * x : x)
UNARY_FLOAT(thresholded_relu, "ThresholdedRelu", x > (T)a ? x : (T)0)
UNARY_FLOAT(hard_sigmoid, "HardSigmoid",
            (T)a *x + (T)b < 0 ? (T)0 : ((T)a * x + (T)b > 1 ? (T)1 : (T)a * x + (T)b))
UNARY_FLOAT(hard_swish, "HardSwish",
            x *(x / 6 + (T)0.5 < 0 ? (T)0 : (x / 6 + (T)0.5 > 1 ? (T)1 : x / 6 + (T)0.5)))
UNARY_FLOAT(gelu, "Gelu", (T)0.5 * x * ((T)1 + MERF(x * (T)0.70710678118654752440)))
UNARY_FLOAT(gelu_tanh, "Gelu",
            (T)0.5 * x * ((T)1 + MTANH((T)0.79788456080286535588 * (x + (T)0.044715 * x * x * x))))

/* ============ unary ops that also take integers: Abs Neg Sign Relu Shrink ============ */

/* Same ABI as the float unary kernels. Integer dtypes run typed loops on the
 * expression IEXPR(x, a, b) with a, b converted to int64 (Shrink's lambd and
 * bias are whole numbers on integer inputs per ONNX's reference). */
#define INT_CASE(code, T, IEXPR)                                                                   \
    case code: {                                                                                   \
        const T *restrict xs = buf[0];                                                             \
        T *restrict y = buf[1];                                                                    \
        for (int64_t i = 0; i < X.numel; i++) {                                                    \
            T x = xs[i];                                                                           \
            y[i] = (T)(IEXPR(x, ia, ib));                                                          \
        }                                                                                          \
        return;                                                                                    \
    }

#define UNARY_NUMERIC(NAME, OPNAME, EXPR, IEXPR)                                                   \
    UNARY_FLOAT(NAME##_float, OPNAME, EXPR)                                                        \
    void px_k_##NAME(void *const *buf, const int64_t *p) {                                         \
        px_kcur c = {p};                                                                           \
        px_kt X = px_kp_tensor(&c);                                                                \
        (void)px_kp_tensor(&c);                                                                    \
        double a = px_kp_f64(&c), b = px_kp_f64(&c);                                               \
        int64_t ia = (int64_t)a, ib = (int64_t)b;                                                  \
        (void)ia;                                                                                  \
        (void)ib;                                                                                  \
        if (pxk_is_float(X.dtype)) {                                                               \
            px_k_##NAME##_float(buf, p);                                                           \
            return;                                                                                \
        }                                                                                          \
        switch (X.dtype) {                                                                         \
            PXK_INT_TYPES(INT_CASE, IEXPR)                                                         \
        default: px_rt_fail("%s kernel: unsupported dtype %d", OPNAME, X.dtype);                   \
        }                                                                                          \
    }

/* Unsigned types: x < 0 is always false, so these are identity-safe. */
/* Negation through uint64 so INT_MIN wraps (as numpy) instead of overflowing;
 * the result is narrowed to the element type by the caller. */
#define I_ABS(x, a, b) ((x) < 0 ? 0 - (uint64_t)(x) : (uint64_t)(x))
#define I_NEG(x, a, b) (0 - (uint64_t)(x))
#define I_SIGN(x, a, b) (((x) > 0) - ((x) < 0))
#define I_RELU(x, a, b) ((x) < 0 ? 0 : (x))
#define I_SHRINK(x, a, b)                                                                          \
    ((int64_t)(x) < -(a) ? (int64_t)(x) + (b) : (int64_t)(x) > (a) ? (int64_t)(x) - (b) : 0)

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtype-limits"
#pragma GCC diagnostic ignored "-Wsign-compare"
UNARY_NUMERIC(abs, "Abs", MABS(x), I_ABS)
UNARY_NUMERIC(neg, "Neg", -x, I_NEG)
UNARY_NUMERIC(sign, "Sign", (T)((x > 0) - (x < 0)) + (x != x ? x : (T)0), I_SIGN)
UNARY_NUMERIC(relu, "Relu", x < 0 ? (T)0 : x, I_RELU)
UNARY_NUMERIC(shrink, "Shrink", x < -(T)a ? x + (T)b : (x > (T)a ? x - (T)b : (T)0), I_SHRINK)
#pragma GCC diagnostic pop

/* Not:  buf [X, Y]; p: X tensor, Y tensor, alpha, beta (unused). bool only. */
void px_k_not(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt X = px_kp_tensor(&c);
    const uint8_t *restrict x = buf[0];
    uint8_t *restrict y = buf[1];
    for (int64_t i = 0; i < X.numel; i++) y[i] = !x[i];
}

/* IsNaN / IsInf:  buf [X, Y(bool)]; p: X tensor, Y tensor, alpha, beta.
 * IsInf: alpha = detect_negative, beta = detect_positive. */
void px_k_isnan(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt X = px_kp_tensor(&c);
    uint8_t *restrict y = buf[1];
    if (X.dtype == PXK_F32) {
        const float *restrict x = buf[0];
        for (int64_t i = 0; i < X.numel; i++) y[i] = x[i] != x[i];
        return;
    }
    for (int64_t i = 0; i < X.numel; i++) y[i] = isnan(pxk_get_f64(buf[0], X.dtype, i)) != 0;
}

void px_k_isinf(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt X = px_kp_tensor(&c);
    (void)px_kp_tensor(&c);
    int neg = px_kp_f64(&c) != 0, pos = px_kp_f64(&c) != 0;
    uint8_t *restrict y = buf[1];
    for (int64_t i = 0; i < X.numel; i++) {
        double v = pxk_get_f64(buf[0], X.dtype, i);
        y[i] = (pos && v == INFINITY) || (neg && v == -INFINITY);
    }
}

/* ======================= Cast ======================= */

/* Cast / CastLike:  buf [X, Y]; p: X tensor, Y tensor (same shape, Y.dtype
 * the target). Numeric dtypes and bool, all pairs. Float to integer
 * truncates toward zero (NaN and out-of-range give 0, not undefined
 * behaviour); anything to bool is x != 0; float16/bfloat16 round to
 * nearest even. */
#define CAST_TO(code, T, SRC)                                                                      \
    case code: {                                                                                   \
        T *restrict y = vy;                                                                        \
        for (int64_t i = 0; i < n; i++) y[i] = (T)x[i];                                            \
        return;                                                                                    \
    }

/* Same-kind conversions that are always defined in C: typed loops. */
#define CAST_FROM_INT(NAME, S)                                                                     \
    static int NAME(const void *vx, void *vy, int ydt, int64_t n) {                                \
        const S *restrict x = vx;                                                                  \
        switch (ydt) {                                                                             \
            PXK_INT_TYPES(CAST_TO, S)                                                              \
        case PXK_F32: {                                                                            \
            float *restrict y = vy;                                                                \
            for (int64_t i = 0; i < n; i++) y[i] = (float)x[i];                                    \
            return 1;                                                                              \
        }                                                                                          \
        case PXK_F64: {                                                                            \
            double *restrict y = vy;                                                               \
            for (int64_t i = 0; i < n; i++) y[i] = (double)x[i];                                   \
            return 1;                                                                              \
        }                                                                                          \
        case PXK_BOOL: {                                                                           \
            uint8_t *restrict y = vy;                                                              \
            for (int64_t i = 0; i < n; i++) y[i] = x[i] != 0;                                      \
            return 1;                                                                              \
        }                                                                                          \
        default: return 0;                                                                         \
        }                                                                                          \
    }
#undef CAST_TO
#define CAST_TO(code, T, SRC)                                                                      \
    case code: {                                                                                   \
        T *restrict y = vy;                                                                        \
        for (int64_t i = 0; i < n; i++) y[i] = (T)x[i];                                            \
        return 1;                                                                                  \
    }
CAST_FROM_INT(cast_from_i8, int8_t)
CAST_FROM_INT(cast_from_i16, int16_t)
CAST_FROM_INT(cast_from_i32, int32_t)
CAST_FROM_INT(cast_from_i64, int64_t)
CAST_FROM_INT(cast_from_u8, uint8_t)
CAST_FROM_INT(cast_from_u16, uint16_t)
CAST_FROM_INT(cast_from_u32, uint32_t)
CAST_FROM_INT(cast_from_u64, uint64_t)

static int cast_fast(int xdt, const void *x, int ydt, void *y, int64_t n) {
    if (xdt == ydt) {
        memcpy(y, x, (size_t)n * (size_t)pxk_dtype_size(xdt));
        return 1;
    }
    if (xdt == PXK_F32 && ydt == PXK_F64) {
        const float *restrict a = x;
        double *restrict b = y;
        for (int64_t i = 0; i < n; i++) b[i] = a[i];
        return 1;
    }
    if (xdt == PXK_F64 && ydt == PXK_F32) {
        const double *restrict a = x;
        float *restrict b = y;
        for (int64_t i = 0; i < n; i++) b[i] = (float)a[i];
        return 1;
    }
    switch (xdt) {
    case PXK_I8: return cast_from_i8(x, y, ydt, n);
    case PXK_I16: return cast_from_i16(x, y, ydt, n);
    case PXK_I32: return cast_from_i32(x, y, ydt, n);
    case PXK_I64: return cast_from_i64(x, y, ydt, n);
    case PXK_U8:
    case PXK_BOOL: return cast_from_u8(x, y, ydt, n);
    case PXK_U16: return cast_from_u16(x, y, ydt, n);
    case PXK_U32: return cast_from_u32(x, y, ydt, n);
    case PXK_U64: return cast_from_u64(x, y, ydt, n);
    default: return 0;
    }
}

/* double -> float16/bfloat16 rounded once: double -> float is exact to
 * 24 bits, and only when that float lies exactly half-way between two
 * halves does the dropped remainder decide the direction. */
static uint16_t f64_to_half(double v, int f16) {
    float f = (float)v;
    uint16_t (*cvt)(float) = f16 ? pxk_f32_to_f16 : pxk_f32_to_bf16;
    double err = v - (double)f;
    if (err == 0 || f != f) return cvt(f);
    uint16_t up = cvt(nextafterf(f, INFINITY)), down = cvt(nextafterf(f, -INFINITY));
    if (up != down) return err > 0 ? up : down;
    return cvt(f);
}

void px_k_cast(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt X = px_kp_tensor(&c), Y = px_kp_tensor(&c);
    if (cast_fast(X.dtype, buf[0], Y.dtype, buf[1], X.numel)) return;
    if (pxk_is_float(X.dtype) && !pxk_is_float(Y.dtype) && Y.dtype != PXK_BOOL) {
        /* float -> integer: truncate (through int64, then wrap to the width,
         * like numpy on x86); uint64 keeps values above INT64_MAX. */
        for (int64_t i = 0; i < X.numel; i++) {
            double v = pxk_get_f64(buf[0], X.dtype, i);
            if (Y.dtype == PXK_U64 && v >= 9.2e18 && v < 1.8446744073709552e19)
                ((uint64_t *)buf[1])[i] = (uint64_t)v;
            else
                pxk_set_i64(buf[1], Y.dtype, i, (v > -9.2e18 && v < 9.2e18) ? (int64_t)v : 0);
        }
        return;
    }
    if (Y.dtype == PXK_BOOL) {
        uint8_t *y = buf[1];
        for (int64_t i = 0; i < X.numel; i++) y[i] = pxk_get_f64(buf[0], X.dtype, i) != 0;
        return;
    }
    if (X.dtype == PXK_I64 || X.dtype == PXK_U64) { /* to float16/bfloat16: through double */
        for (int64_t i = 0; i < X.numel; i++)
            pxk_set_f64(buf[1], Y.dtype, i, pxk_get_f64(buf[0], X.dtype, i));
        return;
    }
    /* the rest involve float16/bfloat16 and a source that float holds exactly */
    if (X.dtype == PXK_F64) { /* to float16/bfloat16 with a single rounding */
        const double *x = buf[0];
        uint16_t *y = buf[1];
        for (int64_t i = 0; i < X.numel; i++) y[i] = f64_to_half(x[i], Y.dtype == PXK_F16);
        return;
    }
    for (int64_t i = 0; i < X.numel; i++)
        pxk_set_f64(buf[1], Y.dtype, i, (float)pxk_get_f64(buf[0], X.dtype, i));
}

/* ======================= Clip ======================= */

/* Clip:  buf [X, MIN or NULL, MAX or NULL, Y]
 *        p: X tensor, Y tensor, lo, hi
 * lo/hi are the bounds used when MIN/MAX are NULL: f64 bits for float
 * dtypes, int64 for integer dtypes (the lowering passes the type's range
 * for an absent bound). MIN/MAX buffers hold one element of X's dtype.
 * y = min(max(x, lo), hi): with lo > hi every element becomes hi; NaN stays. */
#define CLIP_INT(code, T, unused)                                                                  \
    case code: {                                                                                   \
        const T *restrict x = buf[0];                                                              \
        T *restrict y = buf[3];                                                                    \
        T lo = buf[1] ? *(const T *)buf[1] : (T)ilo, hi = buf[2] ? *(const T *)buf[2] : (T)ihi;    \
        for (int64_t i = 0; i < X.numel; i++) {                                                    \
            T v = x[i] < lo ? lo : x[i];                                                           \
            y[i] = v > hi ? hi : v;                                                                \
        }                                                                                          \
        return;                                                                                    \
    }

void px_k_clip(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt X = px_kp_tensor(&c);
    (void)px_kp_tensor(&c);
    if (!pxk_is_float(X.dtype)) {
        int64_t ilo = px_kp_i64(&c), ihi = px_kp_i64(&c);
        switch (X.dtype) {
            PXK_INT_TYPES(CLIP_INT, 0)
        default: px_rt_fail("Clip kernel: unsupported dtype %d", X.dtype);
        }
    }
    double lo = px_kp_f64(&c), hi = px_kp_f64(&c);
    if (buf[1]) lo = pxk_get_f64(buf[1], X.dtype, 0);
    if (buf[2]) hi = pxk_get_f64(buf[2], X.dtype, 0);
    if (X.dtype == PXK_F32) {
        const float *restrict x = buf[0];
        float *restrict y = buf[3];
        float flo = (float)lo, fhi = (float)hi;
        for (int64_t i = 0; i < X.numel; i++) {
            float v = x[i] < flo ? flo : x[i];
            y[i] = v > fhi ? fhi : v;
        }
        return;
    }
    for (int64_t i = 0; i < X.numel; i++) {
        double v = pxk_get_f64(buf[0], X.dtype, i);
        v = v < lo ? lo : v;
        pxk_set_f64(buf[3], X.dtype, i, v > hi ? hi : v);
    }
}

/* ======================= broadcasting binary ops ======================= */

/* Every binary kernel px_k_NAME:
 *   buf: [A, B, C]
 *   p:   A tensor, B tensor, C tensor
 * A and B have the same dtype and shapes that numpy-broadcast to C's (the
 * lowering aligns legacy opset<7 `axis` broadcasting into plain numpy
 * shapes). Arithmetic ops write C in the input dtype, comparisons and logic
 * write bool.
 *
 * A row function computes n elements of one broadcast row; sa/sb are the
 * inputs' strides along it (0: one repeated element, 1: contiguous). */
typedef void (*bin_row)(const void *a, int64_t sa, const void *b, int64_t sb, void *c, int64_t n);

typedef struct binop {
    const char *name;
    int to_bool; /* output is bool */
    bin_row f32, f64, i32, i64, u8;
    double (*ef)(double, double);    /* generic path for other float dtypes (through float) */
    int64_t (*ei)(int64_t, int64_t); /* generic path for other integer dtypes */
} binop;

/* Row function for one C type: the four stride cases as separate loops so
 * each one vectorizes. */
#define BIN_ROW(NAME, TIN, TOUT, EXPR)                                                             \
    static void NAME(const void *va, int64_t sa, const void *vb, int64_t sb, void *vc,             \
                     int64_t n) {                                                                  \
        typedef TIN T;                                                                             \
        const TIN *restrict pa = va;                                                               \
        const TIN *restrict pb = vb;                                                               \
        TOUT *restrict pc = vc;                                                                    \
        if (sa && sb)                                                                              \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T x = pa[i], y = pb[i];                                                            \
                pc[i] = (TOUT)(EXPR);                                                              \
            }                                                                                      \
        else if (sa) {                                                                             \
            T y = pb[0];                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T x = pa[i];                                                                       \
                pc[i] = (TOUT)(EXPR);                                                              \
            }                                                                                      \
        } else if (sb) {                                                                           \
            T x = pa[0];                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                      \
                T y = pb[i];                                                                       \
                pc[i] = (TOUT)(EXPR);                                                              \
            }                                                                                      \
        } else {                                                                                   \
            T x = pa[0], y = pb[0];                                                                \
            TOUT v = (TOUT)(EXPR);                                                                 \
            for (int64_t i = 0; i < n; i++) pc[i] = v;                                             \
        }                                                                                          \
    }

/* Applies op to A, B (any shapes broadcasting to C's) into C. */
static void bin_apply(const binop *op, const px_kt *A, const void *a, const px_kt *B, const void *b,
                      const px_kt *C, void *c) {
    px_kt ops[3] = {*C, *A, *B};
    pxk_bcast it;
    pxk_bcast_init(&it, C->rank, C->dims, 3, ops);
    int dt = A->dtype, cdt = op->to_bool ? PXK_BOOL : dt;
    size_t ia = (size_t)pxk_dtype_size(dt), ic = (size_t)pxk_dtype_size(cdt);
    bin_row row = NULL;
    switch (dt) {
    case PXK_F32: row = op->f32; break;
    case PXK_F64: row = op->f64; break;
    case PXK_I32: row = op->i32; break;
    case PXK_I64: row = op->i64; break;
    case PXK_U8:
    case PXK_BOOL: row = op->u8; break;
    default: break;
    }
    int64_t sa = it.inner_stride[1], sb = it.inner_stride[2], n = it.inner;
    pxk_bcast_pos pos = {0};
    for (int64_t r = 0; r < it.rows; r++, pxk_bcast_next(&it, &pos)) {
        const char *ra = (const char *)a + (size_t)pos.off[1] * ia;
        const char *rb = (const char *)b + (size_t)pos.off[2] * ia;
        char *rc = (char *)c + (size_t)pos.off[0] * ic;
        if (row) {
            row(ra, sa, rb, sb, rc, n);
        } else if ((dt == PXK_F16 || dt == PXK_BF16) && op->f32) {
            /* stage through float in chunks, using the float32 row */
            float fa[STAGE], fb[STAGE], fc[STAGE];
            for (int64_t i = 0; i < n; i += STAGE) {
                int64_t m = n - i < STAGE ? n - i : STAGE;
                pxk_to_f32(ra, dt, sa ? i : 0, fa, sa ? m : 1);
                pxk_to_f32(rb, dt, sb ? i : 0, fb, sb ? m : 1);
                if (op->to_bool)
                    op->f32(fa, sa, fb, sb, (uint8_t *)rc + i, m);
                else {
                    op->f32(fa, sa, fb, sb, fc, m);
                    pxk_from_f32(fc, rc, dt, i, m);
                }
            }
        } else if (pxk_is_float(dt) && op->ef) {
            for (int64_t i = 0; i < n; i++)
                pxk_set_f64(rc, cdt, i,
                            op->ef(pxk_get_f64(ra, dt, i * sa), pxk_get_f64(rb, dt, i * sb)));
        } else if (!pxk_is_float(dt) && op->ei) {
            for (int64_t i = 0; i < n; i++)
                pxk_set_i64(rc, cdt, i,
                            op->ei(pxk_get_i64(ra, dt, i * sa), pxk_get_i64(rb, dt, i * sb)));
        } else {
            px_rt_fail("%s kernel: unsupported dtype %d", op->name, dt);
        }
    }
}

static void bin_kernel(const binop *op, void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt A = px_kp_tensor(&c), B = px_kp_tensor(&c), C = px_kp_tensor(&c);
    bin_apply(op, &A, buf[0], &B, buf[1], &C, buf[2]);
}

/* Defines the rows, the generic element functions and px_k_NAME for an
 * arithmetic op: FEXPR on floats, IEXPR on integers (x, y operands). */
#define BINARY_ARITH(NAME, OPNAME, FEXPR, IEXPR)                                                   \
    BIN_ROW(NAME##_f32, float, float, FEXPR)                                                       \
    BIN_ROW(NAME##_f64, double, double, FEXPR)                                                     \
    BIN_ROW(NAME##_i32, int32_t, int32_t, IEXPR)                                                   \
    BIN_ROW(NAME##_i64, int64_t, int64_t, IEXPR)                                                   \
    static double NAME##_ef(double x, double y) {                                                  \
        typedef double T;                                                                          \
        return FEXPR;                                                                              \
    }                                                                                              \
    static int64_t NAME##_ei(int64_t x, int64_t y) {                                               \
        typedef int64_t T;                                                                         \
        return IEXPR;                                                                              \
    }                                                                                              \
    static const binop NAME##_op = {OPNAME,     0,    NAME##_f32, NAME##_f64, NAME##_i32,          \
                                    NAME##_i64, NULL, NAME##_ef,  NAME##_ei};

/* Integer division and remainder: zero divisors end the program (C would
 * trap or be undefined); INT_MIN / -1 wraps as on two's complement. */
static int64_t idiv(int64_t x, int64_t y) {
    if (y == 0) px_rt_fail("Div: integer division by zero");
    if (y == -1) return (int64_t)(0 - (uint64_t)x);
    return x / y;
}

static int64_t imod_trunc(int64_t x, int64_t y) {
    if (y == 0) px_rt_fail("Mod: integer modulo by zero");
    if (y == -1) return 0;
    return x % y;
}

/* fmod=0: the result has the divisor's sign (Python / numpy.mod). */
static int64_t imod_floor(int64_t x, int64_t y) {
    int64_t r = imod_trunc(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
}

static double fmod_floor(double x, double y) {
    double r = fmod(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
}

/* Max/Min propagate NaN like numpy.maximum/minimum. */
#define NAN_MAX(x, y) ((x) != (x) || (x) > (y) ? (x) : (y))
#define NAN_MIN(x, y) ((x) != (x) || (x) < (y) ? (x) : (y))

/* x86 wraps int overflow in practice but C does not promise it: add, sub and
 * mul go through unsigned arithmetic. */
#define WRAP(op, x, y) ((T)((uint64_t)(int64_t)(x)op(uint64_t)(int64_t)(y)))

BINARY_ARITH(add, "Add", x + y, WRAP(+, x, y))
BINARY_ARITH(sub, "Sub", x - y, WRAP(-, x, y))
BINARY_ARITH(mul, "Mul", x *y, WRAP(*, x, y))
BINARY_ARITH(div, "Div", x / y, (T)idiv(x, y))
BINARY_ARITH(max, "Max", NAN_MAX(x, y), NAN_MAX(x, y))
BINARY_ARITH(min, "Min", NAN_MIN(x, y), NAN_MIN(x, y))
BINARY_ARITH(mod, "Mod", (T)fmod_floor(x, y), (T)imod_floor(x, y))
BINARY_ARITH(fmod, "Mod", (T)fmod(x, y), (T)imod_trunc(x, y))
/* PRelu: B is the slope, broadcast to A's shape. */
BINARY_ARITH(prelu, "PRelu", x < 0 ? x * y : x, x < 0 ? WRAP(*, x, y) : x)

#define EXPORT_BINARY(NAME)                                                                        \
    void px_k_##NAME(void *const *buf, const int64_t *p) {                                         \
        bin_kernel(&NAME##_op, buf, p);                                                            \
    }
EXPORT_BINARY(add)
EXPORT_BINARY(sub)
EXPORT_BINARY(mul)
EXPORT_BINARY(prelu)

/* Unsigned integers through int64 would get Div, Mod, Max and Min wrong
 * above INT64_MAX, and the smaller unsigned types sign-extend fine; uint64
 * gets its own element functions. */
#define UBIN(NAME, EXPR)                                                                           \
    static void NAME(const px_kt *A, const void *va, const px_kt *B, const void *vb,               \
                     const px_kt *C, void *vc) {                                                   \
        const uint64_t *a = va, *b = vb;                                                           \
        uint64_t *c = vc;                                                                          \
        px_kt ops[3] = {*C, *A, *B};                                                               \
        pxk_bcast it;                                                                              \
        pxk_bcast_init(&it, C->rank, C->dims, 3, ops);                                             \
        pxk_bcast_pos pos = {0};                                                                   \
        for (int64_t r = 0; r < it.rows; r++, pxk_bcast_next(&it, &pos))                           \
            for (int64_t i = 0; i < it.inner; i++) {                                               \
                uint64_t x = a[pos.off[1] + i * it.inner_stride[1]];                               \
                uint64_t y = b[pos.off[2] + i * it.inner_stride[2]];                               \
                c[pos.off[0] + i] = (EXPR);                                                        \
            }                                                                                      \
    }
static uint64_t udiv_checked(uint64_t x, uint64_t y, const char *op) {
    if (y == 0) px_rt_fail("%s: integer division by zero", op);
    return x / y;
}
UBIN(u64_div, udiv_checked(x, y, "Div"))
UBIN(u64_mod, x - udiv_checked(x, y, "Mod") * y)
UBIN(u64_max, x > y ? x : y)
UBIN(u64_min, x < y ? x : y)

/* Binary kernels whose uint64 case needs the unsigned path. */
#define BINARY_WITH_U64(NAME, UFN)                                                                 \
    void px_k_##NAME(void *const *buf, const int64_t *p) {                                         \
        px_kcur c = {p};                                                                           \
        px_kt A = px_kp_tensor(&c), B = px_kp_tensor(&c), C = px_kp_tensor(&c);                    \
        if (A.dtype == PXK_U64)                                                                    \
            UFN(&A, buf[0], &B, buf[1], &C, buf[2]);                                               \
        else                                                                                       \
            bin_apply(&NAME##_op, &A, buf[0], &B, buf[1], &C, buf[2]);                             \
    }
BINARY_WITH_U64(div, u64_div)
BINARY_WITH_U64(mod, u64_mod)
BINARY_WITH_U64(fmod, u64_mod)
BINARY_WITH_U64(max, u64_max)
BINARY_WITH_U64(min, u64_min)

/* ---- Pow: base and exponent may differ in dtype; C takes the base's ---- */

/* Pow:  buf [A (base), B (exponent), C]; p: A tensor, B tensor, C tensor. */
static int64_t ipow(int64_t x, int64_t e) {
    if (e < 0) return x == 1 ? 1 : x == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)x;
    while (e) {
        if (e & 1) r *= b;
        b *= b;
        e >>= 1;
    }
    return (int64_t)r;
}

BIN_ROW(pow_f32, float, float, powf(x, y))
BIN_ROW(pow_f64, double, double, pow(x, y))

void px_k_pow(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt A = px_kp_tensor(&c), B = px_kp_tensor(&c), C = px_kp_tensor(&c);
    px_kt ops[3] = {C, A, B};
    pxk_bcast it;
    pxk_bcast_init(&it, C.rank, C.dims, 3, ops);
    int same = A.dtype == B.dtype;
    bin_row row = same && A.dtype == PXK_F32 ? pow_f32 : same && A.dtype == PXK_F64 ? pow_f64 : 0;
    size_t ea = (size_t)pxk_dtype_size(A.dtype), eb = (size_t)pxk_dtype_size(B.dtype);
    int int_pow = !pxk_is_float(A.dtype) && !pxk_is_float(B.dtype);
    pxk_bcast_pos pos = {0};
    for (int64_t r = 0; r < it.rows; r++, pxk_bcast_next(&it, &pos)) {
        const char *ra = (const char *)buf[0] + (size_t)pos.off[1] * ea;
        const char *rb = (const char *)buf[1] + (size_t)pos.off[2] * eb;
        char *rc = (char *)buf[2] + (size_t)pos.off[0] * ea;
        if (row) {
            row(ra, it.inner_stride[1], rb, it.inner_stride[2], rc, it.inner);
            continue;
        }
        for (int64_t i = 0; i < it.inner; i++) {
            int64_t ja = i * it.inner_stride[1], jb = i * it.inner_stride[2];
            if (int_pow)
                pxk_set_i64(rc, C.dtype, i,
                            ipow(pxk_get_i64(ra, A.dtype, ja), pxk_get_i64(rb, B.dtype, jb)));
            else
                pxk_set_f64(rc, C.dtype, i,
                            pow(pxk_get_f64(ra, A.dtype, ja), pxk_get_f64(rb, B.dtype, jb)));
        }
    }
}

/* ---- comparisons and logic: C is bool ---- */

#define BINARY_CMP(NAME, OPNAME, EXPR)                                                             \
    BIN_ROW(NAME##_f32, float, uint8_t, EXPR)                                                      \
    BIN_ROW(NAME##_f64, double, uint8_t, EXPR)                                                     \
    BIN_ROW(NAME##_i32, int32_t, uint8_t, EXPR)                                                    \
    BIN_ROW(NAME##_i64, int64_t, uint8_t, EXPR)                                                    \
    BIN_ROW(NAME##_u8, uint8_t, uint8_t, EXPR)                                                     \
    static double NAME##_ef(double x, double y) {                                                  \
        return (EXPR);                                                                             \
    }                                                                                              \
    static int64_t NAME##_ei(int64_t x, int64_t y) {                                               \
        return (EXPR);                                                                             \
    }                                                                                              \
    static const binop NAME##_op = {OPNAME,     1,         NAME##_f32, NAME##_f64, NAME##_i32,     \
                                    NAME##_i64, NAME##_u8, NAME##_ef,  NAME##_ei};                 \
    void px_k_##NAME(void *const *buf, const int64_t *p) {                                         \
        px_kcur c = {p};                                                                           \
        px_kt A = px_kp_tensor(&c), B = px_kp_tensor(&c), C = px_kp_tensor(&c);                    \
        if (A.dtype == PXK_U64) {                                                                  \
            px_kt ops[3] = {C, A, B};                                                              \
            pxk_bcast it;                                                                          \
            pxk_bcast_init(&it, C.rank, C.dims, 3, ops);                                           \
            const uint64_t *a = buf[0], *b = buf[1];                                               \
            uint8_t *o = buf[2];                                                                   \
            pxk_bcast_pos pos = {0};                                                               \
            for (int64_t r = 0; r < it.rows; r++, pxk_bcast_next(&it, &pos))                       \
                for (int64_t i = 0; i < it.inner; i++) {                                           \
                    uint64_t x = a[pos.off[1] + i * it.inner_stride[1]];                           \
                    uint64_t y = b[pos.off[2] + i * it.inner_stride[2]];                           \
                    o[pos.off[0] + i] = (EXPR);                                                    \
                }                                                                                  \
            return;                                                                                \
        }                                                                                          \
        bin_apply(&NAME##_op, &A, buf[0], &B, buf[1], &C, buf[2]);                                 \
    }

BINARY_CMP(equal, "Equal", x == y)
BINARY_CMP(greater, "Greater", x > y)
BINARY_CMP(greater_equal, "GreaterOrEqual", x >= y)
BINARY_CMP(less, "Less", x < y)
BINARY_CMP(less_equal, "LessOrEqual", x <= y)
/* And / Or / Xor take bool only (one byte, 0 or 1). */
BINARY_CMP(and, "And", (x != 0) & (y != 0))
BINARY_CMP(or, "Or", (x != 0) | (y != 0))
BINARY_CMP(xor, "Xor", (x != 0) ^ (y != 0))

/* ======================= variadic Max Min Sum Mean ======================= */

/* px_k_max_n, px_k_min_n, px_k_sum_n, px_k_mean_n:
 *   buf: [X0 .. X(n-1), Y]
 *   p:   n, X0 tensor .. X(n-1) tensor, Y tensor
 * n >= 1; inputs share a dtype and broadcast to Y. Folds left to right
 * into Y (Y = X0 op X1, then Y = Y op Xk); Mean then divides by n. */
static void copy_broadcast(const px_kt *X, const void *x, const px_kt *Y, void *y) {
    px_kt ops[2] = {*Y, *X};
    pxk_bcast it;
    pxk_bcast_init(&it, Y->rank, Y->dims, 2, ops);
    size_t es = (size_t)pxk_dtype_size(Y->dtype);
    pxk_bcast_pos pos = {0};
    for (int64_t r = 0; r < it.rows; r++, pxk_bcast_next(&it, &pos)) {
        char *dst = (char *)y + (size_t)pos.off[0] * es;
        const char *src = (const char *)x + (size_t)pos.off[1] * es;
        if (it.inner_stride[1])
            memmove(dst, src, (size_t)it.inner * es);
        else
            for (int64_t i = 0; i < it.inner; i++) memcpy(dst + (size_t)i * es, src, es);
    }
}

typedef void (*bin_apply_fn)(const px_kt *A, const void *a, const px_kt *B, const void *b,
                             const px_kt *C, void *c);

/* The compiler's limit on buffers per kernel call (compiler/codegen/lower.h). */
#define VARIADIC_MAX 32

static void variadic(const binop *op, bin_apply_fn u64, void *const *buf, const int64_t *p,
                     int mean) {
    px_kcur c = {p};
    int n = (int)px_kp_i64(&c);
    px_kt X[VARIADIC_MAX];
    for (int i = 0; i < n; i++) X[i] = px_kp_tensor(&c);
    px_kt Y = px_kp_tensor(&c);
    void *y = buf[n];
    if (n == 1) copy_broadcast(&X[0], buf[0], &Y, y);
    for (int i = 1; i < n; i++) {
        const px_kt *A = i == 1 ? &X[0] : &Y;
        const void *a = i == 1 ? buf[0] : y;
        if (u64 && Y.dtype == PXK_U64)
            u64(A, a, &X[i], buf[i], &Y, y);
        else
            bin_apply(op, A, a, &X[i], buf[i], &Y, y);
    }
    if (mean && n > 1) {
        if (Y.dtype == PXK_F32) {
            float *restrict v = y, s = 1.0f / (float)n;
            for (int64_t i = 0; i < Y.numel; i++) v[i] *= s;
        } else
            for (int64_t i = 0; i < Y.numel; i++)
                pxk_set_f64(y, Y.dtype, i, pxk_get_f64(y, Y.dtype, i) / n);
    }
}

void px_k_max_n(void *const *buf, const int64_t *p) {
    variadic(&max_op, u64_max, buf, p, 0);
}
void px_k_min_n(void *const *buf, const int64_t *p) {
    variadic(&min_op, u64_min, buf, p, 0);
}
void px_k_sum_n(void *const *buf, const int64_t *p) {
    variadic(&add_op, NULL, buf, p, 0);
}
void px_k_mean_n(void *const *buf, const int64_t *p) {
    variadic(&add_op, NULL, buf, p, 1);
}

/* ======================= Where ======================= */

/* Where:  buf [COND(bool), X, Y, Z]; p: COND tensor, X tensor, Y tensor, Z tensor.
 * Any dtype (copied by element size); the three inputs broadcast to Z. */
void px_k_where(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt Cd = px_kp_tensor(&c), X = px_kp_tensor(&c), Y = px_kp_tensor(&c), Z = px_kp_tensor(&c);
    px_kt ops[4] = {Z, Cd, X, Y};
    pxk_bcast it;
    pxk_bcast_init(&it, Z.rank, Z.dims, 4, ops);
    size_t es = (size_t)pxk_dtype_size(Z.dtype);
    const uint8_t *cond = buf[0];
    int64_t sc = it.inner_stride[1], sx = it.inner_stride[2], sy = it.inner_stride[3];
    pxk_bcast_pos pos = {0};
    for (int64_t r = 0; r < it.rows; r++, pxk_bcast_next(&it, &pos)) {
        const uint8_t *rc = cond + pos.off[1];
        const char *rx = (const char *)buf[1] + (size_t)pos.off[2] * es;
        const char *ry = (const char *)buf[2] + (size_t)pos.off[3] * es;
        char *rz = (char *)buf[3] + (size_t)pos.off[0] * es;
        if (es == 4 && sc && sx && sy) { /* the common float32 case, vectorizable */
            const uint32_t *restrict a = (const uint32_t *)rx, *restrict b = (const uint32_t *)ry;
            uint32_t *restrict z = (uint32_t *)rz;
            for (int64_t i = 0; i < it.inner; i++) z[i] = rc[i] ? a[i] : b[i];
            continue;
        }
        for (int64_t i = 0; i < it.inner; i++)
            memcpy(rz + (size_t)i * es,
                   rc[i * sc] ? rx + (size_t)(i * sx) * es : ry + (size_t)(i * sy) * es, es);
    }
}
