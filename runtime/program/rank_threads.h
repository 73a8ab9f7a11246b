/* How many compute threads a rank uses (--threads) and starting them. */
#ifndef PX_RANK_THREADS_H
#define PX_RANK_THREADS_H

/* requested: --threads N, or 0 for the default: OPENBLAS_NUM_THREADS or
 * OMP_NUM_THREADS when set, else px_pool_default_threads(ranks_here) (the
 * CPUs this process may run on divided by the ranks on its node, or by the
 * ranks_here that run on this machine's kernel when more). Starts the
 * kernels' pool with that many threads (the caller's is one of them), GEMM
 * included (gemm_split.h), and keeps OpenBLAS itself single-threaded.
 * Returns the count. Call once, before px_blas_reserve. */
int px_rank_threads_start(int requested, int ranks_here);

#endif
