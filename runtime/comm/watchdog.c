/* The stall watchdog: a thread that ends the job when a step makes no
 * progress for stall_timeout_s seconds, saying what this rank waits for.
 *
 * Progress is any completed message, ring step or step bracket. The
 * activity strings say what each thread (main: pulls, pushes, bucket waits;
 * comm: the ring) is blocked on right now, so the message names the
 * operation and the peer rank. A rank that stalls outside communication (a
 * hung computation, a debugger) reports itself: "not waiting for
 * communication". */
#include "comm_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t act_mu = PTHREAD_MUTEX_INITIALIZER;
static char activity[2][256];
static double last_progress;

static pthread_t thread;
static int running, stop;
static double timeout;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

void comm_progress(void) {
    double now = comm_now();
    __atomic_store(&last_progress, &now, __ATOMIC_RELAXED);
}

void comm_activity(int slot, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&act_mu);
    vsnprintf(activity[slot], sizeof activity[slot], fmt, ap);
    pthread_mutex_unlock(&act_mu);
    va_end(ap);
}

void comm_activity_clear(int slot) {
    pthread_mutex_lock(&act_mu);
    activity[slot][0] = 0;
    pthread_mutex_unlock(&act_mu);
}

static void fire(double idle) {
    char what[600];
    pthread_mutex_lock(&act_mu);
    if (activity[WATCH_MAIN][0] && activity[WATCH_COMM][0])
        snprintf(what, sizeof what, "waiting for %s; communication thread: %s",
                 activity[WATCH_MAIN], activity[WATCH_COMM]);
    else if (activity[WATCH_MAIN][0])
        snprintf(what, sizeof what, "waiting for %s", activity[WATCH_MAIN]);
    else if (activity[WATCH_COMM][0])
        snprintf(what, sizeof what, "not waiting for communication; communication thread: %s",
                 activity[WATCH_COMM]);
    else
        snprintf(what, sizeof what, "not waiting for communication: computing");
    pthread_mutex_unlock(&act_mu);
    fprintf(stderr, "error (rank %d): no progress for %.0f s in step %lld (%s)\n", px_comm.rank,
            idle, (long long)__atomic_load_n(&px_comm.step, __ATOMIC_RELAXED), what);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *watch(void *arg) {
    (void)arg;
    double period = timeout / 4 < 1.0 ? timeout / 4 : 1.0;
    pthread_mutex_lock(&mu);
    while (!stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        double t = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec + period;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        int rc = pthread_cond_timedwait(&cv, &mu, &ts);
        if (stop) break;
        if (rc != ETIMEDOUT && rc != 0) continue;
        if (!__atomic_load_n(&px_comm.in_step, __ATOMIC_ACQUIRE)) continue;
        double last;
        __atomic_load(&last_progress, &last, __ATOMIC_RELAXED);
        double idle = comm_now() - last;
        if (idle >= timeout) fire(idle);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

void comm_watchdog_start(double timeout_s) {
    if (running) return;
    timeout = timeout_s;
    stop = 0;
    comm_progress();
    if (pthread_create(&thread, NULL, watch, NULL) != 0)
        px_rt_fail("cannot start the watchdog thread");
    running = 1;
}

void comm_watchdog_stop(void) {
    if (!running) return;
    pthread_mutex_lock(&mu);
    stop = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(thread, NULL);
    running = 0;
}
