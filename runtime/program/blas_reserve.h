#ifndef PX_BLAS_RESERVE_H
#define PX_BLAS_RESERVE_H

/* Makes OpenBLAS allocate its work buffers now, on the calling thread and
 * on every BLAS worker thread, before the program allocates the weights and
 * the parameter-server rows. OpenBLAS allocates them lazily at the first
 * gemm, and when that allocation fails (a rank under a memory limit that
 * its weights already filled) it retries forever or exits without a word;
 * allocating them first makes the weights' own allocation the one that
 * fails, with a message naming the variable. Call after the BLAS thread
 * count is set. */
void px_blas_reserve(void);

#endif
