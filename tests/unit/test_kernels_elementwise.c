/* Direct checks of the elementwise and reduce kernels against hand-computed
 * numbers: broadcasting edge cases, integer Div/Mod signs, Round half to
 * even, float16 rounding, empty tensors. Kernels are called by name through
 * the registry with parameters written as the lowerings write them. */
#include "kernels/thread_pool.h"
#include "px_kernel.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

enum { F32 = 1, U8 = 2, I32 = 6, I64 = 7, BOOL = 9, F16 = 10, U64 = 13 };

typedef struct params {
    int64_t v[128];
    int n;
} params;

/* Appends a tensor descriptor: dtype, rank, dims. */
static void tensor(params *p, int dtype, int rank, ...) {
    va_list ap;
    va_start(ap, rank);
    p->v[p->n++] = dtype;
    p->v[p->n++] = rank;
    for (int i = 0; i < rank; i++) p->v[p->n++] = va_arg(ap, int64_t);
    va_end(ap);
}

static void i64(params *p, int64_t x) {
    p->v[p->n++] = x;
}

static void f64(params *p, double x) {
    memcpy(&p->v[p->n++], &x, sizeof x);
}

/* Reduce kernels: keepdims, noop, AXES dtype, AXES count (unused without AXES). */
static void const_axes_tail(params *p) {
    for (int i = 0; i < 4; i++) i64(p, 0);
}

static void call(const char *name, void **buf, const params *p) {
    px_kernel_fn fn = px_kernel_find(name);
    cr_assert(fn, "no kernel %s", name);
    fn(buf, p->v);
}

Test(kernels, add_broadcasts_both_sides) {
    /* A [2,1,3] + B [4,1] -> C [2,4,3]; C[i][j][k] = A[i][0][k] + B[j][0] */
    float a[6] = {0, 1, 2, 10, 11, 12}, b[4] = {100, 200, 300, 400}, c[24];
    params p = {0};
    tensor(&p, F32, 3, (int64_t)2, (int64_t)1, (int64_t)3);
    tensor(&p, F32, 2, (int64_t)4, (int64_t)1);
    tensor(&p, F32, 3, (int64_t)2, (int64_t)4, (int64_t)3);
    void *buf[3] = {a, b, c};
    call("px_k_add", buf, &p);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 3; k++)
                cr_assert_float_eq(c[(i * 4 + j) * 3 + k], a[i * 3 + k] + b[j], 0, "C[%d][%d][%d]",
                                   i, j, k);
}

Test(kernels, sub_scalar_on_the_left) {
    /* rank-0 A minus [3] */
    float a = 10, b[3] = {1, 2, 3}, c[3];
    params p = {0};
    tensor(&p, F32, 0);
    tensor(&p, F32, 1, (int64_t)3);
    tensor(&p, F32, 1, (int64_t)3);
    void *buf[3] = {&a, b, c};
    call("px_k_sub", buf, &p);
    cr_assert(c[0] == 9 && c[1] == 8 && c[2] == 7);
}

Test(kernels, integer_div_truncates_and_mod_signs) {
    int32_t a[4] = {7, -7, 7, -7}, b[4] = {2, 2, -2, -2}, c[4];
    params p = {0};
    for (int i = 0; i < 3; i++) tensor(&p, I32, 1, (int64_t)4);
    void *buf[3] = {a, b, c};
    call("px_k_div", buf, &p);
    int32_t div[4] = {3, -3, -3, 3};
    cr_assert_arr_eq(c, div, sizeof div);

    int32_t m[4] = {3, 3, -3, -3};
    buf[1] = m;
    call("px_k_mod", buf, &p); /* fmod=0: sign of the divisor (Python %) */
    int32_t py[4] = {1, 2, -2, -1};
    cr_assert_arr_eq(c, py, sizeof py);
    call("px_k_fmod", buf, &p); /* fmod=1: sign of the dividend (C %) */
    int32_t cm[4] = {1, -1, 1, -1};
    cr_assert_arr_eq(c, cm, sizeof cm);
}

Test(kernels, float_mod_follows_divisor_sign) {
    float a[2] = {-4.5f, 4.5f}, b[2] = {2, -2}, c[2];
    params p = {0};
    for (int i = 0; i < 3; i++) tensor(&p, F32, 1, (int64_t)2);
    void *buf[3] = {a, b, c};
    call("px_k_mod", buf, &p);
    cr_assert(c[0] == 1.5f && c[1] == -1.5f, "got %g %g", c[0], c[1]);
    call("px_k_fmod", buf, &p);
    cr_assert(c[0] == -0.5f && c[1] == 0.5f, "got %g %g", c[0], c[1]);
}

Test(kernels, round_half_to_even) {
    float x[8] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, 2.6f, -2.5f}, y[8];
    float want[8] = {0, 2, 2, -0.0f, -2, 2, 3, -2};
    params p = {0};
    tensor(&p, F32, 1, (int64_t)8);
    tensor(&p, F32, 1, (int64_t)8);
    f64(&p, 0);
    f64(&p, 0);
    void *buf[2] = {x, y};
    call("px_k_round", buf, &p);
    for (int i = 0; i < 8; i++) cr_assert(y[i] == want[i], "round(%g) = %g", x[i], y[i]);
}

Test(kernels, max_uint64_above_int64_range) {
    uint64_t a[2] = {UINT64_C(9223372036854775809), 3}, b[2] = {5, UINT64_C(18446744073709551615)};
    uint64_t c[2];
    params p = {0};
    for (int i = 0; i < 3; i++) tensor(&p, U64, 1, (int64_t)2);
    void *buf[3] = {a, b, c};
    call("px_k_max", buf, &p);
    cr_assert(c[0] == a[0] && c[1] == b[1]);
}

Test(kernels, max_propagates_nan) {
    float a[2] = {NAN, 1}, b[2] = {1, NAN}, c[2];
    params p = {0};
    for (int i = 0; i < 3; i++) tensor(&p, F32, 1, (int64_t)2);
    void *buf[3] = {a, b, c};
    call("px_k_max", buf, &p);
    cr_assert(isnan(c[0]) && isnan(c[1]));
}

Test(kernels, cast_float_to_float16_rounds_to_even) {
    float x[6] = {1.0f, 65504.0f, 1e6f, 5.9604645e-08f /* 2^-24 */, 1.00048828125f /* 1+2^-11 */,
                  -0.0f};
    uint16_t y[6], want[6] = {0x3c00, 0x7bff, 0x7c00, 0x0001, 0x3c00, 0x8000};
    params p = {0};
    tensor(&p, F32, 1, (int64_t)6);
    tensor(&p, F16, 1, (int64_t)6);
    void *buf[2] = {x, y};
    call("px_k_cast", buf, &p);
    for (int i = 0; i < 6; i++) cr_assert(y[i] == want[i], "f16(%g) = %#x", x[i], y[i]);
}

Test(kernels, cast_float_to_int_and_bool) {
    float x[4] = {2.9f, -2.9f, 0.0f, NAN};
    int64_t yi[4];
    uint8_t yb[4];
    params p = {0};
    tensor(&p, F32, 1, (int64_t)4);
    tensor(&p, I64, 1, (int64_t)4);
    void *buf[2] = {x, yi};
    call("px_k_cast", buf, &p);
    cr_assert(yi[0] == 2 && yi[1] == -2 && yi[2] == 0);
    params q = {0};
    tensor(&q, F32, 1, (int64_t)4);
    tensor(&q, BOOL, 1, (int64_t)4);
    buf[1] = yb;
    call("px_k_cast", buf, &q);
    cr_assert(yb[0] == 1 && yb[1] == 1 && yb[2] == 0 && yb[3] == 1);
}

Test(kernels, where_broadcasts_condition) {
    /* cond [2,1], X [1,3], Y rank 0 -> [2,3] */
    uint8_t cond[2] = {1, 0};
    int64_t x[3] = {1, 2, 3}, y = -1, z[6];
    params p = {0};
    tensor(&p, BOOL, 2, (int64_t)2, (int64_t)1);
    tensor(&p, I64, 2, (int64_t)1, (int64_t)3);
    tensor(&p, I64, 0);
    tensor(&p, I64, 2, (int64_t)2, (int64_t)3);
    void *buf[4] = {cond, x, &y, z};
    call("px_k_where", buf, &p);
    int64_t want[6] = {1, 2, 3, -1, -1, -1};
    cr_assert_arr_eq(z, want, sizeof want);
}

Test(kernels, empty_tensors_do_nothing) {
    float a[1] = {0}, b[3] = {1, 2, 3}, c[1] = {42};
    params p = {0};
    tensor(&p, F32, 2, (int64_t)0, (int64_t)3);
    tensor(&p, F32, 1, (int64_t)3);
    tensor(&p, F32, 2, (int64_t)0, (int64_t)3);
    void *buf[3] = {a, b, c};
    call("px_k_mul", buf, &p);
    cr_assert(c[0] == 42, "an empty output was written");
}

Test(kernels, reduce_over_empty_axis_gives_identity) {
    float x[1] = {0}, y[2];
    params p = {0};
    tensor(&p, F32, 2, (int64_t)2, (int64_t)0);
    tensor(&p, F32, 1, (int64_t)2);
    i64(&p, 0);
    i64(&p, 1);
    const_axes_tail(&p);
    void *buf[3] = {x, NULL, y};
    call("px_k_reduce_sum", buf, &p);
    cr_assert(y[0] == 0 && y[1] == 0);
    call("px_k_reduce_max", buf, &p);
    cr_assert(y[0] == -INFINITY && y[1] == -INFINITY);
    call("px_k_reduce_prod", buf, &p);
    cr_assert(y[0] == 1 && y[1] == 1);
}

Test(kernels, reduce_middle_axis_and_all_but_middle) {
    /* X [2,3,2] = 0..11 */
    float x[12], y[4], z[3];
    for (int i = 0; i < 12; i++) x[i] = (float)i;
    params p = {0};
    tensor(&p, F32, 3, (int64_t)2, (int64_t)3, (int64_t)2);
    tensor(&p, F32, 2, (int64_t)2, (int64_t)2);
    i64(&p, 0);
    i64(&p, 1);
    i64(&p, 0);
    const_axes_tail(&p);
    void *buf[3] = {x, NULL, y};
    call("px_k_reduce_sum", buf, &p);
    float want[4] = {0 + 2 + 4, 1 + 3 + 5, 6 + 8 + 10, 7 + 9 + 11};
    for (int i = 0; i < 4; i++) cr_assert(y[i] == want[i], "y[%d] = %g", i, y[i]);

    params q = {0};
    tensor(&q, F32, 3, (int64_t)2, (int64_t)3, (int64_t)2);
    tensor(&q, F32, 1, (int64_t)3);
    i64(&q, 1);
    i64(&q, 0);
    i64(&q, 1);
    const_axes_tail(&q);
    buf[2] = z;
    call("px_k_reduce_max", buf, &q);
    cr_assert(z[0] == 7 && z[1] == 9 && z[2] == 11);
    call("px_k_reduce_mean", buf, &q);
    cr_assert(z[0] == (0 + 1 + 6 + 7) / 4.0f && z[2] == (4 + 5 + 10 + 11) / 4.0f);
}

Test(kernels, reduce_log_sum_exp_large_values) {
    float x[2] = {1000, 1000}, y;
    params p = {0};
    tensor(&p, F32, 1, (int64_t)2);
    tensor(&p, F32, 0);
    i64(&p, 1);
    const_axes_tail(&p);
    void *buf[3] = {x, NULL, &y};
    call("px_k_reduce_log_sum_exp", buf, &p);
    cr_assert_float_eq(y, 1000 + logf(2), 1e-3);
}

Test(kernels, reduce_with_runtime_axes) {
    /* X [2,3] sum over axes {-1} given at run time, keepdims=1 -> [2,1] */
    float x[6] = {1, 2, 3, 4, 5, 6}, y[2];
    int64_t axes[1] = {-1};
    params p = {0};
    tensor(&p, F32, 2, (int64_t)2, (int64_t)3);
    tensor(&p, F32, 2, (int64_t)2, (int64_t)1);
    i64(&p, 0); /* flags, unused */
    i64(&p, 0);
    i64(&p, 1); /* keepdims */
    i64(&p, 0); /* noop */
    i64(&p, I64);
    i64(&p, 1);
    void *buf[3] = {x, axes, y};
    call("px_k_reduce_sum", buf, &p);
    cr_assert(y[0] == 6 && y[1] == 15, "got %g %g", y[0], y[1]);
}

Test(kernels, reduce_runtime_axes_must_match_the_compiled_shape, .exit_code = 1) {
    float x[6] = {1, 2, 3, 4, 5, 6}, y[2];
    int64_t axes[1] = {0}; /* would give [1,3], compiled for [2,1] */
    params p = {0};
    tensor(&p, F32, 2, (int64_t)2, (int64_t)3);
    tensor(&p, F32, 2, (int64_t)2, (int64_t)1);
    i64(&p, 0);
    i64(&p, 0);
    i64(&p, 1);
    i64(&p, 0);
    i64(&p, I64);
    i64(&p, 1);
    void *buf[3] = {x, axes, y};
    call("px_k_reduce_sum", buf, &p);
}

Test(kernels, softmax_along_a_strided_axis) {
    /* X [2,2] along axis 0: columns {0, ln 3} and {1, 1} */
    float x[4] = {0, 1, logf(3), 1}, y[4];
    params p = {0};
    tensor(&p, F32, 2, (int64_t)2, (int64_t)2);
    tensor(&p, F32, 2, (int64_t)2, (int64_t)2);
    i64(&p, 1); /* outer */
    i64(&p, 2); /* n */
    i64(&p, 2); /* inner */
    void *buf[2] = {x, y};
    call("px_k_softmax", buf, &p);
    cr_assert_float_eq(y[0], 0.25f, 1e-6);
    cr_assert_float_eq(y[2], 0.75f, 1e-6);
    cr_assert_float_eq(y[1], 0.5f, 1e-6);
    cr_assert_float_eq(y[3], 0.5f, 1e-6);
}

/* Softmax over the last axis of float32 rows (the vectorized rows of
 * runtime/kernels/softmax_rows.c) against a double reference: 50 rows of
 * 37, masked (-inf) entries exactly 0, a row with +inf through the general
 * path (NaN where inf - inf), and the same bits at 3 threads. */
Test(kernels, softmax_rows_vs_double_any_threads) {
    enum { R = 50, N = 37 };
    static float x[R * N], y1[R * N], y3[R * N];
    for (int i = 0; i < R * N; i++) x[i] = (float)((i * 7919) % 1000) / 50.0f - 10.0f;
    for (int r = 0; r < R; r += 3) x[r * N + r % N] = -INFINITY;
    x[5 * N + 2] = INFINITY;
    params p = {0};
    tensor(&p, F32, 2, (int64_t)R, (int64_t)N);
    tensor(&p, F32, 2, (int64_t)R, (int64_t)N);
    i64(&p, R); /* outer */
    i64(&p, N); /* n */
    i64(&p, 1); /* inner */
    void *b1[2] = {x, y1}, *b3[2] = {x, y3};
    call("px_k_softmax", b1, &p);
    px_pool_start(3);
    call("px_k_softmax", b3, &p);
    px_pool_stop();
    cr_assert(memcmp(y1, y3, sizeof y1) == 0, "threads changed the bits");
    for (int r = 0; r < R; r++) {
        double mx = -INFINITY, sum = 0;
        for (int k = 0; k < N; k++) mx = x[r * N + k] > mx ? x[r * N + k] : mx;
        for (int k = 0; k < N; k++) sum += exp((double)x[r * N + k] - mx);
        for (int k = 0; k < N; k++) {
            float got = y1[r * N + k];
            if (r == 5) { /* max +inf: inf - inf is NaN there, e^-inf 0 elsewhere */
                cr_assert(k == 2 ? isnan(got) : (got == 0 || isnan(got)), "row 5 col %d: %g", k,
                          got);
                continue;
            }
            double want = exp((double)x[r * N + k] - mx) / sum;
            if (isinf(x[r * N + k]))
                cr_assert_eq(got, 0.0f, "masked entry %d,%d is %g", r, k, got);
            else
                cr_assert(fabs(got - want) <= 2e-6 * want + 1e-30, "%d,%d: %g vs %g", r, k, got,
                          want);
        }
    }
}

Test(kernels, argmax_select_last_index) {
    int32_t x[4] = {5, 9, 9, 1};
    int64_t y;
    params p = {0};
    tensor(&p, I32, 1, (int64_t)4);
    tensor(&p, I64, 0);
    i64(&p, 0);
    i64(&p, 0);
    void *buf[2] = {x, &y};
    call("px_k_argmax", buf, &p);
    cr_assert(y == 1);
    p.v[p.n - 1] = 1;
    call("px_k_argmax", buf, &p);
    cr_assert(y == 2);
    p.v[p.n - 1] = 0;
    call("px_k_argmin", buf, &p);
    cr_assert(y == 3);
}

Test(kernels, cumsum_reverse_exclusive_runtime_axis) {
    int64_t x[3] = {1, 2, 3}, y[3];
    int32_t axis = -1;
    params p = {0};
    tensor(&p, I64, 1, (int64_t)3);
    tensor(&p, I64, 1, (int64_t)3);
    i64(&p, I32); /* the AXIS buffer's dtype */
    i64(&p, 1);   /* exclusive */
    i64(&p, 1);   /* reverse */
    void *buf[3] = {x, &axis, y};
    call("px_k_cumsum", buf, &p);
    int64_t want[3] = {5, 3, 0};
    cr_assert_arr_eq(y, want, sizeof want);
}

Test(kernels, pow_int_base_int_exponent_and_mixed) {
    int32_t a[3] = {2, -3, 5}, b[3] = {10, 3, 0}, c[3];
    params p = {0};
    for (int i = 0; i < 3; i++) tensor(&p, I32, 1, (int64_t)3);
    void *buf[3] = {a, b, c};
    call("px_k_pow", buf, &p);
    cr_assert(c[0] == 1024 && c[1] == -27 && c[2] == 1);

    float fa[2] = {2, 9}, fc[2];
    int64_t e[2] = {-1, 2};
    params q = {0};
    tensor(&q, F32, 1, (int64_t)2);
    tensor(&q, I64, 1, (int64_t)2);
    tensor(&q, F32, 1, (int64_t)2);
    void *qb[3] = {fa, e, fc};
    call("px_k_pow", qb, &q);
    cr_assert(fc[0] == 0.5f && fc[1] == 81);
}

Test(kernels, clip_runtime_bounds_and_inverted_bounds) {
    int8_t x[4] = {-100, -1, 5, 100}, y[4], lo = -2, hi = 6;
    params p = {0};
    tensor(&p, 3 /* int8 */, 1, (int64_t)4);
    tensor(&p, 3, 1, (int64_t)4);
    i64(&p, -128);
    i64(&p, 127);
    void *buf[4] = {x, &lo, &hi, y};
    call("px_k_clip", buf, &p);
    int8_t want[4] = {-2, -1, 5, 6};
    cr_assert_arr_eq(y, want, sizeof want);
    lo = 7; /* min > max: everything becomes max */
    call("px_k_clip", buf, &p);
    cr_assert(y[0] == 6 && y[1] == 6 && y[2] == 6 && y[3] == 6);
}
