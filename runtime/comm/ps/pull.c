/* PS pull. A sparse pull fills a rank's compact row cache: the rows a
 * batch reads, nothing else (a worker holds no copy of the table).
 * Request / reply:
 *   1. the distinct requested rows, grouped by owning shard;
 *   2. to every other shard: the number of rows wanted (8 bytes, even 0);
 *   3. to every shard asked for k > 0 rows: the k int64 indices; the
 *      shard answers with the k rows, in the order asked, straight into
 *      the cache (its rows are in this grouped order).
 * Rows owned by this rank's own shard are copied directly. A dense PS
 * variable's pull brings every row into its replica. Every rank calls the
 * pull of a variable (it is collective: shards answer inside their own
 * call), so a pull of step s+1 sees every push of step s. Rows travel in
 * the run's --wire format (transport/wire_format.c); those of this rank's
 * own shard are copied as they are. Under --staleness a rank asks only for
 * the rows it did not pull in the last S steps (stale.c), and reads the
 * others from what it kept. */
#include "ps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static comm_buf uniq_b, grouped_b, perm_b, slot_b, which_b, their_idx_b, reply_b, all_b;
static comm_buf ask_b, at_b, got_b;

const float *ps_master_row(const ps_var *pv, int64_t row) {
    const ps_part *part = &pv->parts[px_ps_part_of_row(pv->rows, pv->n_parts, row)];
    if (part->owner != px_world.rank)
        px_rt_fail("PS variable '%s': rank %d was asked for row %lld, which it does not hold "
                   "(ranks disagree on the partitions or on the order of pulls)",
                   pv->name, px_world.rank, (long long)row);
    return part->w + (row - part->row0) * pv->dim;
}

/* Every row: each shard sends each of its partitions to every other rank. */
void comm_ps_pull_all(int64_t var, float *w) {
    ps_var *pv = comm_ps_var(var, "ps_pull");
    int me = px_world.rank, n = px_world.size, tag = comm_tag(pv->var, TAG_PULL_ALL);
    int wf = comm_wire_format();
    size_t row_bytes = sizeof(float) * (size_t)pv->dim;
    int64_t owned = 0;
    for (int64_t p = 0; p < pv->n_parts; p++)
        if (pv->parts[p].owner == me) owned += pv->parts[p].rows * pv->dim;
    char *stage = comm_buf_reserve(&all_b, sizeof(uint16_t) * (size_t)(owned + 1));
    comm_reqs q = {0};
    for (int64_t p = 0; p < pv->n_parts; p++) {
        ps_part *part = &pv->parts[p];
        float *dst = w + part->row0 * pv->dim;
        int64_t len = part->rows * pv->dim;
        if (part->owner == me) {
            if (dst != part->w) memcpy(dst, part->w, row_bytes * (size_t)part->rows);
            const void *out = comm_wire_pack(wf, part->w, len, stage);
            stage += sizeof(uint16_t) * (size_t)len;
            for (int r = 0; r < n; r++)
                if (r != me)
                    comm_isend_wire(wf, out, len, r, tag, px_world.ps_comm, PX_TRAFFIC_PS_PULL,
                                    comm_reqs_add(&q, r));
        } else {
            comm_irecv_wire(wf, dst, len, part->owner, tag, px_world.ps_comm, PX_TRAFFIC_PS_PULL,
                            comm_reqs_add(&q, part->owner));
        }
    }
    char what[160];
    snprintf(what, sizeof what, "the pull of every row of '%s'", pv->name);
    comm_reqs_wait(&q, WATCH_MAIN, what);
    comm_reqs_free(&q);
    for (int64_t p = 0; p < pv->n_parts; p++)
        if (pv->parts[p].owner != me)
            comm_wire_arrived(wf, w + pv->parts[p].row0 * pv->dim, pv->parts[p].rows * pv->dim);
}

int64_t ps_pull_plan(ps_var *pv, const void *idx, int dtype, int64_t n_idx, void *remap,
                     int64_t *counts, int64_t *offs, const int64_t **grouped_out,
                     const int64_t **uniq_out, const int64_t **slot_out) {
    size_t n_alloc = (size_t)(n_idx > 0 ? n_idx : 1);
    int64_t *uniq = comm_buf_reserve(&uniq_b, sizeof(int64_t) * n_alloc);
    int64_t *grouped = comm_buf_reserve(&grouped_b, sizeof(int64_t) * n_alloc);
    int64_t *perm = comm_buf_reserve(&perm_b, sizeof(int64_t) * n_alloc);
    int64_t *slot = comm_buf_reserve(&slot_b, sizeof(int64_t) * n_alloc);
    int64_t *which = comm_buf_reserve(&which_b, sizeof(int64_t) * n_alloc);
    int64_t k = ps_unique_indices(idx, dtype, n_idx, pv->rows, "ps_pull", pv->name, uniq, which);
    /* Cache row j holds row grouped[j]; slot[u]: the cache row of uniq[u]. */
    ps_group_by_owner(pv, uniq, k, counts, offs, grouped, perm);
    for (int64_t j = 0; j < k; j++) slot[perm[j]] = j;
    for (int64_t i = 0; i < n_idx; i++) {
        int64_t at = slot[which[i]];
        if (dtype == 6)
            ((int32_t *)remap)[i] = (int32_t)at;
        else
            ((int64_t *)remap)[i] = at;
    }
    *grouped_out = grouped;
    if (uniq_out) *uniq_out = uniq;
    if (slot_out) *slot_out = slot;
    return k;
}

void comm_ps_pull_rows(int64_t var, const void *idx, int dtype, int64_t n_idx, float *cache,
                       void *remap) {
    ps_var *pv = comm_ps_var(var, "ps_pull");
    int me = px_world.rank, n = px_world.size, wf = comm_wire_format();
    int64_t d = pv->dim;
    size_t row_bytes = sizeof(float) * (size_t)d,
           wire_row = (size_t)px_wire_format_bytes(wf) * (size_t)d;
    int64_t *counts = calloc((size_t)n * 4, sizeof(int64_t));
    int64_t *offs = counts + n, *their = counts + 2 * n, *their_offs = counts + 3 * n;
    const int64_t *grouped = NULL;
    ps_pull_plan(pv, idx, dtype, n_idx, remap, counts, offs, &grouped, NULL, NULL);

    /* What to ask each shard for: every row of its group (the cache rows
     * [offs[r], offs[r] + counts[r]), straight into the cache), or under
     * --staleness only the rows not kept fresh: ask[r] of them, their
     * indices from asked + aoffs[r], their cache rows in at[], received
     * into got and copied over. The rows of this rank's own shard are read
     * from it, but kept and read again as the others are (the same rule as
     * a prefetched pull, whose rows all come from the store). */
    int stale = ps_stale_on();
    int64_t step = comm_step(), k_all = offs[n - 1] + counts[n - 1];
    for (int64_t j = offs[me]; j < offs[me] + counts[me]; j++) {
        const float *kept = stale ? ps_stale_row(pv, grouped[j], step) : NULL;
        memcpy(cache + j * d, kept ? kept : ps_master_row(pv, grouped[j]), row_bytes);
        if (stale && !kept) ps_stale_keep(pv, &grouped[j], cache + j * d, 1, step);
    }

    int64_t *ask = counts, *aoffs = offs, *at = NULL;
    const int64_t *asked = grouped;
    float *got = cache;
    if (stale) {
        ask = calloc((size_t)n * 2, sizeof(int64_t));
        int64_t *list = comm_buf_reserve(&ask_b, sizeof(int64_t) * (size_t)(k_all + 1));
        at = comm_buf_reserve(&at_b, sizeof(int64_t) * (size_t)(k_all + 1));
        if (!ask) px_rt_fail("out of memory");
        aoffs = ask + n;
        int64_t m = 0;
        for (int r = 0; r < n; r++) {
            aoffs[r] = m;
            if (r == me) continue;
            for (int64_t j = offs[r]; j < offs[r] + counts[r]; j++) {
                const float *kept = ps_stale_row(pv, grouped[j], step);
                if (kept) {
                    memcpy(cache + j * d, kept, row_bytes);
                } else {
                    list[m] = grouped[j];
                    at[m++] = j;
                }
            }
            ask[r] = m - aoffs[r];
        }
        asked = list;
        got = comm_buf_reserve(&got_b, row_bytes * (size_t)(m + 1));
    }

    char what[200];
    comm_reqs q = {0};
    /* Round 1: how many rows each shard is asked for. */
    int t_count = comm_tag(var, TAG_PULL_COUNT), t_idx = comm_tag(var, TAG_PULL_IDX),
        t_rows = comm_tag(var, TAG_PULL_ROWS);
    for (int s = 0; s < px_world.n_shards; s++) {
        int r = px_world.shard_ranks[s];
        if (r != me)
            comm_isend(&ask[r], 1, MPI_INT64_T, 8, r, t_count, px_world.ps_comm, PX_TRAFFIC_PS_PULL,
                       comm_reqs_add(&q, r));
    }
    if (px_world.is_leader)
        for (int r = 0; r < n; r++)
            if (r != me)
                comm_irecv(&their[r], 1, MPI_INT64_T, 8, r, t_count, px_world.ps_comm,
                           PX_TRAFFIC_PS_PULL, comm_reqs_add(&q, r));
    snprintf(what, sizeof what, "the pull of '%s' (row counts)", pv->name);
    comm_reqs_wait(&q, WATCH_MAIN, what);

    /* Round 2: indices out, rows back into the cache. */
    for (int r = 0; r < n; r++) {
        if (r == me || ask[r] == 0) continue;
        comm_isend(asked + aoffs[r], ask[r], MPI_INT64_T, 8, r, t_idx, px_world.ps_comm,
                   PX_TRAFFIC_PS_PULL, comm_reqs_add(&q, r));
        comm_irecv_wire(wf, got + aoffs[r] * d, ask[r] * d, r, t_rows, px_world.ps_comm,
                        PX_TRAFFIC_PS_PULL, comm_reqs_add(&q, r));
    }
    int64_t total = 0;
    if (px_world.is_leader) {
        for (int r = 0; r < n; r++) {
            their_offs[r] = total;
            total += r == me ? 0 : their[r];
        }
        int64_t *their_idx =
            comm_buf_reserve(&their_idx_b, sizeof(int64_t) * (size_t)(total > 0 ? total : 1));
        comm_reqs asked = {0};
        for (int r = 0; r < n; r++)
            if (r != me && their[r] > 0)
                comm_irecv(their_idx + their_offs[r], their[r], MPI_INT64_T, 8, r, t_idx,
                           px_world.ps_comm, PX_TRAFFIC_PS_PULL, comm_reqs_add(&asked, r));
        snprintf(what, sizeof what, "the pull of '%s' (indices asked of this shard)", pv->name);
        comm_reqs_wait(&asked, WATCH_MAIN, what);
        comm_reqs_free(&asked);
        char *reply = comm_buf_reserve(&reply_b, wire_row * (size_t)(total > 0 ? total : 1));
        for (int r = 0; r < n; r++) {
            if (r == me || their[r] == 0) continue;
            for (int64_t j = their_offs[r]; j < their_offs[r] + their[r]; j++) {
                int64_t row = their_idx[j];
                if (row < 0 || row >= pv->rows)
                    px_rt_fail("ps_pull of '%s': rank %d asked for row %lld of %lld", pv->name, r,
                               (long long)row, (long long)pv->rows);
                comm_wire_pack_into(wf, reply + (size_t)j * wire_row, ps_master_row(pv, row), d);
            }
            comm_isend_wire(wf, reply + (size_t)their_offs[r] * wire_row, their[r] * d, r, t_rows,
                            px_world.ps_comm, PX_TRAFFIC_PS_PULL, comm_reqs_add(&q, r));
        }
    }
    snprintf(what, sizeof what, "the pull of '%s' (rows)", pv->name);
    comm_reqs_wait(&q, WATCH_MAIN, what);
    comm_reqs_free(&q);
    for (int r = 0; r < n; r++)
        if (r != me && ask[r] > 0) comm_wire_arrived(wf, got + aoffs[r] * d, ask[r] * d);
    if (stale) {
        int64_t m = aoffs[n - 1] + ask[n - 1];
        for (int64_t i = 0; i < m; i++) memcpy(cache + at[i] * d, got + i * d, row_bytes);
        ps_stale_keep(pv, asked, got, m, step);
        free(ask);
    }
    free(counts);
}
