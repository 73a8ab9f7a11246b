/* The pools' MaxPool-2 fast paths and the kernels split over the rank's
 * threads (runtime/kernels/nn_pool.c, grad_conv.c): MaxPool 2 against the
 * general window walk (the same kernel with Indices), MaxPoolGrad against a
 * naive first-maximum scan, ConvGradWeight against a double-precision
 * naive sum (and through the columns a forward Conv kept, stash.h); each
 * at 1 and 3 threads with the same bits; BatchNormalization in training
 * mode and its gradient against double-precision references, at 1 and 3
 * threads. */
#include "kernels/thread_pool.h"
#include "px_kernel.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { F32 = 1 };

typedef struct params {
    int n;
    int64_t v[64];
} params;

static void p_i64(params *p, int64_t v) {
    cr_assert_lt(p->n, 64);
    p->v[p->n++] = v;
}

static void p_tensor(params *p, int rank, const int64_t *dims) {
    p_i64(p, F32);
    p_i64(p, rank);
    for (int i = 0; i < rank; i++) p_i64(p, dims[i]);
}

static void p_pair(params *p, int64_t a, int64_t b) {
    p_i64(p, a);
    p_i64(p, b);
}

static void call(const char *name, void *const *buf, const params *p) {
    px_kernel_fn fn = px_kernel_find(name);
    cr_assert_not_null(fn, "kernel %s is not registered", name);
    fn(buf, p->v);
}

/* Values with many ties (a few levels), some NaN and -0. */
static float *pool_input(int64_t n) {
    float *x = malloc(sizeof *x * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        int64_t h = (i * 2654435761u) % 97;
        x[i] = h == 5 ? NAN : h == 6 ? -0.0f : (float)(h % 4) - 1.5f;
    }
    return x;
}

static int same_bits(const float *a, const float *b, int64_t n) {
    return memcmp(a, b, sizeof *a * (size_t)n) == 0;
}

/* N=3, C=5 planes of 7x9 (odd: the last row and column are in no window) */
enum { N = 3, C = 5, H = 7, W = 9, OH = 3, OW = 4 };

static params pool_params(int with_order) {
    int64_t xd[4] = {N, C, H, W}, yd[4] = {N, C, OH, OW};
    params p = {0};
    p_tensor(&p, 4, xd);
    p_tensor(&p, 4, yd);
    p_pair(&p, 2, 2); /* kernel */
    p_pair(&p, 2, 2); /* strides */
    p_pair(&p, 1, 1); /* dilations */
    p_pair(&p, 0, 0); /* pads begin */
    if (with_order) p_i64(&p, 0);
    return p;
}

Test(pool_threads, maxpool2_matches_general_walk_any_threads) {
    float *x = pool_input(N * C * H * W), y1[N * C * OH * OW], y3[N * C * OH * OW],
          yg[N * C * OH * OW];
    int64_t idx[N * C * OH * OW];
    params p = pool_params(1);
    void *fast1[3] = {x, y1, NULL}, *fast3[3] = {x, y3, NULL}, *general[3] = {x, yg, idx};
    call("px_k_maxpool", general, &p); /* Indices wanted: the general walk */
    call("px_k_maxpool", fast1, &p);
    px_pool_start(3);
    call("px_k_maxpool", fast3, &p);
    px_pool_stop();
    cr_assert(same_bits(y1, yg, N * C * OH * OW), "MaxPool 2 differs from the general walk");
    cr_assert(same_bits(y1, y3, N * C * OH * OW), "threads changed the bits");
    free(x);
}

/* dX: 0 + dY at each window's first maximum (strictly greater replaces,
 * NaN never does), 0 elsewhere. */
Test(pool_threads, maxpool2_grad_vs_naive_any_threads) {
    enum { NX = N * C * H * W, NY = N * C * OH * OW };
    float *x = pool_input(NX), *dy = pool_input(NY), want[NX], d1[NX], d3[NX];
    memset(want, 0, sizeof want);
    for (int64_t pl = 0; pl < N * C; pl++)
        for (int64_t o1 = 0; o1 < OH; o1++)
            for (int64_t o2 = 0; o2 < OW; o2++) {
                int64_t tap[4], best = 0;
                for (int k = 0; k < 4; k++)
                    tap[k] = pl * H * W + (2 * o1 + k / 2) * W + 2 * o2 + k % 2;
                for (int k = 1; k < 4; k++)
                    if (x[tap[k]] > x[tap[best]]) best = k;
                want[tap[best]] = 0.0f + dy[(pl * OH + o1) * OW + o2];
            }
    int64_t dyd[4] = {N, C, OH, OW}, xd[4] = {N, C, H, W};
    params p = {0};
    p_tensor(&p, 4, dyd);
    p_tensor(&p, 4, xd);
    p_tensor(&p, 4, xd);
    p_i64(&p, 0);
    p_pair(&p, 2, 2); /* kernel */
    p_pair(&p, 2, 2); /* strides */
    p_pair(&p, 1, 1); /* dilations */
    p_pair(&p, 0, 0); /* pads begin */
    p_pair(&p, 0, 0); /* pads end */
    void *b1[3] = {dy, x, d1}, *b3[3] = {dy, x, d3};
    memset(d1, 0x55, sizeof d1); /* every cell must be written */
    call("px_k_maxpool_grad", b1, &p);
    px_pool_start(3);
    call("px_k_maxpool_grad", b3, &p);
    px_pool_stop();
    cr_assert(same_bits(d1, want, NX), "MaxPoolGrad differs from the naive scan");
    cr_assert(same_bits(d1, d3, NX), "threads changed the bits");
    free(x);
    free(dy);
}

/* dW[m, c, k0, k1] = sum over n, o of dY[n, m, o] X[n, c, o + k]: 3x3, no
 * padding, 10 images (chunks of uneven size), two groups. */
Test(pool_threads, conv_grad_weight_vs_naive_any_threads) {
    enum { NI = 10, CI = 4, M = 6, G = 2, HI = 6, WI = 5, KH = 3, KW = 3 };
    enum { HO = HI - KH + 1, WO = WI - KW + 1, CG = CI / G, MG = M / G };
    enum { NXI = NI * CI * HI * WI, NDY = NI * M * HO * WO, NW = M * CG * KH * KW };
    float *x = malloc(sizeof(float) * NXI), *dy = malloc(sizeof(float) * NDY), w1[NW], w3[NW];
    for (int i = 0; i < NXI; i++) x[i] = (float)((i * 37) % 19) / 7.0f - 1.0f;
    for (int i = 0; i < NDY; i++) dy[i] = (float)((i * 53) % 23) / 11.0f - 1.0f;
    int64_t dyd[4] = {NI, M, HO, WO}, xd[4] = {NI, CI, HI, WI}, wd[4] = {M, CG, KH, KW};
    params p = {0};
    p_tensor(&p, 4, dyd);
    p_tensor(&p, 4, xd);
    p_tensor(&p, 4, wd);
    p_i64(&p, G);
    p_pair(&p, KH, KW);
    p_pair(&p, 1, 1);
    p_pair(&p, 1, 1);
    p_pair(&p, 0, 0);
    p_pair(&p, 0, 0);
    void *b1[3] = {dy, x, w1}, *b3[3] = {dy, x, w3};
    call("px_k_conv_grad_weight", b1, &p);
    px_pool_start(3);
    call("px_k_conv_grad_weight", b3, &p);
    px_pool_stop();
    cr_assert(same_bits(w1, w3, NW), "threads changed the bits");
    /* A forward Conv of x asked to keep its columns: the gradient reads
     * them instead of X (seen by changing X in between), once. */
    float *cw = calloc(M * CG * KH * KW, sizeof(float)), *cy = malloc(sizeof(float) * NDY), ws[NW],
          wr[NW];
    params f = {0};
    p_tensor(&f, 4, xd);
    p_tensor(&f, 4, wd);
    p_i64(&f, 0); /* no bias: dtype 0, rank 0 */
    p_i64(&f, 0);
    p_tensor(&f, 4, dyd);
    p_i64(&f, G);
    p_pair(&f, 1, 1);
    p_pair(&f, 1, 1);
    p_pair(&f, 0, 0);
    p_i64(&f, 1); /* keep_cols */
    void *fb[4] = {x, cw, NULL, cy}, *bs[3] = {dy, x, ws}, *br[3] = {dy, x, wr};
    call("px_k_conv", fb, &f);
    x[7] += 1.0f;
    call("px_k_conv_grad_weight", bs, &p);
    call("px_k_conv_grad_weight", br, &p);
    x[7] -= 1.0f;
    cr_assert(same_bits(ws, w1, NW), "the kept columns were not used");
    cr_assert(!same_bits(wr, w1, NW), "the kept columns were used twice");
    free(cw);
    free(cy);
    for (int m = 0; m < M; m++)
        for (int c = 0; c < CG; c++)
            for (int k0 = 0; k0 < KH; k0++)
                for (int k1 = 0; k1 < KW; k1++) {
                    double acc = 0;
                    int ci = (m / MG) * CG + c;
                    for (int n = 0; n < NI; n++)
                        for (int o0 = 0; o0 < HO; o0++)
                            for (int o1 = 0; o1 < WO; o1++)
                                acc += (double)dy[((n * M + m) * HO + o0) * WO + o1] *
                                       x[((n * CI + ci) * HI + o0 + k0) * WI + o1 + k1];
                    float got = w1[((m * CG + c) * KH + k0) * KW + k1];
                    cr_assert(fabs(got - acc) <= 1e-5 * (1 + fabs(acc)), "dW[%d,%d,%d,%d] %g vs %g",
                              m, c, k0, k1, got, acc);
                }
    free(x);
    free(dy);
}

static void p_f64(params *p, double v) {
    int64_t bits;
    memcpy(&bits, &v, sizeof bits);
    p_i64(p, bits);
}

/* BatchNormalization in training mode (nn_norm.c: channels split over the
 * threads): Y and the running statistics against a double-precision
 * reference, and the same bits at 1 and 3 threads. */
Test(pool_threads, batchnorm_training_vs_naive_any_threads) {
    /* N * inner large enough that every channel is its own range (the
     * grain is 32k operations); inner odd: a 4-lane tail */
    enum { BN = 8, BC = 7, BI = 1373, BX = BN * BC * BI };
    int64_t xd[3] = {BN, BC, BI}, cd[1] = {BC};
    float *x = malloc(sizeof(float) * BX), *y1 = malloc(sizeof(float) * BX),
          *y3 = malloc(sizeof(float) * BX);
    float scale[BC], bias[BC], mean[BC], var[BC], rm1[BC], rv1[BC], rm3[BC], rv3[BC];
    for (int i = 0; i < BX; i++) x[i] = (float)((i * 2654435761u) % 1000) / 100.0f - 3.0f;
    for (int c = 0; c < BC; c++) {
        scale[c] = 0.5f + 0.1f * (float)c;
        bias[c] = 0.25f * (float)c - 1.0f;
        mean[c] = 0.1f * (float)c;
        var[c] = 1.0f + 0.2f * (float)c;
    }
    params p = {0};
    p_tensor(&p, 3, xd);
    p_i64(&p, BN);
    p_i64(&p, BC);
    p_i64(&p, BI);
    for (int t = 0; t < 6; t++) p_tensor(&p, 1, cd); /* scale, B, mean, var, running x2 */
    p_i64(&p, 1);                                    /* training */
    p_f64(&p, 1e-5);
    p_f64(&p, 0.9);
    void *b1[8] = {x, scale, bias, mean, var, y1, rm1, rv1};
    void *b3[8] = {x, scale, bias, mean, var, y3, rm3, rv3};
    call("px_k_batchnorm", b1, &p);
    px_pool_start(3);
    call("px_k_batchnorm", b3, &p);
    long long splits = px_pool_splits();
    px_pool_stop();
    cr_assert_gt(splits, 0, "BatchNormalization was not split over the threads");
    cr_assert(same_bits(y1, y3, BX), "threads changed Y's bits");
    cr_assert(same_bits(rm1, rm3, BC) && same_bits(rv1, rv3, BC),
              "threads changed the running statistics' bits");
    for (int c = 0; c < BC; c++) {
        double s = 0, q = 0;
        for (int n = 0; n < BN; n++)
            for (int i = 0; i < BI; i++) s += x[(n * BC + c) * BI + i];
        double m = s / (BN * BI);
        for (int n = 0; n < BN; n++)
            for (int i = 0; i < BI; i++) {
                double dv = x[(n * BC + c) * BI + i] - m;
                q += dv * dv;
            }
        double v = q / (BN * BI);
        cr_assert(fabs(rm1[c] - (mean[c] * 0.9 + m * 0.1)) <= 1e-6, "running mean[%d]", c);
        cr_assert(fabs(rv1[c] - (var[c] * 0.9 + v * 0.1)) <= 1e-5, "running var[%d]", c);
        for (int n = 0; n < BN; n++)
            for (int i = 0; i < BI; i++) {
                int k = (n * BC + c) * BI + i;
                double want = (x[k] - m) / sqrt(v + 1e-5) * scale[c] + bias[c];
                cr_assert(fabs(y1[k] - want) <= 1e-5 * (1 + fabs(want)), "Y[%d] %g vs %g", k, y1[k],
                          want);
            }
    }
    free(x);
    free(y1);
    free(y3);
}

/* BatchNormalizationGrad (nn_batchnorm_grad.c: channels split over the
 * threads): dX, dScale and dB against the formula in double, from the
 * batch statistics, and the same bits at 1 and 3 threads. The autodiff
 * tests check the same kernel against finite differences (float64). */
Test(pool_threads, batchnorm_grad_vs_naive_any_threads) {
    enum { BN = 8, BC = 7, BI = 1373, BX = BN * BC * BI };
    int64_t xd[3] = {BN, BC, BI};
    float *x = malloc(sizeof(float) * BX), *dy = malloc(sizeof(float) * BX),
          *dx1 = malloc(sizeof(float) * BX), *dx3 = malloc(sizeof(float) * BX);
    float scale[BC], ds1[BC], db1[BC], ds3[BC], db3[BC];
    for (int i = 0; i < BX; i++) {
        x[i] = (float)((i * 2654435761u) % 1000) / 100.0f - 3.0f + 0.5f * (float)(i % BC);
        dy[i] = (float)((i * 40503u + 7u) % 997) / 500.0f - 0.9f;
    }
    for (int c = 0; c < BC; c++) scale[c] = 0.5f + 0.1f * (float)c - (c == 3 ? 1.0f : 0.0f);
    params p = {0};
    p_tensor(&p, 3, xd);
    p_i64(&p, BN);
    p_i64(&p, BC);
    p_i64(&p, BI);
    p_f64(&p, 1e-3);
    void *b1[6] = {dy, x, scale, dx1, ds1, db1};
    void *b3[6] = {dy, x, scale, dx3, ds3, db3};
    call("px_k_batchnorm_grad", b1, &p);
    px_pool_start(3);
    call("px_k_batchnorm_grad", b3, &p);
    long long splits = px_pool_splits();
    px_pool_stop();
    cr_assert_gt(splits, 0, "BatchNormalizationGrad was not split over the threads");
    cr_assert(same_bits(dx1, dx3, BX) && same_bits(ds1, ds3, BC) && same_bits(db1, db3, BC),
              "threads changed the gradients' bits");
    const double cnt = BN * BI;
    for (int c = 0; c < BC; c++) {
        double s = 0, q = 0, sg = 0, sgx = 0;
        for (int n = 0; n < BN; n++)
            for (int i = 0; i < BI; i++) s += x[(n * BC + c) * BI + i];
        double m = s / cnt;
        for (int n = 0; n < BN; n++)
            for (int i = 0; i < BI; i++) {
                double dv = x[(n * BC + c) * BI + i] - m;
                q += dv * dv;
            }
        double rstd = 1 / sqrt(q / cnt + 1e-3);
        for (int n = 0; n < BN; n++)
            for (int i = 0; i < BI; i++) {
                int k = (n * BC + c) * BI + i;
                sg += dy[k];
                sgx += dy[k] * (x[k] - m) * rstd;
            }
        cr_assert(fabs(db1[c] - sg) <= 1e-5 * (1 + fabs(sg)), "dB[%d] %g vs %g", c, db1[c], sg);
        cr_assert(fabs(ds1[c] - sgx) <= 1e-5 * (1 + fabs(sgx)), "dScale[%d] %g vs %g", c, ds1[c],
                  sgx);
        for (int n = 0; n < BN; n++)
            for (int i = 0; i < BI; i++) {
                int k = (n * BC + c) * BI + i;
                double xh = (x[k] - m) * rstd;
                double want = scale[c] * rstd * (dy[k] - sg / cnt - xh * sgx / cnt);
                cr_assert(fabs(dx1[k] - want) <= 1e-5 * (1 + fabs(want)), "dX[%d] %g vs %g", k,
                          dx1[k], want);
            }
    }
    free(x);
    free(dy);
    free(dx1);
    free(dx3);
}
