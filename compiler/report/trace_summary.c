#include "trace_summary.h"
#include "json_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Grows *items (of size elem) to hold n + 1; 0 or -1. */
static int reserve(void **items, int n, size_t elem) {
    if (n & (n - 1)) return 0; /* capacity doubles at powers of two */
    void *p = realloc(*items, (size_t)(n ? 2 * n : 4) * elem);
    if (!p) return -1;
    *items = p;
    return 0;
}

static px_rank_timeline *rank_of(px_trace_summary *s, int pid) {
    for (int i = 0; i < s->n_ranks; i++)
        if (s->ranks[i].pid == pid) return &s->ranks[i];
    if (reserve((void **)&s->ranks, s->n_ranks, sizeof *s->ranks) != 0) return NULL;
    px_rank_timeline *r = &s->ranks[s->n_ranks++];
    memset(r, 0, sizeof *r);
    r->pid = pid;
    r->first_us = 1e300;
    r->last_us = -1e300;
    return r;
}

static px_thread_total *thread_of(px_rank_timeline *r, int tid) {
    for (int i = 0; i < r->n_threads; i++)
        if (r->threads[i].tid == tid) return &r->threads[i];
    if (reserve((void **)&r->threads, r->n_threads, sizeof *r->threads) != 0) return NULL;
    px_thread_total *t = &r->threads[r->n_threads++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    return t;
}

static px_span_total *span_of(px_thread_total *t, const char *name) {
    for (int i = t->n_spans - 1; i >= 0; i--)
        if (strcmp(t->spans[i].name, name) == 0) return &t->spans[i];
    if (reserve((void **)&t->spans, t->n_spans, sizeof *t->spans) != 0) return NULL;
    px_span_total *sp = &t->spans[t->n_spans];
    memset(sp, 0, sizeof *sp);
    if (!(sp->name = strdup(name))) return NULL;
    t->n_spans++;
    return sp;
}

/* One event into the summary: 0, or -1 with err set. Events of other
 * phases than X (complete) and M (metadata) are ignored. */
static int add_event(px_trace_summary *s, const px_json *e, long index, char *err, size_t err_cap) {
    const char *ph = px_json_string_or(e, "ph", "");
    const px_json *pid = px_json_get_kind(e, "pid", PX_JSON_NUMBER);
    const px_json *tid = px_json_get_kind(e, "tid", PX_JSON_NUMBER);
    const char *name = px_json_string_or(e, "name", NULL);
    if (strcmp(ph, "X") != 0 && strcmp(ph, "M") != 0) return 0;
    if (!pid || !tid || !name) {
        snprintf(err, err_cap, "event %ld (ph %s) lacks a numeric pid, tid or a name", index, ph);
        return -1;
    }
    if (!(pid->number >= 0 && pid->number <= 1e9 && tid->number >= 0 && tid->number <= 1e9)) {
        snprintf(err, err_cap, "event %ld ('%s') has a pid or tid outside 0..1e9", index, name);
        return -1;
    }
    px_rank_timeline *r = rank_of(s, (int)pid->number);
    px_thread_total *t = r ? thread_of(r, (int)tid->number) : NULL;
    if (!t) goto oom;
    if (strcmp(ph, "M") == 0) {
        const char *label = strcmp(name, "thread_name") == 0
                                ? px_json_string_or(px_json_get(e, "args"), "name", NULL)
                                : NULL;
        if (label) {
            free(t->name);
            if (!(t->name = strdup(label))) goto oom;
        }
        return 0;
    }
    const px_json *ts = px_json_get_kind(e, "ts", PX_JSON_NUMBER);
    if (!ts) {
        snprintf(err, err_cap, "event %ld ('%s') has no numeric ts", index, name);
        return -1;
    }
    double dur = px_json_number_or(e, "dur", 0);
    if (dur < 0) {
        snprintf(err, err_cap, "event %ld ('%s') has a negative dur", index, name);
        return -1;
    }
    px_span_total *sp = span_of(t, name);
    if (!sp) goto oom;
    sp->count++;
    sp->total_ms += dur / 1000.0;
    if (ts->number < r->first_us) r->first_us = ts->number;
    if (ts->number + dur > r->last_us) r->last_us = ts->number + dur;
    s->n_spans++;
    return 0;
oom:
    snprintf(err, err_cap, "out of memory");
    return -1;
}

static int by_pid(const void *a, const void *b) {
    int x = ((const px_rank_timeline *)a)->pid, y = ((const px_rank_timeline *)b)->pid;
    return (x > y) - (x < y);
}

static int by_tid(const void *a, const void *b) {
    int x = ((const px_thread_total *)a)->tid, y = ((const px_thread_total *)b)->tid;
    return (x > y) - (x < y);
}

/* Streams the events array the reader is at. */
static int read_events(px_json_reader *r, px_trace_summary *s, char *err, size_t err_cap) {
    if (px_json_enter(r, '[') != 0) goto syntax;
    for (long index = 0;; index++) {
        int more = px_json_next(r, ']', NULL);
        if (more < 0) goto syntax;
        if (!more) return 0;
        px_json *e = px_json_read(r);
        if (!e) goto syntax;
        int rc = add_event(s, e, index, err, err_cap);
        px_json_free(e);
        if (rc != 0) return -1;
    }
syntax:
    snprintf(err, err_cap, "%s", r->err);
    return -1;
}

int px_trace_summarize(const char *text, size_t len, px_trace_summary *out, char *err,
                       size_t err_cap) {
    memset(out, 0, sizeof *out);
    px_json_reader r;
    px_json_reader_init(&r, text, len);
    int found = 0;
    if (px_json_peek(&r) == '[') {
        if (read_events(&r, out, err, err_cap) != 0) goto bad;
        found = 1;
    } else {
        if (px_json_enter(&r, '{') != 0) goto syntax;
        for (;;) {
            char *key = NULL;
            int more = px_json_next(&r, '}', &key);
            if (more < 0) goto syntax;
            if (!more) break;
            int events = strcmp(key, "traceEvents") == 0;
            free(key);
            if (events) {
                if (read_events(&r, out, err, err_cap) != 0) goto bad;
                found = 1;
            } else if (px_json_skip(&r) != 0) {
                goto syntax;
            }
        }
    }
    if (px_json_peek(&r) != 0) {
        snprintf(err, err_cap, "unexpected text after the trace");
        goto bad;
    }
    if (!found) {
        snprintf(err, err_cap, "no \"traceEvents\" array");
        goto bad;
    }
    if (out->n_ranks > 1) qsort(out->ranks, (size_t)out->n_ranks, sizeof *out->ranks, by_pid);
    for (int i = 0; i < out->n_ranks; i++) {
        px_rank_timeline *rk = &out->ranks[i];
        if (rk->n_threads > 1)
            qsort(rk->threads, (size_t)rk->n_threads, sizeof *rk->threads, by_tid);
        for (int j = 0; j < rk->n_threads; j++) {
            px_thread_total *t = &rk->threads[j];
            if (!t->name) {
                char buf[32];
                snprintf(buf, sizeof buf, "thread %d", t->tid);
                if (!(t->name = strdup(buf))) {
                    snprintf(err, err_cap, "out of memory");
                    goto bad;
                }
            }
        }
        if (rk->last_us < rk->first_us) rk->first_us = rk->last_us = 0; /* no spans */
    }
    return 0;
syntax:
    snprintf(err, err_cap, "%s", r.err);
bad:
    px_trace_summary_free(out);
    return -1;
}

void px_trace_summary_free(px_trace_summary *s) {
    for (int i = 0; i < s->n_ranks; i++) {
        px_rank_timeline *r = &s->ranks[i];
        for (int j = 0; j < r->n_threads; j++) {
            for (int k = 0; k < r->threads[j].n_spans; k++) free(r->threads[j].spans[k].name);
            free(r->threads[j].spans);
            free(r->threads[j].name);
        }
        free(r->threads);
    }
    free(s->ranks);
    memset(s, 0, sizeof *s);
}
