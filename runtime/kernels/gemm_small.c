/* Small single-precision products in AVX2 + FMA register tiles
 * (gemm_small.h). The runtime library is built for any x86-64: the tiles
 * are compiled for AVX2 + FMA through target attributes and run only on a
 * CPU that has both, checked once. */
#include "gemm_small.h"

#include "kutil.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define TILE static inline __attribute__((always_inline, target("avx2,fma")))
#define AVX2_FMA __attribute__((target("avx2,fma")))
/* The tiles' loops over rows and vectors unrolled whole, so that their
 * accumulators live in registers and not in a stack array. */
#define UNROLLED _Pragma("GCC unroll 16")

int px_gemm_small_ready(void) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* Lanes [0, n) set, n in 0..8. */
TILE __m256i lanes(int64_t n) {
    static const int32_t ones_then_zeros[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                0,  0,  0,  0,  0,  0,  0,  0};
    return _mm256_loadu_si256((const __m256i *)(ones_then_zeros + 8 - n));
}

/* 8 floats at p, or its first `n` lanes (0 beyond) when masked. */
TILE __m256 load8(const float *p, int masked, __m256i mask) {
    return masked ? _mm256_maskload_ps(p, mask) : _mm256_loadu_ps(p);
}

/* The first n lanes of v to p (n <= 8): a store to the stack and a copy,
 * cheaper than a masked store on some CPUs. */
TILE void store_first(float *p, __m256 v, int64_t n) {
    float t[8];
    _mm256_storeu_ps(t, v);
    for (int64_t i = 0; i < n; i++) p[i] = t[i];
}

/* Rows [0, rows) and columns [0, 8 * vecs) of C (the last vector's first
 * `last` columns when masked) for all K: each element is
 * fma(A(i, K-1), B[K-1, j], ... fma(A(i, 0), B[0, j], start)). rows,
 * vecs and masked are constants where it is inlined; rows * vecs <= 10
 * accumulators, the rows broadcasts, one B vector and the mask fit the 16
 * registers. */
TILE void nn_tile(int rows, int vecs, int masked, int64_t last, int64_t K, const float *A,
                  int64_t a_row, int64_t a_col, const float *B, int64_t ldb, int accumulate,
                  float *C, int64_t ldc) {
    __m256i mask = lanes(masked ? last : 8);
    __m256 acc[4][5];
    UNROLLED
    for (int i = 0; i < rows; i++) UNROLLED
    for (int v = 0; v < vecs; v++)
        acc[i][v] = accumulate ? load8(C + i * ldc + 8 * v, masked && v == vecs - 1, mask)
                               : _mm256_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        const float *a = A + k * a_col, *b = B + k * ldb;
        __m256 ai[4];
        UNROLLED
        for (int i = 0; i < rows; i++) ai[i] = _mm256_broadcast_ss(a + i * a_row);
        UNROLLED
        for (int v = 0; v < vecs; v++) {
            __m256 bv = load8(b + 8 * v, masked && v == vecs - 1, mask);
            UNROLLED
            for (int i = 0; i < rows; i++) acc[i][v] = _mm256_fmadd_ps(ai[i], bv, acc[i][v]);
        }
    }
    UNROLLED
    for (int i = 0; i < rows; i++) UNROLLED
    for (int v = 0; v < vecs; v++) {
        float *c = C + i * ldc + 8 * v;
        if (masked && v == vecs - 1)
            store_first(c, acc[i][v], last);
        else
            _mm256_storeu_ps(c, acc[i][v]);
    }
}

/* Rows of at most 40 columns (a 6x6 feature map's 36): two rows at a time
 * across the whole row, so the few columns past the last full vector cost
 * one masked vector per row and not a tile of their own. */
TILE void nn_narrow(int rows, int64_t N, int64_t K, const float *A, int64_t a_row, int64_t a_col,
                    const float *B, int64_t ldb, int accumulate, float *C, int64_t ldc) {
    int64_t last = N % 8 ? N % 8 : 8;
#define NARROW(VECS)                                                                               \
    do {                                                                                           \
        if (last < 8)                                                                              \
            nn_tile(rows, VECS, 1, last, K, A, a_row, a_col, B, ldb, accumulate, C, ldc);          \
        else                                                                                       \
            nn_tile(rows, VECS, 0, 8, K, A, a_row, a_col, B, ldb, accumulate, C, ldc);             \
    } while (0)
    switch ((N + 7) / 8) {
    case 5: NARROW(5); break;
    case 4: NARROW(4); break;
    case 3: NARROW(3); break;
    case 2: NARROW(2); break;
    default: NARROW(1); break;
    }
#undef NARROW
}

/* One block of up to 4 rows and up to 16 columns (n of them). */
TILE void nn_block(int rows, int64_t n, int64_t K, const float *A, int64_t a_row, int64_t a_col,
                   const float *B, int64_t ldb, int accumulate, float *C, int64_t ldc) {
#define NN_TILE(VECS, MASKED, LAST)                                                                \
    nn_tile(rows, VECS, MASKED, LAST, K, A, a_row, a_col, B, ldb, accumulate, C, ldc)
    if (n == 16)
        NN_TILE(2, 0, 8);
    else if (n > 8)
        NN_TILE(2, 1, n - 8);
    else if (n == 8)
        NN_TILE(1, 0, 8);
    else
        NN_TILE(1, 1, n);
#undef NN_TILE
}

AVX2_FMA void px_gemm_small_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t a_row,
                                int64_t a_col, const float *B, int64_t ldb, int accumulate,
                                float *C, int64_t ldc) {
    if (N <= 40) {
        for (int64_t i = 0; i < M; i += 2) {
            const float *a = A + i * a_row;
            float *c = C + i * ldc;
            if (M - i >= 2)
                nn_narrow(2, N, K, a, a_row, a_col, B, ldb, accumulate, c, ldc);
            else
                nn_narrow(1, N, K, a, a_row, a_col, B, ldb, accumulate, c, ldc);
        }
        return;
    }
    /* column panels outside: a panel of B (K x 16) stays in L1 for every
     * block of rows */
    for (int64_t j = 0; j < N; j += 16) {
        int64_t n = N - j < 16 ? N - j : 16;
        for (int64_t i = 0; i < M; i += 4) {
            const float *a = A + i * a_row;
            float *c = C + i * ldc + j;
            switch (M - i < 4 ? M - i : 4) {
            case 4: nn_block(4, n, K, a, a_row, a_col, B + j, ldb, accumulate, c, ldc); break;
            case 3: nn_block(3, n, K, a, a_row, a_col, B + j, ldb, accumulate, c, ldc); break;
            case 2: nn_block(2, n, K, a, a_row, a_col, B + j, ldb, accumulate, c, ldc); break;
            default: nn_block(1, n, K, a, a_row, a_col, B + j, ldb, accumulate, c, ldc); break;
            }
        }
    }
}

/* The 8 lanes of v added in a fixed order. */
TILE float lane_sum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

/* acc[i][j] += A[i, p..p+8) * B[j, p..p+8) (the first lanes only when
 * masked). One B vector at a time per row keeps the 12 accumulators, 3 B
 * vectors and one A vector in the 16 registers. */
TILE void nt_step(int rows, int cols, __m256 acc[4][3], const float *a, int64_t lda, const float *b,
                  int64_t ldb, int masked, __m256i mask) {
    __m256 bv[3];
    UNROLLED
    for (int j = 0; j < cols; j++) bv[j] = load8(b + j * ldb, masked, mask);
    UNROLLED
    for (int i = 0; i < rows; i++) {
        __m256 ai = load8(a + i * lda, masked, mask);
        UNROLLED
        for (int j = 0; j < cols; j++) acc[i][j] = _mm256_fmadd_ps(ai, bv[j], acc[i][j]);
    }
}

/* C[i, j] += (A_t[i, :] . B_t[j, :] over every t) for i < rows, j < cols. */
TILE void nt_tile(int rows, int cols, int64_t P, int64_t count, const float *A, int64_t lda,
                  int64_t a_next, const float *B, int64_t ldb, int64_t b_next, float *C,
                  int64_t ldc) {
    __m256 acc[4][3];
    UNROLLED
    for (int i = 0; i < rows; i++) UNROLLED
    for (int j = 0; j < cols; j++) acc[i][j] = _mm256_setzero_ps();
    int64_t full = P / 8 * 8;
    for (int64_t t = 0; t < count; t++) {
        const float *a = A + t * a_next, *b = B + t * b_next;
        for (int64_t p = 0; p < full; p += 8)
            nt_step(rows, cols, acc, a + p, lda, b + p, ldb, 0, _mm256_setzero_si256());
        if (full < P) nt_step(rows, cols, acc, a + full, lda, b + full, ldb, 1, lanes(P - full));
    }
    UNROLLED
    for (int i = 0; i < rows; i++) UNROLLED
    for (int j = 0; j < cols; j++) C[i * ldc + j] += lane_sum(acc[i][j]);
}

/* Up to 4 rows by `cols` (1..3) columns. */
TILE void nt_block(int rows, int64_t cols, int64_t P, int64_t count, const float *A, int64_t lda,
                   int64_t a_next, const float *B, int64_t ldb, int64_t b_next, float *C,
                   int64_t ldc) {
    if (cols == 3)
        nt_tile(rows, 3, P, count, A, lda, a_next, B, ldb, b_next, C, ldc);
    else if (cols == 2)
        nt_tile(rows, 2, P, count, A, lda, a_next, B, ldb, b_next, C, ldc);
    else
        nt_tile(rows, 1, P, count, A, lda, a_next, B, ldb, b_next, C, ldc);
}

AVX2_FMA void px_gemm_small_nt_f32(int64_t M, int64_t N, int64_t P, int64_t count, const float *A,
                                   int64_t lda, int64_t a_next, const float *B, int64_t ldb,
                                   int64_t b_next, float *C, int64_t ldc) {
    /* columns outside: the 3 rows of each B_t are read once, A's (M rows
     * of every t) stay in L1 */
    for (int64_t j = 0; j < N; j += 3)
        for (int64_t i = 0; i < M; i += 4) {
            int64_t cols = N - j < 3 ? N - j : 3;
            const float *a = A + i * lda, *b = B + j * ldb;
            float *c = C + i * ldc + j;
            switch (M - i < 4 ? M - i : 4) {
            case 4: nt_block(4, cols, P, count, a, lda, a_next, b, ldb, b_next, c, ldc); break;
            case 3: nt_block(3, cols, P, count, a, lda, a_next, b, ldb, b_next, c, ldc); break;
            case 2: nt_block(2, cols, P, count, a, lda, a_next, b, ldb, b_next, c, ldc); break;
            default: nt_block(1, cols, P, count, a, lda, a_next, b, ldb, b_next, c, ldc); break;
            }
        }
}

#else /* not x86-64: the callers keep OpenBLAS */

int px_gemm_small_ready(void) {
    return 0;
}

void px_gemm_small_f32(int64_t M, int64_t N, int64_t K, const float *A, int64_t a_row,
                       int64_t a_col, const float *B, int64_t ldb, int accumulate, float *C,
                       int64_t ldc) {
    (void)M, (void)N, (void)K, (void)A, (void)a_row, (void)a_col, (void)B, (void)ldb;
    (void)accumulate, (void)C, (void)ldc;
    px_rt_fail("px_gemm_small_f32: this CPU has no AVX2 + FMA (px_gemm_small_ready)");
}

void px_gemm_small_nt_f32(int64_t M, int64_t N, int64_t P, int64_t count, const float *A,
                          int64_t lda, int64_t a_next, const float *B, int64_t ldb, int64_t b_next,
                          float *C, int64_t ldc) {
    (void)M, (void)N, (void)P, (void)count, (void)A, (void)lda, (void)a_next, (void)B, (void)ldb;
    (void)b_next, (void)C, (void)ldc;
    px_rt_fail("px_gemm_small_nt_f32: this CPU has no AVX2 + FMA (px_gemm_small_ready)");
}

#endif
