/* The main thread and the communication thread: the lock and condition
 * that hand work between them, whether the comm thread runs (and which
 * thread it is, for its CPU time), and whether the main thread is blocked
 * on it. The comm thread itself, its queue and its jobs: sched/. */
#include "transport.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_t comm_thread;
static int running;
static int main_waiting; /* comm_main_waits nesting, atomic */

void comm_lock(void) {
    pthread_mutex_lock(&mu);
}

void comm_unlock(void) {
    pthread_mutex_unlock(&mu);
}

void comm_cond_wait(void) {
    pthread_cond_wait(&cv, &mu);
}

void comm_cond_broadcast(void) {
    pthread_cond_broadcast(&cv);
}

int comm_thread_running(void) {
    return running;
}

void comm_thread_started(pthread_t t) {
    comm_thread = t;
    running = 1;
}

void comm_thread_stopped(void) {
    running = 0;
}

int comm_thread_cpu_clock(clockid_t *c) {
    return running && pthread_getcpuclockid(comm_thread, c) == 0;
}

void comm_main_waits(int delta) {
    __atomic_fetch_add(&main_waiting, delta, __ATOMIC_RELAXED);
}

int comm_main_is_waiting(void) {
    return __atomic_load_n(&main_waiting, __ATOMIC_RELAXED) > 0;
}

int comm_cond_timedwait(const struct timespec *deadline) {
    return pthread_cond_timedwait(&cv, &mu, deadline);
}
