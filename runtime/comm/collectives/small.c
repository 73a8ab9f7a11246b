/* Small collectives of the training main: the mean of the loss, the
 * consistency check across ranks, the partial sums behind gradient
 * clipping and the validation loss (an allgather of a few doubles, summed
 * in rank order by the caller so every rank gets the same bits), the
 * gathering of each rank's --trace events to rank 0, and the count of
 * ranks that share a machine. */
#include "collectives.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

double px_comm_mean(double v) {
    if (px_world.size == 1) return v;
    double sum = 0;
    comm_activity(WATCH_MAIN, "the mean of the loss over all ranks (MPI_Allreduce)");
    MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, px_world.coll_comm);
    comm_activity_clear(WATCH_MAIN);
    comm_progress();
    comm_count_sent(PX_TRAFFIC_OTHER, 8);
    comm_count_received(PX_TRAFFIC_OTHER, 8);
    return sum / px_world.size;
}

int px_comm_first_mismatch(uint64_t v) {
    if (px_world.size == 1) return -1;
    uint64_t v0 = v;
    comm_activity(WATCH_MAIN, "the consistency check across ranks (MPI_Bcast, MPI_Allreduce)");
    MPI_Bcast(&v0, 1, MPI_UINT64_T, 0, px_world.coll_comm);
    int mine = v == v0 ? px_world.size : px_world.rank, lowest = px_world.size;
    MPI_Allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, px_world.coll_comm);
    comm_activity_clear(WATCH_MAIN);
    comm_progress();
    comm_count_sent(PX_TRAFFIC_OTHER, px_world.rank == 0 ? 8 + 4 : 4);
    comm_count_received(PX_TRAFFIC_OTHER, px_world.rank == 0 ? 4 : 8 + 4);
    return lowest == px_world.size ? -1 : lowest;
}

void px_comm_allgather_doubles(const double *mine, int n, double *all) {
    if (px_world.size == 1) {
        memcpy(all, mine, sizeof(double) * (size_t)n);
        return;
    }
    comm_activity(WATCH_MAIN, "the exchange of %d partial sum(s) across ranks (MPI_Allgather)", n);
    MPI_Allgather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE, px_world.coll_comm);
    comm_activity_clear(WATCH_MAIN);
    comm_progress();
    comm_count_sent(PX_TRAFFIC_OTHER, 8 * (int64_t)n * (px_world.size - 1));
    comm_count_received(PX_TRAFFIC_OTHER, 8 * (int64_t)n * (px_world.size - 1));
}

int px_comm_ranks_sharing(uint64_t mine) {
    if (px_world.size == 1) return 1;
    uint64_t *all = malloc(sizeof(uint64_t) * (size_t)px_world.size);
    if (!all) px_rt_fail("out of memory");
    comm_activity(WATCH_MAIN, "the count of ranks on each machine (MPI_Allgather)");
    MPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, px_world.coll_comm);
    comm_activity_clear(WATCH_MAIN);
    int same = 0;
    for (int r = 0; r < px_world.size; r++) same += mine != 0 && all[r] == mine;
    free(all);
    return same > 0 ? same : 1;
}

void px_comm_gather_bytes(const void *mine, int64_t n, char **out, int64_t *lens) {
    int size = px_world.size, me = px_world.rank;
    *out = NULL;
    if (n > INT_MAX) px_rt_fail("rank %d: %lld bytes to gather: too many", me, (long long)n);
    if (size == 1) {
        lens[0] = n;
        *out = malloc((size_t)n + 1);
        if (!*out) px_rt_fail("out of memory gathering %lld bytes", (long long)n);
        memcpy(*out, mine, (size_t)n);
        return;
    }
    int len = (int)n, *all = calloc((size_t)size * 2, sizeof(int)), *displs = all + size;
    if (!all) px_rt_fail("out of memory gathering from %d ranks", size);
    comm_activity(WATCH_MAIN, "gathering the ranks' data to rank 0 (MPI_Gather)");
    MPI_Gather(&len, 1, MPI_INT, all, 1, MPI_INT, 0, px_world.coll_comm);
    int64_t total = 0;
    if (me == 0) {
        for (int r = 0; r < size; r++) {
            lens[r] = all[r];
            if (total + all[r] > INT_MAX) px_rt_fail("more than 2 GiB to gather to rank 0");
            displs[r] = (int)total;
            total += all[r];
        }
        *out = malloc((size_t)total + 1);
        if (!*out) px_rt_fail("out of memory gathering %lld bytes", (long long)total);
    }
    MPI_Gatherv(mine, len, MPI_BYTE, *out, all, displs, MPI_BYTE, 0, px_world.coll_comm);
    comm_activity_clear(WATCH_MAIN);
    comm_progress();
    comm_count_sent(PX_TRAFFIC_OTHER, me == 0 ? 0 : 4 + n);
    comm_count_received(PX_TRAFFIC_OTHER, me == 0 ? total - n + 4 * (size - 1) : 0);
    free(all);
}
