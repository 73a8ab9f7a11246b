/* The AllReduce of a bucket as a job: px_k_allreduce_start packs the
 * bucket's gradients (collectives/allreduce.c) and queues it; the comm
 * thread (comm_thread.c) runs the queued buckets FIFO while the main
 * thread goes on computing; px_k_allreduce_wait blocks until its bucket is
 * done and writes sum / N. Without MPI_THREAD_MULTIPLE the queued buckets
 * run, still FIFO, inside the wait of the bucket that needs them. Every
 * rank must start the buckets in the same order.
 *
 * In a local step of --sync-every (comm_allreduce_set_local) nothing
 * travels: the wait hands each rank its own gradient, and the replicas
 * are averaged after the step instead (comm.c). A single rank without
 * error feedback does the same on every step: its bucket would be a copy
 * there and back. */
#include "sched.h"

#include <stdlib.h>
#include <string.h>

enum bucket_state { BUCKET_IDLE = 0, BUCKET_QUEUED, BUCKET_DONE, BUCKET_LOCAL };

static int *state; /* per bucket, enum bucket_state, guarded by comm_lock */
static int local;  /* this step's buckets stay on the rank (main thread) */

void comm_allreduce_set_local(int on) {
    local = on;
}

void comm_allreduce_jobs_setup(void) {
    int64_t n = comm_allreduce_n_buckets();
    state = calloc((size_t)(n > 0 ? n : 1), sizeof *state);
    if (!state) px_rt_fail("out of memory for the allreduce buckets");
}

void comm_allreduce_jobs_teardown(void) {
    free(state);
    state = NULL;
}

static void bucket_done(int64_t b) { /* comm_lock held */
    state[b] = BUCKET_DONE;
}

void comm_allreduce_start(int64_t b, int k, void *const *g, const int64_t *nbytes) {
    comm_allreduce_check(b, k, nbytes, "allreduce start");
    comm_lock();
    int s = state[b];
    comm_unlock();
    if (s != BUCKET_IDLE)
        px_rt_fail("allreduce of bucket %lld started again before it was waited for", (long long)b);
    /* local: a local step of --sync-every; passes through: one rank, nothing
     * to round (the sum over one rank is its gradient, the packing a copy) */
    if (local || comm_allreduce_passes_through(b)) {
        comm_lock();
        state[b] = BUCKET_LOCAL;
        comm_unlock();
        return;
    }
    comm_allreduce_pack(b, k, g, nbytes);
    comm_lock();
    if (comm_allreduce_ranks(b) == 1) {
        state[b] = BUCKET_DONE;
    } else {
        state[b] = BUCKET_QUEUED;
        comm_job_enqueue_locked((comm_job){comm_allreduce_run_bucket, bucket_done, b, NULL});
    }
    comm_unlock();
}

void comm_allreduce_wait(int64_t b, int k, void *const *g, void *const *out,
                         const int64_t *nbytes) {
    comm_allreduce_check(b, k, nbytes, "allreduce wait");
    comm_lock();
    int s = state[b];
    comm_unlock();
    if (s == BUCKET_IDLE)
        px_rt_fail("allreduce wait for bucket %lld, which was not started", (long long)b);
    if (s == BUCKET_LOCAL) { /* this rank's own gradients */
        for (int i = 0; i < k; i++)
            if (out[i] != g[i]) memmove(out[i], g[i], (size_t)nbytes[i]);
        comm_lock();
        state[b] = BUCKET_IDLE;
        comm_unlock();
        comm_progress();
        return;
    }
    double t0 = comm_now();
    if (comm_thread_running()) {
        comm_activity(WATCH_MAIN, "the allreduce of bucket %lld", (long long)b);
        comm_main_waits(1);
        comm_lock();
        while (state[b] != BUCKET_DONE) comm_cond_wait();
        comm_unlock();
        comm_main_waits(-1);
        comm_activity_clear(WATCH_MAIN);
    } else {
        while (state[b] != BUCKET_DONE) /* run the queue up to b, in start order */
            if (!comm_job_run_front())
                px_rt_fail("internal error: bucket %lld is queued but not in the queue",
                           (long long)b);
    }
    comm_time_waited(comm_now() - t0);
    comm_allreduce_unpack(b, k, out, nbytes);
    comm_lock();
    state[b] = BUCKET_IDLE;
    comm_unlock();
    comm_progress();
}
