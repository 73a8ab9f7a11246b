/* The rank's compute threads (issue 11): a small persistent pool of
 * pthreads that the heavy kernels split their independent work over.
 *
 * Results do not depend on the thread count: px_parallel_for hands out
 * disjoint index ranges, and every kernel that uses it computes each output
 * element inside exactly one range with the arithmetic (and summation
 * order) of the serial loop. Sums over the split dimension are never formed
 * across ranges; a kernel that needs one (a loss summed over rows) stores
 * the per-index terms and adds them up afterwards in index order.
 *
 * The generated code and OpenBLAS run on the calling thread; the workers
 * sleep on a condition variable between parallel loops (after a short spin),
 * so an idle pool costs no CPU. The calling thread takes a loop's pieces
 * too, and every piece that no worker has claimed yet: it never waits for a
 * worker to wake up, only for pieces already running, so a loop split over
 * threads is never much slower than the serial loop. The communication
 * thread never calls in. */
#ifndef PX_THREAD_POOL_H
#define PX_THREAD_POOL_H

#include <stdint.h>

/* Work on the indices [lo, hi) of a loop; ctx is the caller's. */
typedef void (*px_range_fn)(void *ctx, int64_t lo, int64_t hi);

/* Starts threads - 1 workers (the caller is the first thread); threads <= 1
 * or a second call after workers exist changes nothing. Returns the number
 * of threads in use (fewer when the system refuses to create more). */
int px_pool_start(int threads);
/* Threads px_parallel_for splits over (1 before px_pool_start). */
int px_pool_threads(void);
/* How many px_parallel_for calls were split over several threads so far
 * (--stats reports it: a test's proof that the split happened). */
long long px_pool_splits(void);
/* Joins the workers (at exit; px_pool_start may be called again after). */
void px_pool_stop(void);

/* Calls fn over disjoint ranges that cover [0, n) exactly once: at most
 * 4 * px_pool_threads() ranges, each starting at a multiple of `grain` (>= 1)
 * and, except the last, a multiple of `grain` long. n < 2 * grain (a split
 * whose second piece would hold less than one grain: it saves less than
 * handing it out costs), one thread, a call from inside a range or from a
 * thread other than the one that called px_pool_start runs fn(ctx, 0, n)
 * on the caller. Returns
 * when every range is done. Pick grain so that grain indices are worth
 * tens of microseconds: smaller pieces cost more to hand out than they save. */
void px_parallel_for(int64_t n, int64_t grain, px_range_fn fn, void *ctx);

/* grain for a loop whose index costs about `work_per_index` elementary
 * operations (floats touched): enough indices for ~32k operations. */
static inline int64_t px_grain_for(int64_t work_per_index) {
    int64_t g = work_per_index > 0 ? ((int64_t)1 << 15) / work_per_index : ((int64_t)1 << 15);
    return g < 1 ? 1 : g;
}

/* The thread count a rank gets by default: the CPUs it may run on
 * (sched_getaffinity) divided by the ranks that share them: the ranks on its
 * node (OMPI_COMM_WORLD_LOCAL_SIZE, 1 outside mpirun) or ranks_here, the
 * ranks running on this machine's kernel, whichever is more; at least 1. */
int px_pool_default_threads(int ranks_here);
/* Its parts: the CPUs (at least 1) and the ranks sharing them. */
int px_pool_cpus(void);
int px_pool_sharing_ranks(int ranks_here);

#endif
