/* Bounded staleness (--staleness S, docs/relaxed_sync.md): the rows a rank
 * pulled, kept so that its pulls of the next S steps may read them again
 * instead of pulling them.
 *
 * A row pulled in step t' holds every update of the steps before t'; read
 * in step t <= t' + S it misses at most the updates of steps t'..t-1: S
 * pushes at most, never more (the stale-synchronous bound: a rank in step
 * t sees every update of the steps before t - S). Rows of the rank's own
 * shard are read from the shard, fresh. Which rows are read again depends
 * only on the data and S, so a run is as deterministic as an exact one;
 * pushes are untouched (every update is applied, in the same order).
 *
 * The store of a variable: its rows in a slab, a hash from row to slot, and
 * each slot's step. At the first use in a step the slots of rows pulled
 * before step - S are freed (the hash rebuilt from the live ones). A dense
 * parameter-server variable is pulled whole: its replica is read again for
 * S steps after a pull (ps_stale_full_due).
 *
 * ps_stale_forget (a checkpoint) empties every store, so a run resumed from
 * the checkpoint and the run that wrote it read the same rows afterwards. */
#include "ps.h"

#include <stdlib.h>
#include <string.h>

typedef struct ps_stale {
    int64_t dim;
    int64_t n, cap;      /* slots used (live or free), allocated */
    int64_t *row, *step; /* per slot; row -1: free */
    float *data;         /* cap * dim */
    int64_t *free_slots;
    int64_t n_free;
    int64_t *hash; /* slot + 1, 0: empty; hash_cap entries, a power of 2 */
    int64_t hash_cap;
    int64_t swept; /* the step of the last sweep */
    int64_t full;  /* dense: the step of the last whole pull (-1: none) */
} ps_stale;

static int64_t bound(void) {
    return px_ps.opts.staleness;
}

int ps_stale_on(void) {
    return bound() > 0 && !px_train.eval_pass;
}

static ps_stale *store_of(ps_var *pv) {
    if (pv->stale) return pv->stale;
    ps_stale *s = calloc(1, sizeof *s);
    if (!s) px_rt_fail("out of memory for the stale rows of '%s'", pv->name);
    s->dim = pv->dim;
    s->swept = -1;
    s->full = -1;
    pv->stale = s;
    return s;
}

static uint64_t mix(int64_t row) {
    uint64_t x = (uint64_t)row * 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29);
}

static void hash_put(ps_stale *s, int64_t slot) {
    uint64_t mask = (uint64_t)s->hash_cap - 1;
    for (uint64_t h = mix(s->row[slot]) & mask;; h = (h + 1) & mask)
        if (!s->hash[h]) {
            s->hash[h] = slot + 1;
            return;
        }
}

/* The hash over the live slots, at least twice as large as they need. */
static void rehash(ps_stale *s, int64_t live) {
    int64_t want = 16;
    while (want < 2 * (live + 1)) want *= 2;
    if (want != s->hash_cap) {
        free(s->hash);
        s->hash_cap = want;
        s->hash = malloc(sizeof *s->hash * (size_t)want);
        if (!s->hash) px_rt_fail("out of memory for the stale rows");
    }
    memset(s->hash, 0, sizeof *s->hash * (size_t)s->hash_cap);
    for (int64_t i = 0; i < s->n; i++)
        if (s->row[i] >= 0) hash_put(s, i);
}

/* Frees the slots too old for `step`, the current step: nothing reads
 * them any more (a prefetch asks about the next step, whose bound is
 * later). */
static void sweep(ps_stale *s, int64_t step) {
    if (s->swept == step) return;
    s->swept = step;
    int64_t live = 0;
    s->n_free = 0;
    for (int64_t i = 0; i < s->n; i++) {
        if (s->row[i] >= 0 && s->step[i] < step - bound()) s->row[i] = -1;
        if (s->row[i] >= 0)
            live++;
        else
            s->free_slots[s->n_free++] = i;
    }
    rehash(s, live);
}

static int64_t find(const ps_stale *s, int64_t row) {
    if (!s->hash_cap) return -1;
    uint64_t mask = (uint64_t)s->hash_cap - 1;
    for (uint64_t h = mix(row) & mask; s->hash[h]; h = (h + 1) & mask)
        if (s->row[s->hash[h] - 1] == row) return s->hash[h] - 1;
    return -1;
}

const float *ps_stale_row(ps_var *pv, int64_t row, int64_t step) {
    ps_stale *s = store_of(pv);
    sweep(s, comm_step()); /* step may be the next one (a prefetch's) */
    int64_t i = find(s, row);
    return i >= 0 && s->step[i] >= step - bound() ? s->data + i * s->dim : NULL;
}

static void grow(ps_stale *s, int64_t need) {
    if (need <= s->cap) return;
    int64_t cap = s->cap ? 2 * s->cap : 256;
    while (cap < need) cap *= 2;
    s->row = realloc(s->row, sizeof *s->row * (size_t)cap);
    s->step = realloc(s->step, sizeof *s->step * (size_t)cap);
    s->free_slots = realloc(s->free_slots, sizeof *s->free_slots * (size_t)cap);
    s->data = realloc(s->data, sizeof *s->data * (size_t)(cap * s->dim));
    if (!s->row || !s->step || !s->free_slots || !s->data)
        px_rt_fail("out of memory for the stale rows (%lld rows)", (long long)cap);
    s->cap = cap;
}

void ps_stale_keep(ps_var *pv, const int64_t *rows, const float *data, int64_t n, int64_t step) {
    ps_stale *s = store_of(pv);
    sweep(s, comm_step());
    for (int64_t k = 0; k < n; k++) {
        int64_t i = find(s, rows[k]);
        if (i < 0) {
            if (s->n_free > 0) {
                i = s->free_slots[--s->n_free];
            } else {
                grow(s, s->n + 1);
                i = s->n++;
            }
            s->row[i] = rows[k];
            if (2 * (s->n - s->n_free) > s->hash_cap)
                rehash(s, s->n - s->n_free);
            else
                hash_put(s, i);
        }
        s->step[i] = step;
        memcpy(s->data + i * s->dim, data + k * s->dim, sizeof(float) * (size_t)s->dim);
    }
}

int ps_stale_full_due(ps_var *pv, int64_t step) {
    ps_stale *s = store_of(pv);
    return s->full < 0 || step - s->full > bound();
}

void ps_stale_full_pulled(ps_var *pv, int64_t step) {
    store_of(pv)->full = step;
}

static void store_free(ps_stale *s) {
    free(s->row);
    free(s->step);
    free(s->data);
    free(s->free_slots);
    free(s->hash);
    free(s);
}

void ps_stale_forget(void) {
    for (int i = 0; i < px_ps.n_ps; i++) {
        ps_stale *s = px_ps.ps[i].stale;
        if (!s) continue;
        for (int64_t k = 0; k < s->n; k++) s->row[k] = -1;
        s->n = s->n_free = 0;
        s->full = -1;
        rehash(s, 0);
    }
}

int64_t ps_stale_bytes(void) {
    int64_t bytes = 0;
    for (int i = 0; i < px_ps.n_ps; i++) {
        const ps_stale *s = px_ps.ps[i].stale;
        if (s)
            bytes += s->cap * ((int64_t)sizeof(float) * s->dim + 3 * (int64_t)sizeof(int64_t)) +
                     s->hash_cap * (int64_t)sizeof(int64_t);
    }
    return bytes;
}

void ps_stale_teardown(void) {
    for (int i = 0; px_ps.ps && i < px_ps.n_ps; i++) {
        if (px_ps.ps[i].stale) store_free(px_ps.ps[i].stale);
        px_ps.ps[i].stale = NULL;
    }
}
