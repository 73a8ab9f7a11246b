/* Single-precision products too small for OpenBLAS to pay off: the
 * per-image GEMMs of a convolution with a few output channels (8-16 rows,
 * 27-144 columns of im2col), where OpenBLAS spends more time packing its
 * operands and on each call's fixed cost than multiplying. These read the
 * operands where they lie, in AVX2 + FMA register tiles, on CPUs that have
 * both (px_gemm_small_ready); elsewhere the callers keep OpenBLAS.
 *
 * Every output element is summed in a fixed order set by the shapes alone
 * (not by the tile that computes it, the pointers' alignment or the
 * thread), so results do not depend on --threads.
 * Private to runtime/kernels (nn_conv.c, grad_conv.c). */
#ifndef PX_GEMM_SMALL_H
#define PX_GEMM_SMALL_H

#include <stdint.h>

/* Whether this CPU runs the kernels below (x86-64 with AVX2 and FMA). */
int px_gemm_small_ready(void);

/* Whether a product of M x K by K x N multiply-adds is small enough for
 * them: below this, a call's operands sit in L1/L2 and packing them costs
 * more than it saves. */
static inline int px_gemm_small_fits(int64_t M, int64_t N, int64_t K) {
    return M > 0 && N > 0 && K > 0 && M * N * K <= ((int64_t)1 << 21) && M * K <= 65536 &&
           px_gemm_small_ready();
}

/* C[i, j] (row-major, leading dim ldc) = (accumulate ? C[i, j] : 0) +
 * sum over k in order of A(i, k) * B[k, j], one fused multiply-add per k;
 * A(i, k) = A[i * a_row + k * a_col] (a_row = lda, a_col = 1: A as is;
 * a_row = 1, a_col = lda: A transposed), B row-major with leading dim ldb.
 * For i < M, j < N, k < K. */
void px_gemm_small_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t a_row,
                       int64_t a_col, const float *B, int64_t ldb, int accumulate, float *C,
                       int64_t ldc);

/* C[i, j] += sum over t < count and p < P of A_t[i, p] * B_t[j, p], with
 * A_t = A + t * a_next (rows of leading dim lda) and B_t = B + t * b_next
 * (leading dim ldb): a weight gradient dY . cols^T summed over `count`
 * images. Each element is summed in 8 lanes (p mod 8) over t then p, and
 * the lanes are added in a fixed order. For i < M, j < N. */
void px_gemm_small_nt_f32(int64_t M, int64_t N, int64_t P, int64_t count, const float *A,
                          int64_t lda, int64_t a_next, const float *B, int64_t ldb, int64_t b_next,
                          float *C, int64_t ldc);

#endif
