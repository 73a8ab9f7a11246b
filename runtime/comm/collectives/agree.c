/* The agreements of the sharded checkpoint (runtime/program/): a value
 * broadcast by rank 0, the lowest value over the ranks, and each rank's
 * piece hashes gathered to rank 0. On coll_comm, counted as "other"
 * traffic. */
#include "collectives.h"

#include <stdlib.h>

uint64_t px_comm_bcast_u64(uint64_t v) {
    if (px_world.size == 1) return v;
    comm_activity(WATCH_MAIN, "a checkpoint broadcast (MPI_Bcast)");
    MPI_Bcast(&v, 1, MPI_UINT64_T, 0, px_world.coll_comm);
    comm_activity_clear(WATCH_MAIN);
    if (px_world.rank == 0)
        comm_count_sent(PX_TRAFFIC_OTHER, 8);
    else
        comm_count_received(PX_TRAFFIC_OTHER, 8);
    return v;
}

int64_t px_comm_min_i64(int64_t v) {
    if (px_world.size == 1) return v;
    int64_t lowest = v;
    comm_activity(WATCH_MAIN, "a checkpoint agreement (MPI_Allreduce)");
    MPI_Allreduce(&v, &lowest, 1, MPI_INT64_T, MPI_MIN, px_world.coll_comm);
    comm_activity_clear(WATCH_MAIN);
    comm_count_sent(PX_TRAFFIC_OTHER, 8);
    comm_count_received(PX_TRAFFIC_OTHER, 8);
    return lowest;
}

uint64_t *px_comm_gather_u64(const uint64_t *mine, int64_t n, int64_t *counts) {
    int size = px_world.size, me = px_world.rank;
    if (n < 0 || n > 0x7fffffff) px_rt_fail("checkpoint: %lld hashes to gather", (long long)n);
    int mine_n = (int)n, *got = NULL, *offs = NULL;
    uint64_t *all = NULL;
    if (me == 0) {
        got = calloc((size_t)size, sizeof *got);
        offs = calloc((size_t)size, sizeof *offs);
        if (!got || !offs) px_rt_fail("out of memory gathering checkpoint hashes");
    }
    comm_activity(WATCH_MAIN, "the checkpoint's piece hashes (MPI_Gather)");
    MPI_Gather(&mine_n, 1, MPI_INT, got, 1, MPI_INT, 0, px_world.coll_comm);
    int64_t total = 0;
    if (me == 0)
        for (int r = 0; r < size; r++) {
            offs[r] = (int)total;
            counts[r] = got[r];
            total += got[r];
            if (total > 0x7fffffff) px_rt_fail("checkpoint: too many piece hashes");
        }
    if (me == 0) {
        all = malloc(sizeof *all * (size_t)(total > 0 ? total : 1));
        if (!all) px_rt_fail("out of memory gathering checkpoint hashes");
    }
    MPI_Gatherv(mine, mine_n, MPI_UINT64_T, all, got, offs, MPI_UINT64_T, 0, px_world.coll_comm);
    comm_activity_clear(WATCH_MAIN);
    if (me == 0)
        comm_count_received(PX_TRAFFIC_OTHER, 8 * (total - n) + 4 * (size - 1));
    else
        comm_count_sent(PX_TRAFFIC_OTHER, 8 * n + 4);
    free(got);
    free(offs);
    return all;
}
