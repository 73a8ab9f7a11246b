/* --trace: a timeline of spans per rank, recorded in memory as the run goes
 * and written once at the end (program/trace_write.c) as Chrome trace-event
 * JSON. Recording costs two clock reads and a lock per span and nothing
 * when off. Each span is on the track of the thread that recorded it: the
 * main thread (0) or the communication thread (1, px_trace_set_thread). */
#ifndef PX_TRACE_H
#define PX_TRACE_H

#include <stdint.h>

enum px_span {
    PX_SPAN_DATA = 0, /* copying a batch into the inputs */
    PX_SPAN_STEP,     /* the compiled step: forward, backward, comm, updates */
    PX_SPAN_OPTIMIZER,
    PX_SPAN_PS_PULL,
    PX_SPAN_PS_PUSH,
    PX_SPAN_ALLREDUCE_START,
    PX_SPAN_ALLREDUCE_WAIT,
    PX_SPAN_CLIP, /* the global norm and the queued updates */
    PX_SPAN_EVAL, /* a whole validation */
    PX_SPAN_CHECKPOINT,
    PX_SPAN_ALLREDUCE,    /* a bucket's AllReduce, on the thread that ran it */
    PX_SPAN_PUSH_QUEUED,  /* the main thread hands a push to the comm thread */
    PX_SPAN_PUSH_WAIT,    /* the main thread waits for queued pushes */
    PX_SPAN_PS_ANSWER,    /* a shard answers a rank's prefetched pull */
    PX_SPAN_PS_FIXUP,     /* ... and sends the rows its update changed since */
    PX_SPAN_STEP_END,     /* the step's end: queued pushes, answers, statistics */
    PX_SPAN_LOSS_MEAN,    /* the mean of the loss (and metrics) over the ranks */
    PX_SPAN_PP_RECV,      /* --pp: waiting for a micro-batch's values from another stage */
    PX_SPAN_PP_BROADCAST, /* --pp: the loss (and metrics) from the last stage */
    PX_SPAN_PP_SEND,      /* --pp: copying a micro-batch's values and posting their send */
    PX_SPAN_PP_SENT,      /* --pp: (no length) a send seen complete, by the thread that saw it */
    PX_SPAN_KINDS
};

typedef struct px_trace_event {
    int32_t kind;   /* enum px_span */
    int32_t arg;    /* variable or bucket index (-1: none) */
    int32_t tid;    /* 0: main thread, 1: communication thread */
    int64_t step;   /* 1-based training step (0: before the first) */
    double ts, dur; /* microseconds since px_trace_start */
} px_trace_event;

extern int px_trace_on;

/* Starts recording; times count from now. */
void px_trace_start(void);
/* The CLOCK_MONOTONIC time, in microseconds, that this rank's span times
 * count from: ranks of one host share that clock, so a tool can lay their
 * timelines on one axis exactly. */
double px_trace_origin_us(void);
/* A span's start time (0 when tracing is off). */
double px_trace_begin(void);
/* Records the span [t0, now) of kind with arg (when tracing is on). */
void px_trace_end(int kind, int32_t arg, double t0);
/* The track of the calling thread's spans (0 main, 1 communication). */
void px_trace_set_thread(int tid);
/* The step the following spans belong to. */
void px_trace_set_step(int64_t step);
/* The recorded events (valid until px_trace_reset) and how many were
 * dropped for lack of memory. */
const px_trace_event *px_trace_events(int64_t *n, int64_t *dropped);
const char *px_trace_span_name(int kind);
void px_trace_reset(void);

#endif
