/* Collectives of the validation metrics (runtime/program/auc.c): a sum of
 * uint64 counters over the ranks, and an all-to-all exchange of byte
 * blobs. On coll_comm, counted as "other" traffic. */
#include "collectives.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

void px_comm_sum_u64(uint64_t *buf, int64_t n, const char *what) {
    if (px_world.size == 1 || n == 0) return;
    if (n > INT_MAX) px_rt_fail("%s: %lld counters to sum: too many", what, (long long)n);
    comm_activity(WATCH_MAIN, "%s (MPI_Allreduce of %lld counters)", what, (long long)n);
    MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_UINT64_T, MPI_SUM, px_world.coll_comm);
    comm_activity_clear(WATCH_MAIN);
    comm_progress();
    comm_count_sent(PX_TRAFFIC_OTHER, 8 * n);
    comm_count_received(PX_TRAFFIC_OTHER, 8 * n);
}

void px_comm_exchange_bytes(const void *send, const int64_t *send_lens, char **out,
                            int64_t *recv_lens, const char *what) {
    int size = px_world.size, me = px_world.rank;
    int64_t total = 0;
    if (size == 1) {
        recv_lens[0] = send_lens[0];
        *out = malloc((size_t)send_lens[0] + 1);
        if (!*out) px_rt_fail("%s: out of memory for %lld bytes", what, (long long)send_lens[0]);
        memcpy(*out, send, (size_t)send_lens[0]);
        return;
    }
    int *counts = calloc((size_t)size * 4, sizeof(int));
    if (!counts) px_rt_fail("%s: out of memory", what);
    int *sdispls = counts + size, *rcounts = counts + 2 * size, *rdispls = counts + 3 * size;
    int64_t sent = 0;
    for (int r = 0; r < size; r++) {
        if (send_lens[r] > INT_MAX || sent + send_lens[r] > INT_MAX)
            px_rt_fail("%s: more than 2 GiB to send from rank %d", what, me);
        counts[r] = (int)send_lens[r];
        sdispls[r] = (int)sent;
        sent += send_lens[r];
    }
    comm_activity(WATCH_MAIN, "%s (MPI_Alltoall, MPI_Alltoallv)", what);
    MPI_Alltoall(counts, 1, MPI_INT, rcounts, 1, MPI_INT, px_world.coll_comm);
    for (int r = 0; r < size; r++) {
        if (total + rcounts[r] > INT_MAX)
            px_rt_fail("%s: more than 2 GiB to receive at rank %d", what, me);
        recv_lens[r] = rcounts[r];
        rdispls[r] = (int)total;
        total += rcounts[r];
    }
    *out = malloc((size_t)total + 1);
    if (!*out) px_rt_fail("%s: out of memory for %lld bytes", what, (long long)total);
    MPI_Alltoallv(send, counts, sdispls, MPI_BYTE, *out, rcounts, rdispls, MPI_BYTE,
                  px_world.coll_comm);
    comm_activity_clear(WATCH_MAIN);
    comm_progress();
    comm_count_sent(PX_TRAFFIC_OTHER, sent - send_lens[me] + 4 * (size - 1));
    comm_count_received(PX_TRAFFIC_OTHER, total - recv_lens[me] + 4 * (size - 1));
    free(counts);
}
