/* Row partitions of parameter-server variables: P contiguous, balanced row
 * ranges (the first rows % P partitions get one row more). Placement
 * balances bytes over the shards, over all PS variables together (see
 * ps_place). Re-partitioning (automatic partitions) moves master rows and
 * optimizer state between shards bit for bit. */
#include "comm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t ps_part_row0(int64_t rows, int64_t parts, int64_t p) {
    int64_t q = rows / parts, m = rows % parts;
    return p * q + (p < m ? p : m);
}

int64_t ps_part_of_row(int64_t rows, int64_t parts, int64_t row) {
    int64_t q = rows / parts, m = rows % parts;
    if (row < m * (q + 1)) return row / (q + 1);
    return m + (row - m * (q + 1)) / q;
}

int ps_owner_of_row(const ps_var *pv, int64_t row) {
    return pv->parts[ps_part_of_row(pv->rows, pv->n_parts, row)].owner;
}

static void *alloc_floats(int64_t n, int zero, const char *name) {
    size_t bytes = sizeof(float) * (size_t)(n > 0 ? n : 1);
    void *p = zero ? calloc(1, bytes) : malloc(bytes);
    if (!p) px_rt_fail("out of memory for the shard of variable '%s'", name);
    return p;
}

typedef struct piece {
    int64_t bytes;
    int var, part; /* index into px_comm.ps, partition */
} piece;

static int by_bytes_desc(const void *a, const void *b) {
    const piece *x = a, *y = b;
    if (x->bytes != y->bytes) return (x->bytes < y->bytes) - (x->bytes > y->bytes);
    if (x->var != y->var) return (x->var > y->var) - (x->var < y->var);
    return (x->part > y->part) - (x->part < y->part);
}

int **ps_place(const int64_t *parts) {
    int n_ps = px_comm.n_ps, n_sh = px_comm.n_shards;
    int64_t total = 0;
    for (int i = 0; i < n_ps; i++) total += parts[i];
    piece *pc = malloc(sizeof *pc * (size_t)(total > 0 ? total : 1));
    int **owners = calloc((size_t)(n_ps > 0 ? n_ps : 1), sizeof *owners);
    int64_t *load = calloc((size_t)n_sh, sizeof *load);
    int *same = calloc((size_t)n_sh * (size_t)(n_ps > 0 ? n_ps : 1), sizeof *same);
    if (!pc || !owners || !load || !same) px_rt_fail("out of memory placing the partitions");
    int64_t k = 0;
    for (int i = 0; i < n_ps; i++) {
        const ps_var *pv = &px_comm.ps[i];
        owners[i] = malloc(sizeof(int) * (size_t)(parts[i] > 0 ? parts[i] : 1));
        if (!owners[i]) px_rt_fail("out of memory placing the partitions of '%s'", pv->name);
        for (int64_t p = 0; p < parts[i]; p++) {
            int64_t rows =
                ps_part_row0(pv->rows, parts[i], p + 1) - ps_part_row0(pv->rows, parts[i], p);
            pc[k++] = (piece){rows * pv->dim * (int64_t)sizeof(float), i, (int)p};
        }
    }
    /* Largest piece first onto the shard holding the fewest bytes so far
     * (ties: the one with fewer pieces of this variable, then the lowest):
     * every rank computes the same placement from the same counts. */
    qsort(pc, (size_t)total, sizeof *pc, by_bytes_desc);
    for (int64_t j = 0; j < total; j++) {
        int best = 0;
        for (int sh = 1; sh < n_sh; sh++) {
            int64_t lb = load[best], ls = load[sh];
            int cb = same[pc[j].var * n_sh + best], cs = same[pc[j].var * n_sh + sh];
            if (ls < lb || (ls == lb && cs < cb)) best = sh;
        }
        load[best] += pc[j].bytes;
        same[pc[j].var * n_sh + best]++;
        owners[pc[j].var][pc[j].part] = px_comm.shard_ranks[best];
    }
    free(pc);
    free(load);
    free(same);
    return owners;
}

void ps_place_free(int **owners) {
    if (!owners) return;
    for (int i = 0; i < px_comm.n_ps; i++) free(owners[i]);
    free(owners);
}

/* The partition table of pv at `parts` partitions placed on `owners`;
 * owned ones allocated (state zero, rows uninitialised). */
static ps_part *make_parts(const ps_var *pv, int64_t parts, const int *owners) {
    ps_part *t = calloc((size_t)parts, sizeof *t);
    if (!t) px_rt_fail("out of memory for the partitions of '%s'", pv->name);
    for (int64_t p = 0; p < parts; p++) {
        t[p].row0 = ps_part_row0(pv->rows, parts, p);
        t[p].rows = ps_part_row0(pv->rows, parts, p + 1) - t[p].row0;
        t[p].owner = owners[p];
        if (t[p].owner != px_comm.rank) continue;
        t[p].w = alloc_floats(t[p].rows * pv->dim, 0, pv->name);
        for (int s = 0; s < px_comm.n_slots; s++)
            t[p].slots[s] = alloc_floats(t[p].rows * pv->dim, 1, pv->name);
    }
    return t;
}

static void free_parts(ps_part *t, int64_t parts) {
    if (!t) return;
    for (int64_t p = 0; p < parts; p++) {
        free(t[p].w);
        for (int s = 0; s < PX_OPTIM_MAX_SLOTS; s++) free(t[p].slots[s]);
    }
    free(t);
}

void ps_layout_init(ps_var *pv, int64_t parts, const int *owners, const float *init) {
    pv->n_parts = parts;
    pv->parts = make_parts(pv, parts, owners);
    for (int64_t p = 0; p < parts; p++)
        if (pv->parts[p].w)
            memcpy(pv->parts[p].w, init + pv->parts[p].row0 * pv->dim,
                   sizeof(float) * (size_t)(pv->parts[p].rows * pv->dim));
}

void ps_layout_free(ps_var *pv) {
    free_parts(pv->parts, pv->n_parts);
    pv->parts = NULL;
    pv->n_parts = 0;
}

void ps_repartition(ps_var *pv, int64_t parts, const int *owners) {
    int same = parts == pv->n_parts;
    for (int64_t p = 0; same && p < parts; p++) same = pv->parts[p].owner == owners[p];
    if (same) return;
    ps_part *old = pv->parts, *neu = make_parts(pv, parts, owners);
    int64_t n_old = pv->n_parts, d = pv->dim;
    int me = px_comm.rank, arrays = 1 + px_comm.n_slots;
    int tag = comm_tag(pv->var, TAG_REPART);
    comm_reqs q = {0};
    /* Both sides walk the (old, new) overlaps in the same order, so the
     * messages of each pair of ranks match in order. */
    for (int64_t po = 0; po < n_old; po++) {
        for (int64_t pn = 0; pn < parts; pn++) {
            int64_t lo = old[po].row0 > neu[pn].row0 ? old[po].row0 : neu[pn].row0;
            int64_t hi_o = old[po].row0 + old[po].rows, hi_n = neu[pn].row0 + neu[pn].rows;
            int64_t hi = hi_o < hi_n ? hi_o : hi_n;
            int src = old[po].owner, dst = neu[pn].owner;
            if (lo >= hi || (src != me && dst != me)) continue;
            int64_t n = (hi - lo) * d, so = (lo - old[po].row0) * d, dn = (lo - neu[pn].row0) * d;
            for (int a = 0; a < arrays; a++) {
                float *from = src == me ? (a == 0 ? old[po].w : old[po].slots[a - 1]) + so : NULL;
                float *to = dst == me ? (a == 0 ? neu[pn].w : neu[pn].slots[a - 1]) + dn : NULL;
                if (src == me && dst == me)
                    memcpy(to, from, sizeof(float) * (size_t)n);
                else if (src == me)
                    comm_isend(from, n, MPI_FLOAT, 4, dst, tag, px_comm.ps_comm, PX_TRAFFIC_OTHER,
                               comm_reqs_add(&q, dst));
                else
                    comm_irecv(to, n, MPI_FLOAT, 4, src, tag, px_comm.ps_comm, PX_TRAFFIC_OTHER,
                               comm_reqs_add(&q, src));
            }
        }
    }
    char what[160];
    snprintf(what, sizeof what, "the re-partitioning of '%s'", pv->name);
    comm_reqs_wait(&q, WATCH_MAIN, what);
    comm_reqs_free(&q);
    free_parts(old, n_old);
    pv->parts = neu;
    pv->n_parts = parts;
}
