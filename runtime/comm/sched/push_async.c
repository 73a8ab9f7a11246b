/* Pushes that leave as soon as their row gradients are ready.
 *
 * The compiler moves each sparse variable's PSPush up to where its row set
 * can be complete (passes/push_early.c), which for the output layer of a
 * language model is early in the backward pass. Here the push is handed to
 * the comm thread (comm_thread.c): the row set is copied (the step reuses
 * its buffers), the next step's rows are requested (ps/prefetch.c, on this
 * thread: it reads the next batch), and the comm thread runs the push, the
 * shard's update and the answers to the requests, while the main thread
 * goes on with the backward pass.
 *
 * Same bits as pushing at the end of the step: a shard applies each
 * variable's update from the same sums in the same order, and nothing in
 * the step reads a PS variable's master rows after its push (its pulls are
 * in the forward pass). The step's end waits for every queued push
 * (comm_push_wait_all), so checkpoints, validation, re-partitioning and
 * the next step's pulls see every update.
 *
 * Queued pushes need the comm thread (MPI_THREAD_MULTIPLE, more than one
 * rank) and are off under --clip-grad-norm (the updates wait for the global
 * norm at the end of the step anyway) and --no-overlap. */
#include "sched.h"
#include "px_trace.h"

#include <stdlib.h>
#include <string.h>

enum { PUSH_IDLE = 0, PUSH_QUEUED, PUSH_DONE };

typedef struct ps_push_job {
    int state; /* guarded by comm_lock */
    int64_t count, dim;
    comm_buf idx, rows;
} ps_push_job;

static ps_push_job *jobs; /* one per PS variable (px_ps.ps) */
static int n_jobs;

void comm_push_setup(void) {
    n_jobs = px_ps.n_ps;
    jobs = calloc((size_t)(n_jobs > 0 ? n_jobs : 1), sizeof *jobs);
    if (!jobs) px_rt_fail("out of memory for the queued pushes");
}

void comm_push_teardown(void) {
    for (int i = 0; i < n_jobs; i++) {
        comm_buf_free(&jobs[i].idx);
        comm_buf_free(&jobs[i].rows);
    }
    free(jobs);
    jobs = NULL;
    n_jobs = 0;
}

static int index_of(const ps_var *pv) {
    return (int)(pv - px_ps.ps);
}

/* On the comm thread (or the main thread without one). */
static void push_run(int64_t i, int slot) {
    (void)slot;
    ps_var *pv = &px_ps.ps[i];
    ps_push_job *j = &jobs[i];
    double t0 = comm_now(), trace_t0 = px_trace_begin();
    comm_ps_push(pv->var, j->idx.p, j->rows.p, j->count, j->dim);
    comm_prefetch_after_push(pv);
    comm_time_busy(comm_now() - t0);
    px_trace_end(PX_SPAN_PS_PUSH, (int32_t)pv->var, trace_t0);
}

static void push_done(int64_t i) { /* comm_lock held */
    jobs[i].state = PUSH_DONE;
}

void comm_push_enqueue(ps_var *pv, const int64_t *idx, const float *rows, int64_t count,
                       int64_t capacity, int64_t dim) {
    ps_push_job *j = &jobs[index_of(pv)];
    comm_lock();
    int state = j->state;
    comm_unlock();
    if (state != PUSH_IDLE)
        px_rt_fail("internal error: a second push of '%s' in one step", pv->name);
    /* Reserved for the row set's capacity, the same every step, as
     * compiler/memory_model.c predicts it. */
    size_t idx_cap = sizeof(int64_t) * (size_t)capacity,
           rows_cap = sizeof(float) * (size_t)(capacity * dim);
    int64_t *ci = comm_buf_reserve(&j->idx, idx_cap + sizeof(int64_t));
    float *cr = comm_buf_reserve(&j->rows, rows_cap + sizeof(float));
    memcpy(ci, idx, sizeof(int64_t) * (size_t)count);
    memcpy(cr, rows, sizeof(float) * (size_t)(count * dim));
    comm_note_row_cache((int64_t)(idx_cap + rows_cap));
    j->count = count;
    j->dim = dim;
    comm_lock();
    j->state = PUSH_QUEUED;
    comm_job_enqueue_locked((comm_job){push_run, push_done, index_of(pv), pv});
    comm_unlock();
}

static int pending_locked(void) {
    for (int i = 0; i < n_jobs; i++)
        if (jobs[i].state == PUSH_QUEUED) return i;
    return -1;
}

void comm_push_wait_all(void) {
    if (!jobs) return;
    comm_lock();
    int first = pending_locked();
    if (first >= 0) {
        comm_unlock();
        double t0 = comm_now(), trace_t0 = px_trace_begin();
        comm_activity(WATCH_MAIN, "the queued push of '%s' (on the communication thread)",
                      px_ps.ps[first].name);
        comm_main_waits(1);
        comm_lock();
        while (pending_locked() >= 0) comm_cond_wait();
        comm_unlock();
        comm_main_waits(-1);
        comm_activity_clear(WATCH_MAIN);
        comm_time_waited(comm_now() - t0);
        px_trace_end(PX_SPAN_PUSH_WAIT, -1, trace_t0);
        comm_lock();
    }
    for (int i = 0; i < n_jobs; i++) jobs[i].state = PUSH_IDLE;
    comm_unlock();
    comm_progress();
}
