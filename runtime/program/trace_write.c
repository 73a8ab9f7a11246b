#include "trace_write.h"

#include "file_atomic.h"
#include "text_escape.h"
#include "px_kernel.h"
#include "px_trace.h"
#include "px_train.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct text {
    char *p;
    size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) px_rt_fail("--trace: formatting failed");
        if (t->p && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? t->cap * 2 : 1 << 16;
        while (cap < t->len + (size_t)n + 1) cap *= 2;
        char *grown = realloc(t->p, cap);
        if (!grown) px_rt_fail("--trace: out of memory");
        t->p = grown;
        t->cap = cap;
    }
}

/* A JSON string body (common/text_escape.h). */
static void put_json_string(text *t, const char *s) {
    char buf[16];
    size_t used;
    for (; *s; s += used) put(t, "%s", px_json_escape_next(s, &used, buf));
}

/* This rank's events, each a JSON object followed by ",\n". */
static void rank_events(text *t, const px_program_desc *p, int rank) {
    int64_t n, dropped;
    const px_trace_event *ev = px_trace_events(&n, &dropped);
    put(t,
        "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"rank "
        "%d\"}},\n",
        rank, rank);
    put(t,
        "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_sort_index\",\"args\":{\"sort_"
        "index\":%d}},\n",
        rank, rank);
    put(t,
        "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"thread_name\",\"args\":{\"name\":\"main\"}},"
        "\n",
        rank);
    /* where this rank's ts count from, on the host's monotonic clock */
    put(t,
        "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"clock_origin\",\"args\":{"
        "\"monotonic_us\":%.3f}},\n",
        rank, px_trace_origin_us());
    int comm_track = 0;
    for (int64_t i = 0; i < n; i++) comm_track |= ev[i].tid == 1;
    if (comm_track)
        put(t,
            "{\"ph\":\"M\",\"pid\":%d,\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":"
            "\"communication\"}},\n",
            rank);
    for (int64_t i = 0; i < n; i++) {
        const px_trace_event *e = &ev[i];
        put(t,
            "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":\"%s\",\"args\":"
            "{\"step\":%lld",
            rank, (int)e->tid, e->ts, e->dur, px_trace_span_name(e->kind), (long long)e->step);
        int var_span = e->kind == PX_SPAN_OPTIMIZER || e->kind == PX_SPAN_PS_PULL ||
                       e->kind == PX_SPAN_PS_PUSH || e->kind == PX_SPAN_PUSH_QUEUED ||
                       e->kind == PX_SPAN_PS_ANSWER || e->kind == PX_SPAN_PS_FIXUP;
        if (var_span && e->arg >= 0 && e->arg < p->n_vars) {
            put(t, ",\"variable\":\"");
            put_json_string(t, p->vars[e->arg].name);
            put(t, "\"");
        } else if (e->arg >= 0 && (e->kind == PX_SPAN_PP_RECV || e->kind == PX_SPAN_PP_BROADCAST)) {
            put(t, ",\"from_stage\":%d", e->arg);
        } else if (e->arg >= 0 && (e->kind == PX_SPAN_PP_SEND || e->kind == PX_SPAN_PP_SENT)) {
            put(t, ",\"to_stage\":%d", e->arg);
        } else if (e->arg >= 0) {
            put(t, ",\"bucket\":%d", e->arg);
        }
        put(t, "}},\n");
    }
    if (dropped)
        put(t,
            "{\"ph\":\"i\",\"s\":\"p\",\"pid\":%d,\"tid\":0,\"ts\":0,\"name\":\"%lld spans not "
            "recorded (memory)\"},\n",
            rank, (long long)dropped);
}

void px_trace_write(const char *path, const px_program_desc *p) {
    int rank = px_comm_rank(), ranks = px_comm_size();
    text t = {0};
    rank_events(&t, p, rank);
    char *all = NULL;
    int64_t *lens = calloc((size_t)ranks, sizeof(int64_t));
    if (!lens) px_rt_fail("--trace: out of memory");
    px_comm_gather_bytes(t.p, (int64_t)t.len, &all, lens);
    free(t.p);
    if (rank == 0) {
        int64_t total = 0;
        for (int r = 0; r < ranks; r++) total += lens[r];
        /* The last event's ",\n" becomes "\n" (JSON has no trailing commas). */
        while (total > 0 && (all[total - 1] == '\n' || all[total - 1] == ',')) total--;
        px_atomic_file a;
        char err[4400];
        if (px_atomic_open(&a, path, err, sizeof err)) px_rt_fail("--trace: %s", err);
        fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", a.f);
        fwrite(all, 1, (size_t)total, a.f);
        fputs("\n]}\n", a.f);
        if (px_atomic_commit(&a, err, sizeof err)) px_rt_fail("--trace: %s", err);
    }
    free(all);
    free(lens);
}
