#include "px_trace.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

int px_trace_on;

/* Past this many events (~160 MB) spans are counted, not kept. */
#define MAX_EVENTS (4 << 20)

static struct {
    px_trace_event *ev;
    int64_t n, cap, dropped, step;
    double t0;
} tr;
static pthread_mutex_t tr_mu = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int32_t thread_track;

void px_trace_set_thread(int tid) {
    thread_track = tid;
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

void px_trace_start(void) {
    px_trace_on = 1;
    tr.t0 = now_us();
}

double px_trace_origin_us(void) {
    return tr.t0;
}

double px_trace_begin(void) {
    return px_trace_on ? now_us() - tr.t0 : 0;
}

void px_trace_set_step(int64_t step) {
    __atomic_store_n(&tr.step, step, __ATOMIC_RELAXED);
}

void px_trace_end(int kind, int32_t arg, double t0) {
    if (!px_trace_on) return;
    double t1 = now_us() - tr.t0;
    pthread_mutex_lock(&tr_mu);
    if (tr.n == tr.cap) {
        int64_t cap = tr.cap ? tr.cap * 2 : 4096;
        px_trace_event *grown =
            cap <= MAX_EVENTS ? realloc(tr.ev, sizeof *grown * (size_t)cap) : NULL;
        if (!grown) {
            tr.dropped++;
            pthread_mutex_unlock(&tr_mu);
            return;
        }
        tr.ev = grown;
        tr.cap = cap;
    }
    tr.ev[tr.n++] = (px_trace_event){
        kind, arg, thread_track, __atomic_load_n(&tr.step, __ATOMIC_RELAXED), t0, t1 - t0};
    pthread_mutex_unlock(&tr_mu);
}

const px_trace_event *px_trace_events(int64_t *n, int64_t *dropped) {
    *n = tr.n;
    *dropped = tr.dropped;
    return tr.ev;
}

const char *px_trace_span_name(int kind) {
    static const char *const names[PX_SPAN_KINDS] = {
        [PX_SPAN_DATA] = "data loading",
        [PX_SPAN_STEP] = "step (forward + backward)",
        [PX_SPAN_OPTIMIZER] = "optimizer",
        [PX_SPAN_PS_PULL] = "PS pull",
        [PX_SPAN_PS_PUSH] = "PS push",
        [PX_SPAN_ALLREDUCE_START] = "AllReduce start",
        [PX_SPAN_ALLREDUCE_WAIT] = "AllReduce wait",
        [PX_SPAN_CLIP] = "gradient clipping + updates",
        [PX_SPAN_EVAL] = "validation",
        [PX_SPAN_CHECKPOINT] = "checkpoint",
        [PX_SPAN_ALLREDUCE] = "AllReduce",
        [PX_SPAN_PUSH_QUEUED] = "PS push queued",
        [PX_SPAN_PUSH_WAIT] = "PS push wait",
        [PX_SPAN_PS_ANSWER] = "PS answer",
        [PX_SPAN_PS_FIXUP] = "PS fix-up",
        [PX_SPAN_STEP_END] = "step end",
        [PX_SPAN_LOSS_MEAN] = "loss mean over ranks",
        [PX_SPAN_PP_RECV] = "pipeline receive",
        [PX_SPAN_PP_BROADCAST] = "pipeline broadcast",
        [PX_SPAN_PP_SEND] = "pipeline send",
        [PX_SPAN_PP_SENT] = "pipeline send done",
    };
    return kind >= 0 && kind < PX_SPAN_KINDS ? names[kind] : "?";
}

void px_trace_reset(void) {
    free(tr.ev);
    tr.ev = NULL;
    tr.n = tr.cap = tr.dropped = 0;
    px_trace_on = 0;
}
