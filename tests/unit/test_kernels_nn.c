/* nn-family kernels called directly (runtime/kernels/nn*.c) against naive
 * reference loops (direct convolution, triple-loop GEMM) or hand-computed
 * numbers, plus the lowerings' refusals. */
#include "graph.h"
#include "lower.h"
#include "px_kernel.h"
#include "kernels/thread_pool.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------- parameter builder (mirrors px_kc_* in compiler/codegen/lower.c) ---------- */

typedef struct params {
    int n;
    int64_t v[256];
} params;

static void p_i64(params *p, int64_t v) {
    cr_assert_lt(p->n, 256);
    p->v[p->n++] = v;
}

static void p_f64(params *p, double v) {
    int64_t bits;
    memcpy(&bits, &v, sizeof bits);
    p_i64(p, bits);
}

static void p_tensor(params *p, int dtype, int rank, const int64_t *dims) {
    p_i64(p, dtype);
    p_i64(p, rank);
    for (int i = 0; i < rank; i++) p_i64(p, dims[i]);
}

static void p_ints(params *p, int n, const int64_t *v) {
    for (int i = 0; i < n; i++) p_i64(p, v[i]);
}

static void call(const char *name, void *const *buf, const params *p) {
    px_kernel_fn fn = px_kernel_find(name);
    cr_assert_not_null(fn, "kernel %s is not registered", name);
    fn(buf, p->v);
}

enum { F32 = 1, I32 = 6, I64 = 7, F16 = 10, F64 = 11 };

static uint32_t rng_state = 12345;
static double rnd(void) { /* uniform in [-1, 1) */
    rng_state = rng_state * 1664525u + 1013904223u;
    return (double)(rng_state >> 8) / (double)(1u << 23) - 1.0;
}

static float *rand_f32(int64_t n) {
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = (float)rnd();
    return v;
}

static void assert_close_f32(const float *got, const double *want, int64_t n, double rtol) {
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= 1e-5 + rtol * fabs(want[i]),
                  "element %lld: %.9g, expected %.9g", (long long)i, got[i], want[i]);
}

/* ---------- Conv ---------- */

/* Direct 2-D convolution: the 7 nested loops of the definition. */
static void conv2d_direct(const float *x, const float *w, const float *b, double *y, int64_t N,
                          int64_t C, int64_t H, int64_t W, int64_t M, int64_t group, int64_t KH,
                          int64_t KW, int64_t OH, int64_t OW, const int64_t *st, const int64_t *dl,
                          const int64_t *pad) {
    int64_t cg = C / group, mg = M / group;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = b ? b[m] : 0;
                    int64_t gr = m / mg;
                    for (int64_t c = 0; c < cg; c++)
                        for (int64_t kh = 0; kh < KH; kh++)
                            for (int64_t kw = 0; kw < KW; kw++) {
                                int64_t ih = oh * st[0] - pad[0] + kh * dl[0];
                                int64_t iw = ow * st[1] - pad[1] + kw * dl[1];
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                acc += (double)x[((n * C + gr * cg + c) * H + ih) * W + iw] *
                                       w[((m * cg + c) * KH + kh) * KW + kw];
                            }
                    y[((n * M + m) * OH + oh) * OW + ow] = acc;
                }
}

static void run_conv2d(int64_t N, int64_t C, int64_t H, int64_t W, int64_t M, int64_t group,
                       int64_t KH, int64_t KW, const int64_t *st, const int64_t *dl,
                       const int64_t *pb, const int64_t *pe, int with_bias) {
    int64_t OH = (H + pb[0] + pe[0] - ((KH - 1) * dl[0] + 1)) / st[0] + 1;
    int64_t OW = (W + pb[1] + pe[1] - ((KW - 1) * dl[1] + 1)) / st[1] + 1;
    int64_t dx[4] = {N, C, H, W}, dw[4] = {M, C / group, KH, KW}, db[1] = {M},
            dy[4] = {N, M, OH, OW};
    int64_t ny = N * M * OH * OW;
    float *x = rand_f32(N * C * H * W), *w = rand_f32(M * (C / group) * KH * KW);
    float *b = with_bias ? rand_f32(M) : NULL, *y = calloc((size_t)ny, sizeof *y);
    double *want = calloc((size_t)ny, sizeof *want);
    params p = {0};
    p_tensor(&p, F32, 4, dx);
    p_tensor(&p, F32, 4, dw);
    if (b)
        p_tensor(&p, F32, 1, db);
    else
        p_tensor(&p, 0, 0, NULL);
    p_tensor(&p, F32, 4, dy);
    p_i64(&p, group);
    p_ints(&p, 2, st);
    p_ints(&p, 2, dl);
    p_ints(&p, 2, pb);
    p_i64(&p, 0); /* keep_cols */
    void *buf[4] = {x, w, b, y};
    call("px_k_conv", buf, &p);
    conv2d_direct(x, w, b, want, N, C, H, W, M, group, KH, KW, OH, OW, st, dl, pb);
    assert_close_f32(y, want, ny, 1e-5);
    free(x);
    free(w);
    free(b);
    free(y);
    free(want);
}

Test(kernels_nn, conv_groups_dilation_pads_vs_direct) {
    int64_t st[2] = {2, 1}, dl[2] = {2, 3}, pb[2] = {1, 2}, pe[2] = {2, 0};
    run_conv2d(2, 4, 9, 8, 6, 2, 3, 2, st, dl, pb, pe, 1);
}

Test(kernels_nn, conv_depthwise_strided_no_bias_vs_direct) {
    int64_t st[2] = {2, 3}, dl[2] = {1, 1}, pb[2] = {1, 0}, pe[2] = {1, 2};
    run_conv2d(1, 3, 7, 10, 6, 3, 3, 3, st, dl, pb, pe, 0);
}

Test(kernels_nn, conv_pointwise_fast_path_vs_direct) {
    int64_t st[2] = {1, 1}, dl[2] = {1, 1}, pb[2] = {0, 0}, pe[2] = {0, 0};
    run_conv2d(2, 5, 4, 3, 7, 1, 1, 1, st, dl, pb, pe, 1);
}

Test(kernels_nn, conv1d_f64_matches_hand_computed) {
    /* x = [1 2 3 4], w = [1 0 -1], pad 1 each side, dilation 1: y[i] = x[i-1] - x[i+1] */
    double x[4] = {1, 2, 3, 4}, w[3] = {1, 0, -1}, y[4] = {0};
    const double want[4] = {-2, -2, -2, 3};
    int64_t dx[3] = {1, 1, 4}, dw[3] = {1, 1, 3}, dy[3] = {1, 1, 4}, one = 1, pad = 1;
    params p = {0};
    p_tensor(&p, F64, 3, dx);
    p_tensor(&p, F64, 3, dw);
    p_tensor(&p, 0, 0, NULL);
    p_tensor(&p, F64, 3, dy);
    p_i64(&p, 1);
    p_ints(&p, 1, &one);
    p_ints(&p, 1, &one);
    p_ints(&p, 1, &pad);
    p_i64(&p, 0); /* keep_cols */
    void *buf[4] = {x, w, NULL, y};
    call("px_k_conv", buf, &p);
    for (int i = 0; i < 4; i++) cr_assert_eq(y[i], want[i], "y[%d] = %g", i, y[i]);
}

/* ---------- Gemm / MatMul ---------- */

static void gemm_naive(int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
                       const float *A, const float *B, double beta, const float *C, int64_t cm,
                       int64_t cn, double *Y) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc +=
                    (double)(ta ? A[k * M + i] : A[i * K + k]) * (tb ? B[j * K + k] : B[k * N + j]);
            double c = C ? C[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)] : 0;
            Y[i * N + j] = alpha * acc + beta * c;
        }
}

static void run_gemm(int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha, double beta,
                     int c_rank, const int64_t *c_dims) {
    int64_t da[2] = {ta ? K : M, ta ? M : K}, dbm[2] = {tb ? N : K, tb ? K : N}, dy[2] = {M, N};
    int64_t cm = c_rank == 2 ? c_dims[0] : 1, cn = c_rank >= 1 ? c_dims[c_rank - 1] : 1;
    float *a = rand_f32(M * K), *b = rand_f32(K * N), *c = c_rank >= 0 ? rand_f32(cm * cn) : NULL;
    float *y = calloc((size_t)(M * N), sizeof *y);
    double *want = calloc((size_t)(M * N), sizeof *want);
    params p = {0};
    p_tensor(&p, F32, 2, da);
    p_tensor(&p, F32, 2, dbm);
    if (c)
        p_tensor(&p, F32, c_rank, c_dims);
    else
        p_tensor(&p, 0, 0, NULL);
    p_tensor(&p, F32, 2, dy);
    p_i64(&p, ta);
    p_i64(&p, tb);
    p_f64(&p, alpha);
    p_f64(&p, beta);
    void *buf[4] = {a, b, c, y};
    call("px_k_gemm", buf, &p);
    gemm_naive(ta, tb, M, N, K, alpha, a, b, beta, c, cm, cn, want);
    assert_close_f32(y, want, M * N, 1e-5);
    free(a);
    free(b);
    free(c);
    free(y);
    free(want);
}

Test(kernels_nn, gemm_transposes_alpha_beta_broadcast_c_vs_naive) {
    int64_t row[2] = {1, 9}, col[2] = {7, 1}, vec[1] = {9}, full[2] = {7, 9};
    run_gemm(1, 1, 7, 9, 5, 0.5, 2.0, 2, row);
    run_gemm(0, 1, 7, 9, 5, 1.0, -1.0, 2, col);
    run_gemm(1, 0, 7, 9, 5, 1.5, 0.25, 1, vec);
    run_gemm(0, 0, 7, 9, 5, 1.0, 1.0, 2, full);
    run_gemm(0, 0, 7, 9, 5, 1.0, 1.0, 0, NULL);  /* scalar C */
    run_gemm(1, 1, 7, 9, 5, 2.0, 1.0, -1, NULL); /* no C */
}

/* px_k_gemm_batched, every transpose combination, against the naive product
 * of each matrix; at 3 threads (over matrices) the bits of 1 thread. */
static void run_gemm_batched(int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K) {
    float *a = rand_f32(batch * M * K), *b = rand_f32(batch * K * N);
    float *y = calloc((size_t)(batch * M * N), sizeof *y),
          *y3 = calloc((size_t)(batch * M * N), sizeof *y3);
    double *want = calloc((size_t)(M * N), sizeof *want);
    params p = {0};
    p_i64(&p, F32);
    p_i64(&p, batch);
    p_i64(&p, M);
    p_i64(&p, N);
    p_i64(&p, K);
    p_i64(&p, ta);
    p_i64(&p, tb);
    void *buf[3] = {a, b, y}, *buf3[3] = {a, b, y3};
    call("px_k_gemm_batched", buf, &p);
    for (int64_t i = 0; i < batch; i++) {
        gemm_naive(ta, tb, M, N, K, 1.0, a + i * M * K, b + i * K * N, 0.0, NULL, 1, 1, want);
        assert_close_f32(y + i * M * N, want, M * N, 1e-5);
    }
    px_pool_start(3);
    call("px_k_gemm_batched", buf3, &p);
    px_pool_stop();
    cr_assert_arr_eq(y, y3, sizeof *y * (size_t)(batch * M * N), "threads changed the bits");
    free(a);
    free(b);
    free(y);
    free(y3);
    free(want);
}

Test(kernels_nn, gemm_batched_transposes_vs_naive_any_threads) {
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            run_gemm_batched(ta, tb, 7, 8, 5, 6);
            run_gemm_batched(ta, tb, 2, 130, 9, 4); /* fewer matrices than threads: rows split */
        }
}

Test(kernels_nn, gemm_int64_wraps_and_scales) {
    int64_t a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[2] = {100, 200}, y[4] = {0};
    /* A*B = [[19,22],[43,50]]; alpha 2, beta 1, C row-broadcast */
    const int64_t want[4] = {138, 244, 186, 300};
    int64_t d2[2] = {2, 2}, dc[1] = {2};
    params p = {0};
    p_tensor(&p, I64, 2, d2);
    p_tensor(&p, I64, 2, d2);
    p_tensor(&p, I64, 1, dc);
    p_tensor(&p, I64, 2, d2);
    p_i64(&p, 0);
    p_i64(&p, 0);
    p_f64(&p, 2.0);
    p_f64(&p, 1.0);
    void *buf[4] = {a, b, c, y};
    call("px_k_gemm", buf, &p);
    cr_assert_arr_eq(y, want, sizeof want);
}

/* Naive numpy matmul of A [ba..., M, K] and B [bb..., K, N] with batch dims
 * broadcast (both given with the output's batch rank, 1 where broadcast). */
static void matmul_naive(const float *A, const float *B, double *Y, int br, const int64_t *bda,
                         const int64_t *bdb, const int64_t *bdy, int64_t M, int64_t K, int64_t N) {
    int64_t nb = 1, idx[8] = {0};
    for (int i = 0; i < br; i++) nb *= bdy[i];
    for (int64_t t = 0; t < nb; t++) {
        int64_t oa = 0, ob = 0;
        for (int i = 0; i < br; i++) {
            oa = oa * bda[i] + (bda[i] == 1 ? 0 : idx[i]);
            ob = ob * bdb[i] + (bdb[i] == 1 ? 0 : idx[i]);
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (double)A[(oa * M + i) * K + k] * B[(ob * K + k) * N + j];
                Y[(t * M + i) * N + j] = acc;
            }
        for (int i = br - 1; i >= 0 && ++idx[i] == bdy[i]; i--) idx[i] = 0;
    }
}

Test(kernels_nn, matmul_broadcast_batches_vs_naive) {
    /* A [2,1,3,4] x B [3,4,5] -> Y [2,3,3,5] */
    int64_t da[4] = {2, 1, 3, 4}, db[3] = {3, 4, 5}, dy[4] = {2, 3, 3, 5};
    int64_t bda[2] = {2, 1}, bdb[2] = {1, 3}, bdy[2] = {2, 3};
    float *a = rand_f32(24), *b = rand_f32(60), y[90] = {0};
    double want[90];
    params p = {0};
    p_tensor(&p, F32, 4, da);
    p_tensor(&p, F32, 3, db);
    p_tensor(&p, F32, 4, dy);
    void *buf[3] = {a, b, y};
    call("px_k_matmul", buf, &p);
    matmul_naive(a, b, want, 2, bda, bdb, bdy, 3, 4, 5);
    assert_close_f32(y, want, 90, 1e-5);
    free(a);
    free(b);
}

Test(kernels_nn, matmul_shared_b_folds_batches_and_1d_operands) {
    /* A [2,3,4] x B [4,5]: batches fold into one GEMM */
    int64_t da[3] = {2, 3, 4}, db[2] = {4, 5}, dy[3] = {2, 3, 5};
    int64_t one[1] = {1}, two[1] = {2};
    float *a = rand_f32(24), *b = rand_f32(20), y[30] = {0};
    double want[30];
    params p = {0};
    p_tensor(&p, F32, 3, da);
    p_tensor(&p, F32, 2, db);
    p_tensor(&p, F32, 3, dy);
    void *buf[3] = {a, b, y};
    call("px_k_matmul", buf, &p);
    matmul_naive(a, b, want, 1, two, one, two, 3, 4, 5);
    assert_close_f32(y, want, 30, 1e-5);

    /* vector [4] x B [2,4,3] -> [2,3]; int32 [3] x [3] -> scalar */
    int64_t dv[1] = {4}, db3[3] = {2, 4, 3}, dy2[2] = {2, 3};
    float v[4] = {1, -1, 2, 0.5f}, b3[24], y2[6];
    for (int i = 0; i < 24; i++) b3[i] = (float)i;
    params q = {0};
    p_tensor(&q, F32, 1, dv);
    p_tensor(&q, F32, 3, db3);
    p_tensor(&q, F32, 2, dy2);
    void *buf2[3] = {v, b3, y2};
    call("px_k_matmul", buf2, &q);
    for (int t = 0; t < 2; t++)
        for (int j = 0; j < 3; j++) {
            double acc = 0;
            for (int k = 0; k < 4; k++) acc += v[k] * b3[(t * 4 + k) * 3 + j];
            cr_assert_float_eq(y2[t * 3 + j], acc, 1e-4);
        }
    int32_t u[3] = {1, 2, 3}, w[3] = {4, -5, 6}, s = 0;
    int64_t d3[1] = {3};
    params r = {0};
    p_tensor(&r, I32, 1, d3);
    p_tensor(&r, I32, 1, d3);
    p_tensor(&r, I32, 0, NULL);
    void *buf3[3] = {u, w, &s};
    call("px_k_matmul", buf3, &r);
    cr_assert_eq(s, 12);
    free(a);
    free(b);
}

/* ---------- pools ---------- */

Test(kernels_nn, maxpool_indices_both_storage_orders) {
    /* 1x1x3x4 input, kernel 2x2 stride 2 pad (0,0) end pad (1,0): out 2x2 */
    float x[12] = {1, 9, 3, 4, 5, 6, 8, 7, 2, 0, 11, 10}, y[4];
    int64_t idx[4], dx[4] = {1, 1, 3, 4}, dy[4] = {1, 1, 2, 2};
    int64_t k[2] = {2, 2}, st[2] = {2, 2}, dl[2] = {1, 1}, pb[2] = {0, 0};
    const float want[4] = {9, 8, 2, 11};
    const int64_t want_row[4] = {1, 6, 8, 10}, want_col[4] = {3, 7, 2, 8};
    for (int order = 0; order < 2; order++) {
        params p = {0};
        p_tensor(&p, F32, 4, dx);
        p_tensor(&p, F32, 4, dy);
        p_ints(&p, 2, k);
        p_ints(&p, 2, st);
        p_ints(&p, 2, dl);
        p_ints(&p, 2, pb);
        p_i64(&p, order);
        void *buf[3] = {x, y, idx};
        call("px_k_maxpool", buf, &p);
        cr_assert_arr_eq(y, want, sizeof want);
        cr_assert_arr_eq(idx, order ? want_col : want_row, sizeof want_row);
    }
}

Test(kernels_nn, avgpool_count_include_pad_and_ceil_window) {
    /* 1-D x = [1 2 3 4 5], kernel 3, stride 2, pads (1, 1): windows
     * [-1..1] [1..3] [3..5]: sums 3, 9, 9; taps inside x 2, 3, 2 */
    float x[5] = {1, 2, 3, 4, 5}, y[3];
    int64_t dx[3] = {1, 1, 5}, dy[3] = {1, 1, 3}, k = 3, st = 2, dl = 1, pb = 1, pe = 1;
    const float excl[3] = {1.5f, 3, 4.5f}, incl[3] = {1, 3, 3};
    for (int include = 0; include < 2; include++) {
        params p = {0};
        p_tensor(&p, F32, 3, dx);
        p_tensor(&p, F32, 3, dy);
        p_ints(&p, 1, &k);
        p_ints(&p, 1, &st);
        p_ints(&p, 1, &dl);
        p_ints(&p, 1, &pb);
        p_ints(&p, 1, &pe);
        p_i64(&p, include);
        void *buf[2] = {x, y};
        call("px_k_avgpool", buf, &p);
        cr_assert_arr_eq(y, include ? incl : excl, sizeof y);
    }
}

/* ---------- BatchNormalization (training mode) ---------- */

Test(kernels_nn, batchnorm_training_running_stats_vs_naive) {
    enum { N = 3, C = 2, S = 4 };
    float *x = rand_f32(N * C * S), scale[C] = {1.5f, -0.5f}, bias[C] = {0.1f, 0.2f};
    float mean[C] = {0.3f, -0.2f}, var[C] = {1.1f, 0.9f}, y[N * C * S], rm[C], rv[C];
    int64_t dx[3] = {N, C, S}, dc[1] = {C};
    double eps = 1e-3, mom = 0.8;
    params p = {0};
    p_tensor(&p, F32, 3, dx);
    p_i64(&p, N);
    p_i64(&p, C);
    p_i64(&p, S);
    for (int i = 0; i < 6; i++) p_tensor(&p, F32, 1, dc);
    p_i64(&p, 1);
    p_f64(&p, eps);
    p_f64(&p, mom);
    void *buf[8] = {x, scale, bias, mean, var, y, rm, rv};
    call("px_k_batchnorm", buf, &p);
    for (int c = 0; c < C; c++) {
        double s = 0, sq = 0;
        for (int n = 0; n < N; n++)
            for (int i = 0; i < S; i++) s += x[(n * C + c) * S + i];
        double m = s / (N * S);
        for (int n = 0; n < N; n++)
            for (int i = 0; i < S; i++) sq += pow(x[(n * C + c) * S + i] - m, 2);
        double v = sq / (N * S);
        cr_assert_float_eq(rm[c], mean[c] * mom + m * (1 - mom), 1e-5);
        cr_assert_float_eq(rv[c], var[c] * mom + v * (1 - mom), 1e-5);
        for (int n = 0; n < N; n++)
            for (int i = 0; i < S; i++) {
                int64_t j = (n * C + c) * S + i;
                cr_assert_float_eq(y[j], (x[j] - m) / sqrt(v + eps) * scale[c] + bias[c], 1e-4);
            }
    }
    free(x);
}

/* ---------- losses ---------- */

Test(kernels_nn, sce_mean_with_weights_and_ignore_index) {
    /* N=2, C=3: row 0 target 2 (weight 3), row 1 ignored */
    float s[6] = {1, 2, 3, 0, 0, 0}, w[3] = {1, 2, 3}, loss, lp[6];
    int64_t t[2] = {2, -1}, ds[2] = {2, 3}, dt[1] = {2}, dw[1] = {3};
    params p = {0};
    p_tensor(&p, F32, 2, ds);
    p_tensor(&p, I64, 1, dt);
    p_tensor(&p, F32, 1, dw);
    p_tensor(&p, F32, 0, NULL);
    p_tensor(&p, F32, 2, ds);
    p_i64(&p, 2);  /* mean */
    p_i64(&p, 1);  /* has ignore_index */
    p_i64(&p, -1); /* ignore_index */
    p_i64(&p, 0);  /* no denominator */
    void *buf[7] = {s, t, w, &loss, lp, NULL, NULL};
    call("px_k_sce_loss", buf, &p);
    double lse0 = log(exp(1.0) + exp(2.0) + exp(3.0));
    cr_assert_float_eq(loss, lse0 - 3.0, 1e-6); /* 3 * (lse - 3) / 3 */
    cr_assert_float_eq(lp[0], 1.0 - lse0, 1e-6);
    cr_assert_float_eq(lp[4], -log(3.0), 1e-6);
}

/* The parameters of px_k_sce_loss* on float32 scores ds (classes in dim 1),
 * int64 labels dt, no weights or log_prob, reduction mean, ignore_index -1,
 * and of its gradient (px_k_sce_loss_grad*). */
static void sce_params(params *p, const int64_t *ds, const int64_t *dt, int64_t denominator) {
    p_tensor(p, F32, 2, ds);
    p_tensor(p, I64, 1, dt);
    p_tensor(p, 0, 0, NULL);   /* no weights */
    p_tensor(p, F32, 0, NULL); /* the loss */
    p_tensor(p, 0, 0, NULL);   /* no log_prob */
    p_i64(p, 2);               /* mean */
    p_i64(p, 1);               /* has ignore_index */
    p_i64(p, -1);              /* ignore_index */
    p_i64(p, denominator);     /* 1: divided by the denominator buffer */
}

static void sce_grad_params(params *q, const int64_t *ds, const int64_t *dt, int64_t denominator) {
    p_tensor(q, F32, 0, NULL); /* dLoss */
    p_tensor(q, F32, 2, ds);
    p_tensor(q, I64, 1, dt);
    p_tensor(q, 0, 0, NULL); /* no weights */
    p_i64(q, 2);
    p_i64(q, 1);
    p_i64(q, -1);
    p_i64(q, denominator);
}

/* With a denominator (a LossDenominator's output: the kept rows averaged
 * over the ranks), the mean divides by it instead of the rows kept here, in
 * the loss and in its gradient. */
Test(kernels_nn, sce_mean_divides_by_the_denominator) {
    float s[6] = {1, 2, 3, 0, 0, 0}, loss, dloss = 1.0f, dx[6];
    int64_t t[2] = {2, -1}, ds[2] = {2, 3}, dt[1] = {2};
    double den = 4.0;
    params p = {0};
    sce_params(&p, ds, dt, 1);
    void *buf[7] = {s, t, NULL, &loss, NULL, NULL, &den};
    call("px_k_sce_loss", buf, &p);
    double lse0 = log(exp(1.0) + exp(2.0) + exp(3.0));
    cr_assert_float_eq(loss, (lse0 - 3.0) / 4.0, 1e-6); /* one row kept, divided by 4 */
    params q = {0};
    sce_grad_params(&q, ds, dt, 1);
    void *gbuf[6] = {&dloss, s, t, NULL, dx, &den};
    call("px_k_sce_loss_grad", gbuf, &q);
    for (int k = 0; k < 3; k++)
        cr_assert_float_eq(dx[k], (exp(s[k] - lse0) - (k == 2)) / 4.0, 1e-6, "dx[0][%d]", k);
    for (int k = 3; k < 6; k++) cr_assert_float_eq(dx[k], 0.0, 1e-12);
}

/* The forward/backward pair that shares the softmax: px_k_sce_loss_probs
 * leaves softmax(scores) in dX, px_k_sce_loss_grad_probs finishes dX in
 * place. Checked against the softmax and loss computed here in double, on
 * float32 rows of 37 classes (the vectorized path plus a remainder), one row
 * ignored, reduction mean. */
Test(kernels_nn, sce_probs_pair_matches_softmax_minus_onehot) {
    enum { N = 3, C = 37 };
    float s[N * C], dx[N * C], loss, dloss = 2.0f;
    int64_t t[N] = {5, -1, 36}, ds[2] = {N, C}, dt[1] = {N};
    for (int i = 0; i < N * C; i++) s[i] = (float)(0.1 * ((i * 7919) % 41) - 2.0);
    params p = {0};
    sce_params(&p, ds, dt, 0);
    void *fbuf[7] = {s, t, NULL, &loss, NULL, dx, NULL};
    call("px_k_sce_loss_probs", fbuf, &p);
    params q = {0};
    sce_grad_params(&q, ds, dt, 0);
    void *gbuf[6] = {&dloss, NULL, t, NULL, dx, NULL};
    call("px_k_sce_loss_grad_probs", gbuf, &q);
    double want_loss = 0;
    for (int n = 0; n < N; n++) {
        double mx = -INFINITY, se = 0;
        for (int k = 0; k < C; k++) mx = fmax(mx, s[n * C + k]);
        for (int k = 0; k < C; k++) se += exp(s[n * C + k] - mx);
        if (t[n] >= 0) want_loss += mx + log(se) - s[n * C + t[n]];
        for (int k = 0; k < C; k++) {
            double want = t[n] < 0 ? 0.0 : 2.0 / 2 * (exp(s[n * C + k] - mx) / se - (k == t[n]));
            cr_assert_float_eq(dx[n * C + k], want, 1e-6, "dx[%d][%d] = %g, want %g", n, k,
                               dx[n * C + k], want);
        }
    }
    cr_assert_float_eq(loss, want_loss / 2, 1e-5);
}

/* ---------- lowering refusals ---------- */

Test(kernels_nn, lowering_rejects_unsupported_dtype_and_rank) {
    px_diag *d = malloc(sizeof *d);
    px_diag_init(d);
    px_graph *g = px_graph_new("t");
    px_graph_set_opset(g, "", 13);
    int64_t d4[4] = {1, 1, 4, 4}, d4o[4] = {1, 1, 2, 2};
    px_shape s4 = px_shape_make(4, d4), s4o = px_shape_make(4, d4o);
    px_value *xi = px_graph_add_value(g, "xi", PX_I32, &s4, d);
    px_value *yi = px_graph_add_value(g, "yi", PX_I32, &s4o, d);
    px_node *mp = px_graph_add_node(g, "MaxPool", "", "pool_ints", 1, &xi, 1, &yi);
    int64_t k2[2] = {2, 2};
    px_node_set_attr_ints(mp, "kernel_shape", 2, k2);
    px_node_set_attr_ints(mp, "strides", 2, k2);
    px_kcall k;
    cr_assert_eq(px_lower_node(g, mp, &k, d), -1);
    cr_assert(strstr(d->text, "pool_ints") && strstr(d->text, "int32"), "%s", d->text);

    /* 4 spatial dims: more than the conv kernel handles */
    px_diag_init(d);
    int64_t d6[6] = {1, 1, 2, 2, 2, 2}, w6[6] = {1, 1, 1, 1, 1, 1};
    px_shape s6 = px_shape_make(6, d6), sw = px_shape_make(6, w6);
    px_value *x = px_graph_add_value(g, "x6", PX_F32, &s6, d);
    px_value *w = px_graph_add_value(g, "w6", PX_F32, &sw, d);
    px_value *y = px_graph_add_value(g, "y6", PX_F32, &s6, d);
    px_value *ins[2] = {x, w};
    px_node *cv = px_graph_add_node(g, "Conv", "", "conv4d", 2, ins, 1, &y);
    cr_assert_eq(px_lower_node(g, cv, &k, d), -1);
    cr_assert(strstr(d->text, "conv4d") && strstr(d->text, "spatial"), "%s", d->text);

    /* a wrong output size (e.g. from a stale shape) is refused, not computed */
    px_diag_init(d);
    px_value *xf = px_graph_add_value(g, "xf", PX_F32, &s4, d);
    px_value *yf = px_graph_add_value(g, "yf", PX_F32, &s4, d);
    px_node *ap = px_graph_add_node(g, "AveragePool", "", "avg", 1, &xf, 1, &yf);
    px_node_set_attr_ints(ap, "kernel_shape", 2, k2);
    px_node_set_attr_ints(ap, "strides", 2, k2);
    cr_assert_eq(px_lower_node(g, ap, &k, d), -1);
    cr_assert(strstr(d->text, "avg") && strstr(d->text, "spatial axis 0"), "%s", d->text);

    /* and the right one lowers */
    px_diag_init(d);
    px_value *yg = px_graph_add_value(g, "yg", PX_F32, &s4o, d);
    px_node *ap2 = px_graph_add_node(g, "AveragePool", "", "avg2", 1, &xf, 1, &yg);
    px_node_set_attr_ints(ap2, "kernel_shape", 2, k2);
    px_node_set_attr_ints(ap2, "strides", 2, k2);
    cr_assert_eq(px_lower_node(g, ap2, &k, d), 0, "%s", d->text);
    cr_assert_str_eq(k.kernel, "px_k_avgpool");
    px_kcall_free(&k);
    px_graph_free(g);
    free(d);
}

/* ---------- LayerNormalization, half precision ---------- */

Test(kernels_nn, layernorm_broadcast_scale_and_stats) {
    /* X [2,3] over axis 1; Scale [1] broadcasts (stride 0), B [3] does not */
    float x[6] = {1, 2, 3, 2, 2, 2}, sc[1] = {2}, b[3] = {0, 1, 2}, y[6], mean[2], inv[2];
    int64_t dx[2] = {2, 3}, s_str[1] = {0}, b_str[1] = {1};
    params p = {0};
    p_tensor(&p, F32, 2, dx);
    p_i64(&p, 1);
    p_f64(&p, 0.0);
    p_i64(&p, F32);
    p_ints(&p, 1, s_str);
    p_i64(&p, F32);
    p_ints(&p, 1, b_str);
    p_tensor(&p, F32, 2, dx);
    p_i64(&p, F32);
    void *buf[6] = {x, sc, b, y, mean, inv};
    call("px_k_layernorm", buf, &p);
    double is = 1.0 / sqrt(2.0 / 3.0); /* row 0: mean 2, variance 2/3 */
    const double want[3] = {-is * 2 + 0, 0 + 1, is * 2 + 2};
    for (int j = 0; j < 3; j++) cr_assert_float_eq(y[j], want[j], 1e-5);
    cr_assert_float_eq(mean[0], 2.0, 1e-6);
    cr_assert_float_eq(inv[0], is, 1e-5);
    cr_assert_float_eq(mean[1], 2.0, 1e-6);
    cr_assert(isinf(inv[1]), "zero variance with epsilon 0 gives 1/0, got %g", inv[1]);
}

Test(kernels_nn, gemm_f16_rounds_through_float) {
    /* f16 bits: 1.0 = 0x3c00, 2.0 = 0x4000, 0.5 = 0x3800, 3.0 = 0x4200 */
    uint16_t a[2] = {0x3c00, 0x4000}, b[2] = {0x3800, 0x4200}, y[1];
    int64_t da[2] = {1, 2}, db[2] = {2, 1}, dy[2] = {1, 1};
    params p = {0};
    p_tensor(&p, F16, 2, da);
    p_tensor(&p, F16, 2, db);
    p_tensor(&p, 0, 0, NULL);
    p_tensor(&p, F16, 2, dy);
    p_i64(&p, 0);
    p_i64(&p, 0);
    p_f64(&p, 1.0);
    p_f64(&p, 0.0);
    void *buf[4] = {a, b, NULL, y};
    call("px_k_gemm", buf, &p);
    cr_assert_eq(y[0], 0x4680, "1*0.5 + 2*3 = 6.5 is f16 0x4680, got 0x%04x", y[0]);
}
