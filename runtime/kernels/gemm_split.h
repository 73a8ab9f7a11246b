/* cblas_sgemm / cblas_dgemm split over the rank's threads (thread_pool.h),
 * with the same bits as one single-threaded call.
 *
 * OpenBLAS's own threads are not used: its threaded sgemm (0.3.21) gives
 * results that differ in the last bits with the thread count. One
 * single-threaded call per block of rows of C does not, as long as every
 * block starts at a multiple of the micro-kernel's tile: OpenBLAS tiles
 * row-major rows (column-major columns) in units of its UNROLL_N (12 for the
 * Haswell/Zen sgemm; 2 to 24 elsewhere), and each element is computed by the
 * same tile code at the same position either way. Blocks start at
 * multiples of 48, which every such unit divides; tests/cli/train_threads.sh
 * checks the bits end to end. */
#ifndef PX_GEMM_SPLIT_H
#define PX_GEMM_SPLIT_H

#include <cblas.h>

void px_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M,
              int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc);
void px_dgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int M,
              int N, int K, double alpha, const double *A, int lda, const double *B, int ldb,
              double beta, double *C, int ldc);

#endif
