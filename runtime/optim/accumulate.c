/* Gradient accumulation (--accumulate K; px_train.h).
 *
 * Every update of a micro-batch comes here first (px_optim_submit_*): the
 * replicas' updates with their gradient already averaged over the ranks,
 * the shards' with the rows they own, averaged over the ranks. Each update
 * target (the weight array w: a replica, or a shard's partition) gets one
 * accumulator that sums its gradients over the micro-batches:
 *   dense: a sum of n floats;
 *   rows: the rows touched so far (an open-addressing table from row to
 *         slot) and a sum of dim floats per row.
 * px_accum_finish submits sum / K (rows in ascending order) to the clip
 * queue or the optimizer, so the update is the one of a batch K times the
 * size, whose mean gradient is the mean of the micro-batches' means.
 *
 * Only the main thread submits while accumulating: the training main turns
 * the communication thread's pushes off (px_comm_opts.async_push). */
#include "optim_internal.h"
#include "px_kernel.h"

#include <stdlib.h>
#include <string.h>

typedef struct accum {
    float *w; /* the update target: the key */
    const px_optim_desc *o;
    int64_t t;
    float *slots[PX_OPTIM_MAX_SLOTS];
    int replicated, active;
    int64_t dim;     /* 0: dense, n floats in sum; else rows of dim floats */
    int64_t n;       /* dense: elements; rows: rows held */
    float *sum;      /* dense: n floats; rows: dim per row */
    int64_t sum_cap; /* floats allocated in sum */
    int64_t *row;    /* rows: the row of each slot */
    int64_t row_cap; /* entries allocated in row */
    int64_t *table;  /* rows: slot + 1 per hash bucket, 0: empty (table_cap buckets) */
    int64_t table_cap;
} accum;

static struct {
    accum *a;
    int n, cap;
} acc;

static void *grow_to(void *p, size_t bytes) {
    void *np = realloc(p, bytes ? bytes : 1);
    if (!np) px_rt_fail("--accumulate: out of memory for the summed gradients");
    return np;
}

/* The accumulator of w, started for this step when it was idle. The key is
 * only an address: a partition made by re-partitioning may reuse the
 * address of another variable's old one, so every use sizes the buffers
 * for itself. */
static accum *accum_of(const px_optim_desc *o, int64_t t, float *w,
                       float *const slots[PX_OPTIM_MAX_SLOTS], int64_t dim, int replicated) {
    accum *a = NULL;
    for (int i = 0; i < acc.n && !a; i++)
        if (acc.a[i].w == w) a = &acc.a[i];
    if (!a) {
        if (acc.n == acc.cap) {
            acc.cap = acc.cap ? 2 * acc.cap : 16;
            acc.a = grow_to(acc.a, sizeof *acc.a * (size_t)acc.cap);
        }
        a = &acc.a[acc.n++];
        memset(a, 0, sizeof *a);
        a->w = w;
    }
    if (!a->active) {
        a->active = 1;
        a->o = o;
        a->t = t;
        a->replicated = replicated;
        a->dim = dim;
        a->n = 0;
        int n_slots = px_optim_n_slots(o->kind);
        for (int s = 0; s < PX_OPTIM_MAX_SLOTS; s++) a->slots[s] = s < n_slots ? slots[s] : NULL;
        if (a->table) memset(a->table, 0, sizeof(int64_t) * (size_t)a->table_cap);
    } else if (a->dim != dim || a->t != t) {
        px_rt_fail("--accumulate: one variable updated as rows and densely, or across steps");
    }
    return a;
}

void px_optim_submit_dense(const px_optim_desc *o, int64_t t, float *w, const float *g,
                           float *const slots[PX_OPTIM_MAX_SLOTS], int64_t n, int replicated) {
    if (px_train.accum_k <= 1) {
        px_clip_submit_dense(o, t, w, g, slots, n, replicated);
        return;
    }
    accum *a = accum_of(o, t, w, slots, 0, replicated);
    if (a->n == 0) {
        if (n > a->sum_cap) {
            a->sum = grow_to(a->sum, sizeof(float) * (size_t)n);
            a->sum_cap = n;
        }
        memcpy(a->sum, g, sizeof(float) * (size_t)n);
        a->n = n;
        return;
    }
    if (a->n != n) px_rt_fail("--accumulate: a dense update changed its size");
    for (int64_t i = 0; i < n; i++) a->sum[i] += g[i];
}

static uint64_t hash_row(int64_t r) {
    uint64_t z = (uint64_t)r * 0x9e3779b97f4a7c15ull;
    return z ^ (z >> 29);
}

/* The table holds at most half as many rows as buckets. */
static void rehash(accum *a, int64_t want) {
    int64_t cap = 64;
    while (cap < 2 * want) cap *= 2;
    if (cap <= a->table_cap && a->table_cap >= 2 * want) return;
    a->table = grow_to(a->table, sizeof(int64_t) * (size_t)cap);
    memset(a->table, 0, sizeof(int64_t) * (size_t)cap);
    a->table_cap = cap;
    for (int64_t k = 0; k < a->n; k++) {
        uint64_t h = hash_row(a->row[k]) & (uint64_t)(cap - 1);
        while (a->table[h]) h = (h + 1) & (uint64_t)(cap - 1);
        a->table[h] = k + 1;
    }
}

/* The slot of row r, added (zeroed) when new. */
static int64_t slot_of(accum *a, int64_t r) {
    uint64_t mask = (uint64_t)(a->table_cap - 1), h = hash_row(r) & mask;
    for (; a->table[h]; h = (h + 1) & mask)
        if (a->row[a->table[h] - 1] == r) return a->table[h] - 1;
    int64_t k = a->n++;
    a->row[k] = r;
    memset(a->sum + k * a->dim, 0, sizeof(float) * (size_t)a->dim);
    a->table[h] = k + 1;
    return k;
}

void px_optim_submit_rows(const px_optim_desc *o, int64_t t, float *w,
                          float *const slots[PX_OPTIM_MAX_SLOTS], int64_t dim, const int64_t *rows,
                          const float *g, int64_t n_rows, int g_by_row, int replicated) {
    if (px_train.accum_k <= 1) {
        px_clip_submit_rows(o, t, w, slots, dim, rows, g, n_rows, g_by_row, replicated);
        return;
    }
    accum *a = accum_of(o, t, w, slots, dim, replicated);
    int64_t need = a->n + n_rows;
    if (need > a->row_cap || need * dim > a->sum_cap) {
        int64_t cap = a->row_cap > 64 ? a->row_cap : 64;
        while (cap < need) cap *= 2;
        a->sum = grow_to(a->sum, sizeof(float) * (size_t)(cap * dim));
        a->row = grow_to(a->row, sizeof(int64_t) * (size_t)cap);
        a->sum_cap = cap * dim;
        a->row_cap = cap;
    }
    rehash(a, a->n + n_rows);
    for (int64_t i = 0; i < n_rows; i++) {
        float *s = a->sum + slot_of(a, rows[i]) * dim;
        const float *x = g + (g_by_row ? rows[i] : i) * dim;
        for (int64_t j = 0; j < dim; j++) s[j] += x[j];
    }
}

/* order[] = the slots of a in ascending row order (a bottom-up merge sort;
 * the rows are distinct). */
static void sort_rows(const accum *a, int64_t *order) {
    const int64_t *rows = a->row, n = a->n;
    for (int64_t k = 0; k < n; k++) order[k] = k;
    int64_t *buf = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!buf) px_rt_fail("--accumulate: out of memory sorting rows");
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n;
            int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                buf[k++] = rows[order[i]] <= rows[order[j]] ? order[i++] : order[j++];
            while (i < mid) buf[k++] = order[i++];
            while (j < hi) buf[k++] = order[j++];
        }
        memcpy(order, buf, sizeof(int64_t) * (size_t)n);
    }
    free(buf);
}

void px_accum_finish(void) {
    float k = (float)px_train.accum_k;
    for (int i = 0; i < acc.n; i++) {
        accum *a = &acc.a[i];
        if (!a->active) continue;
        a->active = 0;
        if (a->dim == 0) {
            for (int64_t j = 0; j < a->n; j++) a->sum[j] /= k;
            px_clip_submit_dense(a->o, a->t, a->w, a->sum, a->slots, a->n, a->replicated);
            continue;
        }
        int64_t *order = malloc(sizeof(int64_t) * (size_t)(a->n + 1));
        int64_t *rows = malloc(sizeof(int64_t) * (size_t)(a->n + 1));
        float *g = malloc(sizeof(float) * (size_t)(a->n * a->dim + 1));
        if (!order || !rows || !g) px_rt_fail("--accumulate: out of memory for the row update");
        sort_rows(a, order);
        for (int64_t r = 0; r < a->n; r++) {
            rows[r] = a->row[order[r]];
            const float *s = a->sum + order[r] * a->dim;
            for (int64_t j = 0; j < a->dim; j++) g[r * a->dim + j] = s[j] / k;
        }
        px_clip_submit_rows(a->o, a->t, a->w, a->slots, a->dim, rows, g, a->n, 0, a->replicated);
        free(order);
        free(rows);
        free(g);
    }
}

/* The public entries are the shards' (and the tests'): their gradients are
 * each shard's own rows, summed over the ranks when clipping. */
void px_optim_dense(const px_optim_desc *o, int64_t t, float *w, const float *g,
                    float *const slots[PX_OPTIM_MAX_SLOTS], int64_t n) {
    px_optim_submit_dense(o, t, w, g, slots, n, 0);
}

void px_optim_rows(const px_optim_desc *o, int64_t t, float *w,
                   float *const slots[PX_OPTIM_MAX_SLOTS], int64_t dim, const int64_t *rows,
                   const float *g, int64_t n_rows) {
    px_optim_submit_rows(o, t, w, slots, dim, rows, g, n_rows, 0, 0);
}
