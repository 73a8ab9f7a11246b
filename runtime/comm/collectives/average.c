/* Model averaging, for local SGD (--sync-every K, docs/relaxed_sync.md).
 *
 * Between averages every rank updates its replicas of the AllReduce
 * variables with its own gradients; an average replaces each replica by
 * the mean over the ranks, so every rank holds the same bits again. The
 * weights travel as float32 whatever --wire says: they are the values, not
 * their changes, and 16 bits would throw away the master weights'
 * precision. They go through px_comm_mean_floats (the ring of the buckets
 * on the main thread's communicator, allreduce.c) in chunks of at most
 * CHUNK floats. */
#include "collectives.h"

#include <stdlib.h>
#include <string.h>

enum { CHUNK = 1 << 20 };

/* The arrays of the average, in order: the replicas (and their slots). */
typedef struct span_list {
    float **p;
    int64_t *n;
    int count, cap;
    int64_t total;
} span_list;

static void add_span(span_list *l, float *p, int64_t n) {
    if (!p || n <= 0) return;
    if (l->count == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->p = realloc(l->p, sizeof *l->p * (size_t)l->cap);
        l->n = realloc(l->n, sizeof *l->n * (size_t)l->cap);
        if (!l->p || !l->n) px_rt_fail("out of memory for the model average");
    }
    l->p[l->count] = p;
    l->n[l->count++] = n;
    l->total += n;
}

int64_t comm_average_replicas(const px_program_desc *p, float *const *slots, int n_slots) {
    span_list l = {0};
    for (int64_t v = 0; v < p->n_vars; v++) {
        const px_var_desc *d = &p->vars[v];
        if (d->sync != PX_SYNC_ALLREDUCE || !d->data) continue;
        add_span(&l, d->data, d->nbytes / 4);
        for (int s = 0; slots && s < n_slots; s++)
            add_span(&l, slots[v * PX_OPTIM_MAX_SLOTS + s], d->nbytes / 4);
    }
    int64_t total = l.total;
    if (px_world.size > 1 && total > 0) {
        int64_t cap = total < CHUNK ? total : CHUNK;
        float *buf = malloc(sizeof(float) * (size_t)cap);
        if (!buf) px_rt_fail("out of memory for the model average");
        /* Chunk by chunk: (span i, offset o) is where the next chunk starts;
         * it is gathered from the spans, averaged and put back. */
        int i = 0;
        int64_t o = 0;
        for (int64_t done = 0; done < total; done += cap) {
            int64_t len = total - done < cap ? total - done : cap;
            int gi = i;
            int64_t go = o;
            for (int64_t at = 0; at < len;) {
                int64_t k = l.n[i] - o < len - at ? l.n[i] - o : len - at;
                memcpy(buf + at, l.p[i] + o, sizeof(float) * (size_t)k);
                at += k;
                o += k;
                if (o == l.n[i]) i++, o = 0;
            }
            px_comm_mean_floats(buf, len, "the model average of --sync-every");
            for (int64_t at = 0; at < len;) {
                int64_t k = l.n[gi] - go < len - at ? l.n[gi] - go : len - at;
                memcpy(l.p[gi] + go, buf + at, sizeof(float) * (size_t)k);
                at += k;
                go += k;
                if (go == l.n[gi]) gi++, go = 0;
            }
        }
        free(buf);
    }
    free(l.p);
    free(l.n);
    return total;
}
