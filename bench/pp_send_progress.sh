#!/bin/bash
# Usage: bench/pp_send_progress.sh [BYTES]
#
# How long a pipeline receive waits when its sender is computing
# (docs/parallelism.md, "What this version does not do yet"): rank 0
# posts an MPI_Isend of BYTES (default 1 MiB) and computes 0.2 s before
# MPI_Wait; rank 1 posts MPI_Recv 0.05 s in. Where the receiver can pull
# the data alone (Open MPI's CMA single-copy on one host) the receive takes
# about nothing; where the sender must push it (over TCP, or without CMA)
# it waits for the sender's next MPI call, 0.15 s here. Each transport is
# run without and with a thread that calls MPI_Iprobe every 200 us while
# the send is pending (what the runtime's communication thread does for
# prefetched pulls, comm/sched/comm_thread.c). 3 receives each, in seconds.
set -euo pipefail
bytes=${1:-1048576}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/progress.c" <<'C'
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static volatile int stop, pending;
static MPI_Comm poll_comm;
static void *poller(void *arg) {
    (void)arg;
    while (!stop) {
        int flag;
        if (pending) MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, poll_comm, &flag, MPI_STATUS_IGNORE);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}
static void compute(double s) {
    double t = MPI_Wtime();
    while (MPI_Wtime() - t < s) continue;
}
int main(int argc, char **argv) {
    int provided, rank, n = atoi(argv[1]) / 4, poll = atoi(argv[2]);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_dup(MPI_COMM_WORLD, &poll_comm);
    pthread_t th;
    if (poll) pthread_create(&th, NULL, poller, NULL);
    float *buf = calloc((size_t)n, 4);
    for (int it = 0; it < 3; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Request rq;
            MPI_Isend(buf, n, MPI_FLOAT, 1, it, MPI_COMM_WORLD, &rq);
            pending = 1;
            compute(0.2);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            pending = 0;
        } else {
            compute(0.05);
            double t = MPI_Wtime();
            MPI_Recv(buf, n, MPI_FLOAT, 0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            printf(" %.4f", MPI_Wtime() - t);
        }
    }
    stop = 1;
    if (poll) pthread_join(th, NULL);
    free(buf);
    MPI_Finalize();
    return 0;
}
C
mpicc -O2 "$tmp/progress.c" -o "$tmp/progress" -lpthread
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "receive of $bytes bytes while the sender computes 0.15 s more (s):"
for t in "default (CMA single-copy on one host)|" \
    "no CMA|--mca btl_vader_single_copy_mechanism none" "TCP|--mca btl self,tcp"; do
    for poll in 0 1; do
        printf '  %-40s %-22s' "${t%%|*}" "$([ $poll = 1 ] && echo "polling thread" || echo "no polling thread")"
        # shellcheck disable=SC2086
        mpirun -np 2 ${t#*|} "$tmp/progress" "$bytes" "$poll"
        echo
    done
done
