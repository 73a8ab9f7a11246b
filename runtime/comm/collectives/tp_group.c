/* The sum over a tensor-parallel group (--tp K: groups of K consecutive
 * ranks). Every rank of the group must end with the same bits, or the
 * weights the group replicates would drift apart: the partial sums are
 * gathered and added in rank order on each rank, never by MPI_Allreduce
 * (whose order MPI does not promise to be the same on every rank). */
#include "collectives.h"

#include <stdlib.h>
#include <string.h>

static MPI_Comm group_comm = MPI_COMM_NULL;
static int group_tp;
static float *gathered;
static int64_t gathered_cap;

/* Split at the first call: every rank makes the same kernel calls in the
 * same order, so every rank is here at once (with --pp the runtime calls it
 * before the first step: a stage's calls run on its ranks only). The
 * communicator lives until MPI_Finalize. */
void comm_tp_group_setup(int tp) {
    if (group_comm != MPI_COMM_NULL) {
        if (tp != group_tp)
            px_rt_fail("tensor-parallel sum: groups of %d ranks asked after groups of %d", tp,
                       group_tp);
        return;
    }
    if (tp < 1 || px_world.size % tp != 0)
        px_rt_fail("--tp %d: the program runs on %d ranks, not a multiple of %d", tp, px_world.size,
                   tp);
    MPI_Comm_split(px_world.coll_comm, px_world.rank / tp, px_world.rank, &group_comm);
    group_tp = tp;
}

void comm_tp_group_sum(const float *x, float *y, int64_t n, int tp) {
    if (tp == 1) {
        if (y != x) memmove(y, x, sizeof(float) * (size_t)n);
        return;
    }
    if (n * tp > gathered_cap) {
        free(gathered);
        gathered = malloc(sizeof(float) * (size_t)(n * tp));
        if (!gathered) px_rt_fail("out of memory for a tensor-parallel sum");
        gathered_cap = n * tp;
    }
    px_comm_tp_gather(x, gathered, n, tp);
    for (int64_t i = 0; i < n; i++) {
        float s = gathered[i];
        for (int r = 1; r < tp; r++) s += gathered[(int64_t)r * n + i];
        y[i] = s;
    }
}

void px_comm_tp_gather(const float *mine, float *all, int64_t n, int tp) {
    if (tp == 1) {
        memmove(all, mine, sizeof(float) * (size_t)n);
        return;
    }
    comm_tp_group_setup(tp);
    if (n > INT32_MAX) px_rt_fail("tensor-parallel gather of %lld values: too many", (long long)n);
    comm_activity(WATCH_MAIN,
                  "the tensor-parallel gather of %lld values over %d ranks (MPI_Allgather)",
                  (long long)n, tp);
    MPI_Allgather(mine, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, group_comm);
    comm_activity_clear(WATCH_MAIN);
    comm_progress();
    comm_count_sent(PX_TRAFFIC_OTHER, 4 * n * (tp - 1));
    comm_count_received(PX_TRAFFIC_OTHER, 4 * n * (tp - 1));
}
