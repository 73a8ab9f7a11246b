/* The record of progress the watchdog reads: the step this rank is in,
 * when something last completed, and what each thread (main: pulls,
 * pushes, bucket waits; comm: the ring) is blocked on right now, so that a
 * stall names the operation and the peer rank. Written by every layer
 * through these functions; read by the watchdog (watchdog/) through
 * comm_activity_snapshot, comm_last_progress, comm_step and comm_in_step. */
#include "transport.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t act_mu = PTHREAD_MUTEX_INITIALIZER;
static char activity[2][COMM_ACTIVITY_CAP];
static double last_progress;
static int64_t step; /* -1 from px_comm_setup until the first step */
static int in_step;

static _Thread_local int self_slot = WATCH_MAIN;

int comm_self_slot(void) {
    return self_slot;
}

void comm_set_self_slot(int slot) {
    self_slot = slot;
}

void comm_progress(void) {
    double now = comm_now();
    __atomic_store(&last_progress, &now, __ATOMIC_RELAXED);
}

double comm_last_progress(void) {
    double last;
    __atomic_load(&last_progress, &last, __ATOMIC_RELAXED);
    return last;
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

void comm_activity_snapshot(char out[2][COMM_ACTIVITY_CAP]) {
    pthread_mutex_lock(&act_mu);
    memcpy(out, activity, sizeof activity);
    pthread_mutex_unlock(&act_mu);
}

void comm_step_set(int64_t s) {
    __atomic_store_n(&step, s, __ATOMIC_RELAXED);
}

void comm_step_set_inside(int inside) {
    __atomic_store_n(&in_step, inside, __ATOMIC_RELEASE);
}

int64_t comm_step(void) {
    return __atomic_load_n(&step, __ATOMIC_RELAXED);
}

int comm_in_step(void) {
    return __atomic_load_n(&in_step, __ATOMIC_ACQUIRE);
}
