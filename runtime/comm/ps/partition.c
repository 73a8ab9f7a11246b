/* Row partitions of parameter-server variables: P contiguous, balanced row
 * ranges placed shard-contiguously (px_ps_layout.h). Re-partitioning
 * (automatic partitions) moves master rows and optimizer state between
 * partitions bit for bit, giving the pages of moved rows back as it goes,
 * so a shard's memory stays its share of the rows (plus one chunk). */
#include "ps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Shard rows and optimizer state are mapped, not taken from the heap: a
 * freed partition goes back to the system at once, so moving partitions
 * (automatic partitions) does not leave a shard holding old and new rows.
 * Fresh anonymous pages read as zero. */
enum { HUGE_PAGE_BYTES = 2 << 20 };

static size_t floats_bytes(int64_t n) {
    return sizeof(float) * (size_t)(n > 0 ? n : 1);
}

/* dense: every float is written before the first step (the rows, from the
 * model or a checkpoint, or moved in), so the array gets huge pages where
 * the kernel has them: a 4 KiB page costs a fault the first time it is
 * written, and on a virtual machine a fault costs tens of microseconds (a
 * shard of a few GiB spent seconds in them before its first step). Not for
 * optimizer state: the updates write it row by row, and a first write to a
 * huge page would clear 2 MiB for one row. */
static float *alloc_floats(int64_t n, const char *name, int dense) {
    void *p =
        mmap(NULL, floats_bytes(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) px_rt_fail("out of memory for the shard of variable '%s'", name);
    if (dense && floats_bytes(n) >= HUGE_PAGE_BYTES)
        (void)madvise(p, floats_bytes(n), MADV_HUGEPAGE);
    return p;
}

/* Unmaps what is left of an array of n floats whose first `unmapped`
 * bytes are gone already. */
static void free_floats(float *p, int64_t n, int64_t unmapped) {
    int64_t bytes = (int64_t)floats_bytes(n);
    if (p && unmapped < bytes) munmap((char *)p + unmapped, (size_t)(bytes - unmapped));
}

int **ps_place(const int64_t *parts) {
    int n_ps = px_ps.n_ps, n_sh = px_world.n_shards;
    int **owners = calloc((size_t)(n_ps > 0 ? n_ps : 1), sizeof *owners);
    if (!owners) px_rt_fail("out of memory placing the partitions");
    for (int i = 0; i < n_ps; i++) {
        const ps_var *pv = &px_ps.ps[i];
        owners[i] = malloc(sizeof(int) * (size_t)(parts[i] > 0 ? parts[i] : 1));
        if (!owners[i]) px_rt_fail("out of memory placing the partitions of '%s'", pv->name);
        for (int64_t p = 0; p < parts[i]; p++) {
            int shard = px_ps_part_shard(p, parts[i], n_sh, pv->shard_offset);
            owners[i][p] = px_world.shard_ranks[shard];
        }
    }
    return owners;
}

int64_t ps_shard_bytes(void) {
    int64_t bytes = 0;
    for (int i = 0; i < px_ps.n_ps; i++) {
        const ps_var *pv = &px_ps.ps[i];
        for (int64_t p = 0; p < pv->n_parts; p++)
            if (pv->parts[p].owner == px_world.rank)
                bytes += (int64_t)sizeof(float) * pv->parts[p].rows * pv->dim;
    }
    return bytes;
}

void ps_place_free(int **owners) {
    if (!owners) return;
    for (int i = 0; i < px_ps.n_ps; i++) free(owners[i]);
    free(owners);
}

/* The partition table of pv at `parts` partitions placed on `owners`, no
 * storage yet. */
static ps_part *part_table(const ps_var *pv, int64_t parts, const int *owners) {
    ps_part *t = calloc((size_t)parts, sizeof *t);
    if (!t) px_rt_fail("out of memory for the partitions of '%s'", pv->name);
    for (int64_t p = 0; p < parts; p++) {
        t[p].row0 = px_ps_part_row0(pv->rows, parts, p);
        t[p].rows = px_ps_part_row0(pv->rows, parts, p + 1) - t[p].row0;
        t[p].owner = owners[p];
    }
    return t;
}

/* Optimizer state of a partition this rank owns: zero. */
static void alloc_state(const ps_var *pv, ps_part *part) {
    for (int s = 0; s < px_ps.n_slots; s++)
        part->slots[s] = alloc_floats(part->rows * pv->dim, pv->name, 0);
}

/* Storage of a partition this rank owns: rows uninitialised, state zero. */
static void alloc_part(const ps_var *pv, ps_part *part) {
    if (part->owner != px_world.rank) return;
    part->w = alloc_floats(part->rows * pv->dim, pv->name, 1);
    alloc_state(pv, part);
}

static void free_part(const ps_var *pv, ps_part *part) {
    free_floats(part->w, part->rows * pv->dim, part->unmapped);
    part->w = NULL;
    for (int s = 0; s < PX_OPTIM_MAX_SLOTS; s++) {
        free_floats(part->slots[s], part->rows * pv->dim, part->unmapped);
        part->slots[s] = NULL;
    }
    part->unmapped = 0;
}

static void free_parts(const ps_var *pv, ps_part *t, int64_t parts) {
    if (!t) return;
    for (int64_t p = 0; p < parts; p++) free_part(pv, &t[p]);
    free(t);
}

void ps_layout_init(ps_var *pv, int64_t parts, const int *owners) {
    const px_var_desc *d = &px_ps.prog->vars[pv->var];
    pv->n_parts = parts;
    pv->parts = part_table(pv, parts, owners);
    for (int64_t p = 0; p < parts; p++) {
        ps_part *part = &pv->parts[p];
        if (part->owner != px_world.rank) continue;
        /* The rows mapped from the model file where they can be: nothing
         * copied and no page filled before the first step. */
        float *mapped = px_ps.opts.map_rows && part->rows > 0
                            ? px_ps.opts.map_rows(pv->var, part->row0, part->rows)
                            : NULL;
        if (mapped) {
            part->w = mapped;
            alloc_state(pv, part);
            continue;
        }
        alloc_part(pv, part);
        if (px_ps.opts.read_rows) {
            px_ps.opts.read_rows(pv->var, part->row0, part->rows, part->w);
        } else {
            if (!d->data)
                px_rt_fail("PS variable '%s' has no initial value to take its rows from", pv->name);
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

/* Bytes a re-partitioning moves at a time, over all arrays (rows and
 * each optimizer slot) together: what a shard holds twice at most. */
enum { MOVE_CHUNK_BYTES = 8 << 20 };

/* The old partition's rows before floats `upto` of each array have left:
 * their whole pages are unmapped at once, address space and memory both
 * (ulimit -v counts the former). The rest is unmapped when the partition
 * is freed (free_part). */
static void release_moved(ps_part *old, int arrays, int64_t upto) {
    int64_t page = sysconf(_SC_PAGESIZE), hi = upto * (int64_t)sizeof(float) / page * page;
    if (hi <= old->unmapped) return;
    for (int a = 0; a < arrays; a++) {
        char *base = (char *)(a == 0 ? old->w : old->slots[a - 1]);
        munmap(base + old->unmapped, (size_t)(hi - old->unmapped));
    }
    old->unmapped = hi;
}

/* One new partition at a time, in row order, and inside it chunk by chunk:
 * each chunk arrives from the old partition that holds it, and the sender
 * unmaps the pages of the rows that have left at once (an old partition
 * is freed whole once every row of it has moved). Rows leave and arrive in
 * row order, so a shard holds the rows it has not sent yet plus the rows it
 * has received, plus one chunk: with the shard-contiguous placement
 * (px_ps_layout.h), its own share and a chunk, never old and new copies of
 * it. Every rank walks the same (new, old, chunk) sequence, so the
 * messages of each pair of ranks match in order, and a rank waits only for
 * the chunk every rank is at. */
void ps_repartition(ps_var *pv, int64_t parts, const int *owners) {
    comm_prefetch_drain(NULL); /* answers still to give read the rows that move */
    int same = parts == pv->n_parts;
    for (int64_t p = 0; same && p < parts; p++) same = pv->parts[p].owner == owners[p];
    if (same) return;
    ps_part *old = pv->parts, *neu = part_table(pv, parts, owners);
    int64_t n_old = pv->n_parts, d = pv->dim, first_old = 0;
    int me = px_world.rank, arrays = 1 + px_ps.n_slots;
    int64_t chunk_rows = MOVE_CHUNK_BYTES / ((int64_t)sizeof(float) * d * arrays);
    if (chunk_rows < 1) chunk_rows = 1;
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
            if (src != me && dst != me) continue;
            for (int64_t c0 = lo; c0 < hi; c0 += chunk_rows) {
                int64_t c1 = hi - c0 < chunk_rows ? hi : c0 + chunk_rows;
                int64_t n = (c1 - c0) * d, so = (c0 - old[po].row0) * d,
                        dn = (c0 - neu[pn].row0) * d;
                for (int a = 0; a < arrays; a++) {
                    float *from =
                        src == me ? (a == 0 ? old[po].w : old[po].slots[a - 1]) + so : NULL;
                    float *to = dst == me ? (a == 0 ? neu[pn].w : neu[pn].slots[a - 1]) + dn : NULL;
                    if (src == me && dst == me)
                        memcpy(to, from, sizeof(float) * (size_t)n);
                    else if (src == me)
                        comm_isend(from, n, MPI_FLOAT, 4, dst, tag, px_world.ps_comm,
                                   PX_TRAFFIC_OTHER, comm_reqs_add(&q, dst));
                    else
                        comm_irecv(to, n, MPI_FLOAT, 4, src, tag, px_world.ps_comm,
                                   PX_TRAFFIC_OTHER, comm_reqs_add(&q, src));
                }
                if (q.n) comm_reqs_wait(&q, WATCH_MAIN, what);
                if (src == me) release_moved(&old[po], arrays, so + n);
            }
        }
        while (first_old < n_old && old[first_old].row0 + old[first_old].rows <= hi_n)
            free_part(pv, &old[first_old++]);
    }
    comm_reqs_free(&q);
    free_parts(pv, old, n_old);
    pv->parts = neu;
    pv->n_parts = parts;
}
