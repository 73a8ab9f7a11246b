/* The mean over the ranks of a loss's kept weight (passes/loss_denominator.c:
 * LossDenominatorStart / LossDenominatorWait) as a job of the comm thread.
 * Its inputs are the labels only, so the start runs as the step begins: it
 * sums this rank's kept weight and queues the mean, which the comm thread
 * runs while the forward pass computes; the wait, just before the loss
 * divides by it, finds it done or waits for it. Without the comm thread the
 * queued jobs run, FIFO, inside the wait (as a bucket's do).
 *
 * The job is px_comm_mean's MPI_Allreduce on the jobs' communicator: the
 * same sum, so the same bits, and the same 8 bytes each way counted. A pass
 * that does not average (--sync-every's local steps, --accumulate) hands
 * the wait the rank's own weight. Like the other small collectives it is
 * not counted in --stats' communication time (its spans are in --trace). A start and its wait share
 * a slot (one per loss, fewer than PX_MAX_LOSS_DENOMINATORS).
 *
 *   px_k_loss_denominator_start  buf {labels, weights|NULL, kept}
 *                                p {px_k_loss_denominator's, slot}
 *   px_k_loss_denominator_wait   buf {kept, denominator}  p {slot} */
#include "kernels/loss_denominator.h"
#include "px_trace.h"
#include "sched.h"

enum { MEAN_IDLE = 0, MEAN_LOCAL, MEAN_QUEUED, MEAN_DONE };

/* guarded by comm_lock; value: the kept weight, then its mean */
static struct {
    int state;
    double value;
} means[PX_MAX_LOSS_DENOMINATORS];

static int64_t slot_of(int64_t slot) {
    if (slot < 0 || slot >= PX_MAX_LOSS_DENOMINATORS)
        px_rt_fail("internal error: loss denominator slot %lld", (long long)slot);
    return slot;
}

static void mean_run(int64_t i, int watch) {
    double t0 = px_trace_begin();
    means[i].value = comm_mean_job(means[i].value, watch);
    px_trace_end(PX_SPAN_LOSS_DENOMINATOR, (int32_t)i, t0);
}

static void mean_done(int64_t i) { /* comm_lock held */
    means[i].state = MEAN_DONE;
}

void px_k_loss_denominator_start(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    double kept;
    int average = px_loss_kept_weight(buf, &c, &kept) && px_world.size > 1;
    *(double *)buf[2] = kept;
    int64_t i = slot_of(px_kp_i64(&c));
    comm_lock();
    if (means[i].state != MEAN_IDLE)
        px_rt_fail("internal error: loss denominator %lld started again before its wait",
                   (long long)i);
    means[i].value = kept;
    means[i].state = average ? MEAN_QUEUED : MEAN_LOCAL;
    if (average) comm_job_enqueue_locked((comm_job){mean_run, mean_done, i, NULL});
    comm_unlock();
}

void px_k_loss_denominator_wait(void *const *buf, const int64_t *p) {
    int64_t i = slot_of(p[0]);
    comm_lock();
    int s = means[i].state;
    comm_unlock();
    if (s == MEAN_IDLE)
        px_rt_fail("internal error: loss denominator %lld waited for, not started", (long long)i);
    if (s == MEAN_LOCAL) {
        *(double *)buf[1] = *(const double *)buf[0];
    } else {
        double t0 = px_trace_begin();
        if (comm_thread_running()) {
            comm_activity(WATCH_MAIN, "the mean of a loss's kept weight over all ranks");
            comm_main_waits(1);
            comm_lock();
            while (means[i].state != MEAN_DONE) comm_cond_wait();
            comm_unlock();
            comm_main_waits(-1);
            comm_activity_clear(WATCH_MAIN);
        } else {
            while (means[i].state != MEAN_DONE)
                if (!comm_job_run_front())
                    px_rt_fail("internal error: loss denominator %lld is queued but not in the "
                               "queue",
                               (long long)i);
        }
        px_trace_end(PX_SPAN_LOSS_DENOMINATOR_WAIT, (int32_t)i, t0);
        *(double *)buf[1] = means[i].value;
    }
    comm_lock();
    means[i].state = MEAN_IDLE;
    comm_unlock();
}
