/* The per-rank summary of a --trace timeline (Chrome trace events: one
 * process per rank, one thread per track). For each rank: the wall time
 * its events cover and, for each thread and span name, how many spans
 * there were and their total time. */
#ifndef PX_REPORT_TRACE_SUMMARY_H
#define PX_REPORT_TRACE_SUMMARY_H

#include <stddef.h>

typedef struct px_span_total {
    char *name;
    long count;
    double total_ms;
} px_span_total;

typedef struct px_thread_total {
    int tid;
    char *name; /* the thread_name metadata, or "thread N" */
    int n_spans;
    px_span_total *spans; /* in order of first appearance */
} px_thread_total;

typedef struct px_rank_timeline {
    int pid;
    double first_us, last_us; /* the earliest start and latest end of its spans */
    int n_threads;
    px_thread_total *threads; /* sorted by tid */
} px_rank_timeline;

typedef struct px_trace_summary {
    int n_ranks;
    px_rank_timeline *ranks; /* sorted by pid */
    long n_spans;            /* complete ("X") events */
} px_trace_summary;

/* Summarizes the trace in text (len bytes): an object with "traceEvents"
 * or a bare array of events, streamed one event at a time. 0, or -1 with
 * a message naming the place in err. */
int px_trace_summarize(const char *text, size_t len, px_trace_summary *out, char *err,
                       size_t err_cap);
void px_trace_summary_free(px_trace_summary *s);

#endif
