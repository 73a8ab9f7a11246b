/* The communication thread: runs queued jobs in FIFO order while the main
 * thread computes, and keeps MPI's transfers moving when it has none.
 *
 * Jobs (sched.h, comm_job_*): the AllReduce of a started bucket
 * (allreduce_jobs.c) and the push of a sparse parameter-server variable
 * whose row gradients are ready (push_async.c). Every rank queues the same
 * jobs in the same order (the program's order), so running them one after
 * the other on every rank matches their messages.
 *
 * Answers to prefetched pulls (ps/prefetch.c) are point-to-point and wait
 * for nobody, so each rank gives them when its thread has no job: after a
 * push whose update they follow, they would otherwise share the link with
 * the AllReduce queued behind it, which the step waits for. They go in the
 * order the next step reads them, each before its variable's next push
 * (which changes the rows it reads).
 *
 * Progress: OpenMPI moves the bytes of a nonblocking transfer only inside
 * MPI calls. A prefetched pull's rows (ps/prefetch.c) are hundreds of
 * kilobytes that would otherwise wait for the next pull or step bracket,
 * i.e. stay on the step's critical path. When prefetching is on (there are
 * PS variables and no --no-overlap) and it has no job to run, the thread
 * calls into MPI every POLL_US microseconds (an MPI_Iprobe on a
 * communicator that carries no messages: it only drives the progress
 * engine). Pipeline sends (collectives/pp_group.c) are driven the same
 * way while any is pending, whatever the other settings: a send larger than
 * the eager limit moves only inside an MPI call of its sender (unless the
 * receiver can pull it alone), and the stage that posted it is computing
 * its next pass while the next stage waits for it. */
#include "sched.h"
#include "px_trace.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#define POLL_US 200

static MPI_Comm poll_comm = MPI_COMM_NULL;
static pthread_t thread;
static int thread_stop;
static comm_job *queue;
static int64_t q_cap, q_head, q_len;

static void deadline_in(struct timespec *ts, long us) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_nsec += us * 1000;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec += ts->tv_nsec / 1000000000L;
        ts->tv_nsec %= 1000000000L;
    }
}

static void drive_progress(void) {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, poll_comm, &flag, MPI_STATUS_IGNORE);
}

/* Whether the idle thread keeps MPI's transfers moving: prefetched rows,
 * or a pipeline send not known complete. */
static int polling_pulls(void) {
    return px_ps.opts.prefetch && px_ps.n_ps > 0;
}

static int polling(void) {
    return polling_pulls() || comm_pp_sends_pending();
}

static void *comm_thread_main(void *arg) {
    (void)arg;
    comm_set_self_slot(WATCH_COMM);
    px_trace_set_thread(1);
    comm_lock();
    for (;;) {
        while (q_len == 0 && !thread_stop) {
            if (comm_prefetch_serve_one_locked(NULL)) continue; /* idle: answer prefetches */
            if (polling()) {
                struct timespec ts;
                deadline_in(&ts, POLL_US);
                int rc = comm_cond_timedwait(&ts);
                if (rc == ETIMEDOUT && q_len == 0) {
                    comm_unlock();
                    if (polling_pulls()) {
                        drive_progress();
                        comm_prefetch_early_serve();
                    }
                    comm_pp_drive_sends();
                    comm_lock();
                }
            } else {
                comm_cond_wait();
            }
        }
        if (q_len == 0) { /* stopping, nothing left */
            while (comm_prefetch_serve_one_locked(NULL)) continue;
            break;
        }
        comm_job job = queue[q_head];
        /* A push changes the master rows its variable's answers read. */
        if (job.pushes && comm_prefetch_serve_one_locked(job.pushes)) continue;
        q_head = (q_head + 1) % q_cap;
        q_len--;
        comm_unlock();
        job.run(job.arg, WATCH_COMM);
        comm_lock();
        job.done(job.arg);
        comm_cond_broadcast();
    }
    comm_unlock();
    ps_rowset_scratch_free();
    return NULL;
}

void comm_thread_setup(void) {
    q_cap = comm_allreduce_n_buckets() + px_ps.n_ps + 1;
    q_head = q_len = 0;
    queue = calloc((size_t)q_cap, sizeof *queue);
    if (!queue) px_rt_fail("out of memory for the communication queue");
    if (!px_world.threaded || px_world.size <= 1) return;
    if (poll_comm == MPI_COMM_NULL) MPI_Comm_dup(MPI_COMM_WORLD, &poll_comm);
    thread_stop = 0;
    if (pthread_create(&thread, NULL, comm_thread_main, NULL) != 0)
        px_rt_fail("cannot start the communication thread");
    comm_thread_started(thread);
}

void comm_thread_teardown(void) {
    if (comm_thread_running()) {
        comm_lock();
        thread_stop = 1;
        comm_cond_broadcast();
        comm_unlock();
        pthread_join(thread, NULL);
        comm_thread_stopped();
    }
    if (poll_comm != MPI_COMM_NULL) MPI_Comm_free(&poll_comm);
    free(queue);
    queue = NULL;
    q_cap = q_head = q_len = 0;
}

void comm_job_enqueue_locked(comm_job job) {
    if (q_len == q_cap) px_rt_fail("internal error: the communication queue is full");
    queue[(q_head + q_len) % q_cap] = job;
    q_len++;
    comm_cond_broadcast();
}

int comm_job_run_front(void) {
    if (q_len == 0) return 0;
    comm_job job = queue[q_head];
    q_head = (q_head + 1) % q_cap;
    q_len--;
    job.run(job.arg, WATCH_MAIN);
    job.done(job.arg);
    return 1;
}
