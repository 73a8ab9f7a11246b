#include "rank_threads.h"

#include "hash64.h"
#include "kernels/thread_pool.h"

#include <stdio.h>
#include <stdlib.h>

/* OpenBLAS (cblas.h declares it; declared here to keep the include set small). */
void openblas_set_num_threads(int num_threads);

/* A positive count from the environment, or 0. */
static int env_threads(const char *name) {
    const char *v = getenv(name);
    if (!v) return 0;
    char *end;
    long n = strtol(v, &end, 10);
    return end != v && *end == 0 && n >= 1 && n <= 256 ? (int)n : 0;
}

static char reason[96] = "not started";

const char *px_rank_threads_reason(void) {
    return reason;
}

int px_rank_threads_start(int requested, int ranks_here) {
    int n = requested;
    if (n >= 1) snprintf(reason, sizeof reason, "--threads %d", n);
    const char *vars[] = {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"};
    for (int i = 0; i < 2 && n < 1; i++)
        if ((n = env_threads(vars[i])) >= 1) snprintf(reason, sizeof reason, "%s=%d", vars[i], n);
    if (n < 1) {
        n = px_pool_default_threads(ranks_here);
        snprintf(reason, sizeof reason, "default: %d CPUs / %d ranks sharing them", px_pool_cpus(),
                 px_pool_sharing_ranks(ranks_here));
    }
    /* GEMM is split over the pool by blocks of rows (gemm_split.h), each a
     * single-threaded OpenBLAS call: OpenBLAS's own threading changes the
     * last bits of a product with the thread count, and its idle threads
     * would spin against ours. */
    openblas_set_num_threads(1);
    return px_pool_start(n);
}

uint64_t px_machine_key(void) {
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f) return 0;
    char id[64];
    size_t n = fread(id, 1, sizeof id, f);
    fclose(f);
    return n > 0 ? px_hash64(PX_HASH64_INIT, id, n) | 1 : 0; /* never 0, which means unknown */
}
