/* Row-block parallel GEMM (gemm_split.h). */
#include "gemm_split.h"

#include "thread_pool.h"

#include <stdint.h>

/* Rows of C per block: a multiple of every OpenBLAS tile height. */
enum { ROW_TILE = 48 };

typedef struct gemm_job {
    enum CBLAS_TRANSPOSE ta, tb;
    int N, K, lda, ldb, ldc;
    double alpha, beta;
    const void *A, *B;
    void *C;
    int f64;
} gemm_job;

/* Rows [lo, hi) of C: op(A)'s rows lo.. are A's rows (no transpose) or
 * its columns (transposed). */
static void gemm_rows(void *ctx, int64_t lo, int64_t hi) {
    const gemm_job *j = ctx;
    int64_t a_off = j->ta == CblasNoTrans ? lo * j->lda : lo, c_off = lo * j->ldc;
    if (j->f64)
        cblas_dgemm(CblasRowMajor, j->ta, j->tb, (int)(hi - lo), j->N, j->K, j->alpha,
                    (const double *)j->A + a_off, j->lda, j->B, j->ldb, j->beta,
                    (double *)j->C + c_off, j->ldc);
    else
        cblas_sgemm(CblasRowMajor, j->ta, j->tb, (int)(hi - lo), j->N, j->K, (float)j->alpha,
                    (const float *)j->A + a_off, j->lda, j->B, j->ldb, (float)j->beta,
                    (float *)j->C + c_off, j->ldc);
}

/* Blocks of whole tiles holding at least ~256k multiply-adds each. */
static int64_t row_grain(int N, int K) {
    int64_t per_row = (int64_t)N * (K > 0 ? K : 1);
    int64_t rows = per_row > 0 ? ((int64_t)1 << 18) / per_row : ROW_TILE;
    return (rows + ROW_TILE - 1) / ROW_TILE * ROW_TILE + (rows == 0 ? ROW_TILE : 0);
}

static void run(gemm_job *j, enum CBLAS_ORDER order, int M) {
    if (order != CblasRowMajor || px_pool_threads() <= 1 || M < 2 * ROW_TILE) {
        gemm_rows(j, 0, M);
        return;
    }
    px_parallel_for(M, row_grain(j->N, j->K), gemm_rows, j);
}

void px_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M,
              int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc) {
    if (order != CblasRowMajor) {
        cblas_sgemm(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    gemm_job j = {ta, tb, N, K, lda, ldb, ldc, alpha, beta, A, B, C, 0};
    run(&j, order, M);
}

void px_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M,
              int N, int K, double alpha, const double *A, int lda, const double *B, int ldb,
              double beta, double *C, int ldc) {
    if (order != CblasRowMajor) {
        cblas_dgemm(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    gemm_job j = {ta, tb, N, K, lda, ldb, ldc, alpha, beta, A, B, C, 1};
    run(&j, order, M);
}
