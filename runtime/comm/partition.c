/* Row partitions of parameter-server variables: P contiguous, balanced row
 * ranges (the first rows % P partitions get one row more). Placement
 * balances bytes over the shards, over all PS variables together (see
 * ps_place). Re-partitioning (automatic partitions) moves master rows and
 * optimizer state between shards bit for bit. */
#include "comm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

/* Shard rows and optimizer state are mapped, not taken from the heap: a
 * freed partition goes back to the system at once, so moving partitions
 * (automatic partitions) does not leave a shard holding old and new rows.
 * Fresh anonymous pages read as zero. */
static size_t floats_bytes(int64_t n) {
    return sizeof(float) * (size_t)(n > 0 ? n : 1);
}

static float *alloc_floats(int64_t n, const char *name) {
    void *p =
        mmap(NULL, floats_bytes(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) px_rt_fail("out of memory for the shard of variable '%s'", name);
    return p;
}

static void free_floats(float *p, int64_t n) {
    if (p) munmap(p, floats_bytes(n));
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

/* The partition table of pv at `parts` partitions placed on `owners`, no
 * storage yet. */
static ps_part *part_table(const ps_var *pv, int64_t parts, const int *owners) {
    ps_part *t = calloc((size_t)parts, sizeof *t);
    if (!t) px_rt_fail("out of memory for the partitions of '%s'", pv->name);
    for (int64_t p = 0; p < parts; p++) {
        t[p].row0 = ps_part_row0(pv->rows, parts, p);
        t[p].rows = ps_part_row0(pv->rows, parts, p + 1) - t[p].row0;
        t[p].owner = owners[p];
    }
    return t;
}

/* Storage of a partition this rank owns: rows uninitialised, state zero. */
static void alloc_part(const ps_var *pv, ps_part *part) {
    if (part->owner != px_comm.rank) return;
    part->w = alloc_floats(part->rows * pv->dim, pv->name);
    for (int s = 0; s < px_comm.n_slots; s++)
        part->slots[s] = alloc_floats(part->rows * pv->dim, pv->name);
}

static void free_part(const ps_var *pv, ps_part *part) {
    free_floats(part->w, part->rows * pv->dim);
    part->w = NULL;
    for (int s = 0; s < PX_OPTIM_MAX_SLOTS; s++) {
        free_floats(part->slots[s], part->rows * pv->dim);
        part->slots[s] = NULL;
    }
}

static void free_parts(const ps_var *pv, ps_part *t, int64_t parts) {
    if (!t) return;
    for (int64_t p = 0; p < parts; p++) free_part(pv, &t[p]);
    free(t);
}

void ps_layout_init(ps_var *pv, int64_t parts, const int *owners) {
    const px_var_desc *d = &px_comm.prog->vars[pv->var];
    pv->n_parts = parts;
    pv->parts = part_table(pv, parts, owners);
    for (int64_t p = 0; p < parts; p++) alloc_part(pv, &pv->parts[p]);
    for (int64_t p = 0; p < parts; p++) {
        ps_part *part = &pv->parts[p];
        if (!part->w) continue;
        if (px_comm.opts.read_rows) {
            px_comm.opts.read_rows(pv->var, part->row0, part->rows, part->w);
        } else {
            if (!d->data)
                px_rt_fail("PS variable '%s' has no initial value to take its rows from",
                           pv->name);
            memcpy(part->w, (const float *)d->data + part->row0 * pv->dim,
                   sizeof(float) * (size_t)(part->rows * pv->dim));
        }
    }
}

void ps_layout_free(ps_var *pv) {
    free_parts(pv, pv->parts, pv->n_parts);
    pv->parts = NULL;
    pv->n_parts = 0;
}

/* One new partition at a time, in row order: its rows arrive from the old
 * partitions that overlap it, and an old partition is freed as soon as
 * every row of it has moved. A shard then holds its old rows plus one new
 * partition at most, never two full copies of its share. Every rank walks
 * the same (new, old) overlaps in the same order, so the messages of each
 * pair of ranks match in order, and a rank waits only for messages of the
 * partition every rank is at. */
void ps_repartition(ps_var *pv, int64_t parts, const int *owners) {
    int same = parts == pv->n_parts;
    for (int64_t p = 0; same && p < parts; p++) same = pv->parts[p].owner == owners[p];
    if (same) return;
    ps_part *old = pv->parts, *neu = part_table(pv, parts, owners);
    int64_t n_old = pv->n_parts, d = pv->dim, first_old = 0;
    int me = px_comm.rank, arrays = 1 + px_comm.n_slots;
    int tag = comm_tag(pv->var, TAG_REPART);
    char what[160];
    snprintf(what, sizeof what, "the re-partitioning of '%s'", pv->name);
    comm_reqs q = {0};
    for (int64_t pn = 0; pn < parts; pn++) {
        alloc_part(pv, &neu[pn]);
        int64_t hi_n = neu[pn].row0 + neu[pn].rows;
        for (int64_t po = first_old; po < n_old && old[po].row0 < hi_n; po++) {
            int64_t lo = old[po].row0 > neu[pn].row0 ? old[po].row0 : neu[pn].row0;
            int64_t hi_o = old[po].row0 + old[po].rows, hi = hi_o < hi_n ? hi_o : hi_n;
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
        comm_reqs_wait(&q, WATCH_MAIN, what);
        while (first_old < n_old && old[first_old].row0 + old[first_old].rows <= hi_n)
            free_part(pv, &old[first_old++]);
    }
    comm_reqs_free(&q);
    free_parts(pv, old, n_old);
    pv->parts = neu;
    pv->n_parts = parts;
}
