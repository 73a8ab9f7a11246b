/* How many compute threads a rank uses (--threads) and starting them. */
#ifndef PX_RANK_THREADS_H
#define PX_RANK_THREADS_H

#include <stdint.h>

/* requested: --threads N, or 0 for the default: OPENBLAS_NUM_THREADS or
 * OMP_NUM_THREADS when set, else px_pool_default_threads(ranks_here) (the
 * CPUs this process may run on divided by the ranks on its node, or by the
 * ranks_here that run on this machine's kernel when more). Starts the
 * kernels' pool with that many threads (the caller's is one of them), GEMM
 * included (gemm_split.h), and keeps OpenBLAS itself single-threaded.
 * Returns the count. Call once, before px_blas_reserve. */
int px_rank_threads_start(int requested, int ranks_here);

/* Where the count came from, for --stats: "--threads N",
 * "OMP_NUM_THREADS=N", or "default: C CPUs / R ranks sharing them". */
const char *px_rank_threads_reason(void);

/* A key equal on the ranks that run on one machine's kernel, whatever their
 * host names (containers, network namespaces): a hash of the kernel's boot
 * id; 0 when it cannot be read. For px_comm_ranks_sharing. */
uint64_t px_machine_key(void);

#endif
