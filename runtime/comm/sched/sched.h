/* Layer 4 of the communication runtime: scheduling. Where and when each
 * communication runs: the communication thread and its FIFO of jobs (the
 * AllReduce of started buckets, the pushes of sparse PS variables), the
 * waits of the main thread for them, the communication kernels generated
 * code calls (sched/kernels.c), and the automatic choice of partitions.
 * Includes transport/, collectives/ and ps/. */
#ifndef PX_COMM_SCHED_H
#define PX_COMM_SCHED_H

#include "comm/ps/ps.h"

/* ---- comm_thread.c: the comm thread's FIFO of jobs ---- */
/* A job: run(arg, slot) does the work (on the thread of the watchdog slot
 * `slot`, comm_lock not held); done(arg) marks it complete (comm_lock held,
 * or no comm thread). pushes: the PS variable whose master rows the job
 * changes (the answers that read them go first), else NULL. Jobs: the
 * AllReduce of a bucket (allreduce_jobs.c), a push (push_async.c). */
typedef struct comm_job {
    void (*run)(int64_t arg, int slot);
    void (*done)(int64_t arg);
    int64_t arg;
    ps_var *pushes;
} comm_job;
void comm_thread_setup(void);               /* after the buckets and PS variables */
void comm_thread_teardown(void);            /* runs what is queued, then stops */
void comm_job_enqueue_locked(comm_job job); /* comm_lock held */
/* Without the thread: runs the oldest queued job on this thread; 0 if none. */
int comm_job_run_front(void);

/* ---- allreduce_jobs.c: buckets started, queued and waited for ---- */
void comm_allreduce_jobs_setup(void); /* after the buckets (collectives/) */
void comm_allreduce_jobs_teardown(void);
void comm_allreduce_start(int64_t bucket, int k, void *const *g, const int64_t *nbytes);
void comm_allreduce_wait(int64_t bucket, int k, void *const *g, void *const *out,
                         const int64_t *nbytes);
/* 1: the buckets started from now on stay on this rank (a local step of
 * --sync-every: each wait gives back the rank's own gradient); 0: they
 * are summed over the ranks. */
void comm_allreduce_set_local(int on);

/* ---- push_async.c: pushes run by the comm thread ---- */
void comm_push_setup(void);
void comm_push_teardown(void);
void comm_push_enqueue(ps_var *pv, const int64_t *idx, const float *rows, int64_t count,
                       int64_t capacity, int64_t dim);
void comm_push_wait_all(void); /* every queued push done (main thread) */

/* ---- autotune.c ---- */
void comm_autotune_setup(void);
void comm_autotune_step_end(double step_seconds);

#endif
