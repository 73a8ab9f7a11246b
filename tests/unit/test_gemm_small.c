/* The small single-precision products (runtime/kernels/gemm_small.c)
 * against double-precision naive sums, over shapes that reach every tile
 * (1-4 rows, 1-5 vectors, masked last vectors, 16-column panels, 1-3
 * columns of the transposed product), A as is and transposed, overwrite
 * and accumulate; and the same bits wherever the operands lie (alignment
 * must not change the result). */
#include "kernels/gemm_small.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static float value(int64_t i, int salt) {
    return (float)((i * (37 + salt) + salt) % 29) / 13.0f - 1.0f;
}

static float *filled(int64_t n, int salt) {
    float *p = malloc(sizeof(float) * (size_t)(n + 1));
    cr_assert(p);
    for (int64_t i = 0; i < n + 1; i++) p[i] = value(i, salt);
    return p;
}

Test(gemm_small, products_vs_naive) {
    if (!px_gemm_small_ready()) cr_skip_test("this CPU has no AVX2 + FMA");
    static const int64_t Ms[] = {1, 2, 3, 4, 5, 9}, Ns[] = {1, 5, 8, 13, 16, 36, 40, 41, 50, 144},
                         Ks[] = {1, 3, 16, 27};
    for (size_t a = 0; a < sizeof Ms / sizeof *Ms; a++)
        for (size_t b = 0; b < sizeof Ns / sizeof *Ns; b++)
            for (size_t c = 0; c < sizeof Ks / sizeof *Ks; c++)
                for (int trans = 0; trans < 2; trans++)
                    for (int acc = 0; acc < 2; acc++) {
                        int64_t M = Ms[a], N = Ns[b], K = Ks[c];
                        float *A = filled(M * K, 1), *B = filled(K * N + 1, 2);
                        float *C = filled(M * N, 3), *C2 = filled(M * N, 3);
                        int64_t ar = trans ? 1 : K, ak = trans ? M : 1;
                        px_gemm_small_f32(M, N, K, A, ar, ak, B, N, acc, C, N);
                        /* B one float further on: the same bits */
                        memmove(B + 1, B, sizeof(float) * (size_t)(K * N));
                        px_gemm_small_f32(M, N, K, A, ar, ak, B + 1, N, acc, C2, N);
                        cr_assert(!memcmp(C, C2, sizeof(float) * (size_t)(M * N)),
                                  "M %lld N %lld K %lld: the bits moved with B's alignment",
                                  (long long)M, (long long)N, (long long)K);
                        for (int64_t i = 0; i < M; i++)
                            for (int64_t j = 0; j < N; j++) {
                                double want = acc ? value(i * N + j, 3) : 0;
                                for (int64_t k = 0; k < K; k++)
                                    want += (double)A[i * ar + k * ak] * B[1 + k * N + j];
                                double got = C[i * N + j];
                                cr_assert(fabs(got - want) <= 1e-5 * (1 + fabs(want)),
                                          "M %lld N %lld K %lld trans %d acc %d: C[%lld, %lld] "
                                          "%g vs %g",
                                          (long long)M, (long long)N, (long long)K, trans, acc,
                                          (long long)i, (long long)j, got, want);
                            }
                        free(A);
                        free(B);
                        free(C);
                        free(C2);
                    }
}

Test(gemm_small, transposed_sums_over_images_vs_naive) {
    if (!px_gemm_small_ready()) cr_skip_test("this CPU has no AVX2 + FMA");
    static const int64_t Ms[] = {1, 3, 4, 6}, Ns[] = {1, 2, 3, 7}, Ps[] = {1, 7, 8, 9, 36},
                         counts[] = {1, 3};
    for (size_t a = 0; a < sizeof Ms / sizeof *Ms; a++)
        for (size_t b = 0; b < sizeof Ns / sizeof *Ns; b++)
            for (size_t c = 0; c < sizeof Ps / sizeof *Ps; c++)
                for (size_t d = 0; d < sizeof counts / sizeof *counts; d++) {
                    int64_t M = Ms[a], N = Ns[b], P = Ps[c], T = counts[d];
                    /* images further apart than their rows (as dY's rows of
                     * one group among several) */
                    int64_t a_next = (M + 1) * P, b_next = (N + 2) * P;
                    float *A = filled(T * a_next, 4), *B = filled(T * b_next + 1, 5);
                    float *C = filled(M * N, 6), *C2 = filled(M * N, 6);
                    px_gemm_small_nt_f32(M, N, P, T, A, P, a_next, B, P, b_next, C, N);
                    memmove(B + 1, B, sizeof(float) * (size_t)(T * b_next));
                    px_gemm_small_nt_f32(M, N, P, T, A, P, a_next, B + 1, P, b_next, C2, N);
                    cr_assert(!memcmp(C, C2, sizeof(float) * (size_t)(M * N)),
                              "M %lld N %lld P %lld: the bits moved with B's alignment",
                              (long long)M, (long long)N, (long long)P);
                    for (int64_t i = 0; i < M; i++)
                        for (int64_t j = 0; j < N; j++) {
                            double want = value(i * N + j, 6);
                            for (int64_t t = 0; t < T; t++)
                                for (int64_t p = 0; p < P; p++)
                                    want += (double)A[t * a_next + i * P + p] *
                                            B[1 + t * b_next + j * P + p];
                            double got = C[i * N + j];
                            cr_assert(fabs(got - want) <= 1e-5 * (1 + fabs(want)),
                                      "M %lld N %lld P %lld count %lld: C[%lld, %lld] %g vs %g",
                                      (long long)M, (long long)N, (long long)P, (long long)T,
                                      (long long)i, (long long)j, got, want);
                        }
                    free(A);
                    free(B);
                    free(C);
                    free(C2);
                }
}
