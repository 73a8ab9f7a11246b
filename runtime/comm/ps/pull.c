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
 * call), so a pull of step s+1 sees every push of step s. */
#include "ps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static comm_buf uniq_b, grouped_b, perm_b, slot_b, which_b, their_idx_b, reply_b;

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
    size_t row_bytes = sizeof(float) * (size_t)pv->dim;
    comm_reqs q = {0};
    for (int64_t p = 0; p < pv->n_parts; p++) {
        ps_part *part = &pv->parts[p];
        float *dst = w + part->row0 * pv->dim;
        int64_t len = part->rows * pv->dim;
        if (part->owner == me) {
            if (dst != part->w) memcpy(dst, part->w, row_bytes * (size_t)part->rows);
            for (int r = 0; r < n; r++)
                if (r != me)
                    comm_isend(part->w, len, MPI_FLOAT, 4, r, tag, px_world.ps_comm,
                               PX_TRAFFIC_PS_PULL, comm_reqs_add(&q, r));
        } else {
            comm_irecv(dst, len, MPI_FLOAT, 4, part->owner, tag, px_world.ps_comm,
                       PX_TRAFFIC_PS_PULL, comm_reqs_add(&q, part->owner));
        }
    }
    char what[160];
    snprintf(what, sizeof what, "the pull of every row of '%s'", pv->name);
    comm_reqs_wait(&q, WATCH_MAIN, what);
    comm_reqs_free(&q);
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
    int me = px_world.rank, n = px_world.size;
    int64_t d = pv->dim;
    size_t row_bytes = sizeof(float) * (size_t)d;
    int64_t *counts = calloc((size_t)n * 4, sizeof(int64_t));
    int64_t *offs = counts + n, *their = counts + 2 * n, *their_offs = counts + 3 * n;
    const int64_t *grouped = NULL;
    ps_pull_plan(pv, idx, dtype, n_idx, remap, counts, offs, &grouped, NULL, NULL);

    for (int64_t j = offs[me]; j < offs[me] + counts[me]; j++)
        memcpy(cache + j * d, ps_master_row(pv, grouped[j]), row_bytes);

    char what[200];
    comm_reqs q = {0};
    /* Round 1: how many rows each shard is asked for. */
    int t_count = comm_tag(var, TAG_PULL_COUNT), t_idx = comm_tag(var, TAG_PULL_IDX),
        t_rows = comm_tag(var, TAG_PULL_ROWS);
    for (int s = 0; s < px_world.n_shards; s++) {
        int r = px_world.shard_ranks[s];
        if (r != me)
            comm_isend(&counts[r], 1, MPI_INT64_T, 8, r, t_count, px_world.ps_comm,
                       PX_TRAFFIC_PS_PULL, comm_reqs_add(&q, r));
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
        if (r == me || counts[r] == 0) continue;
        comm_isend(grouped + offs[r], counts[r], MPI_INT64_T, 8, r, t_idx, px_world.ps_comm,
                   PX_TRAFFIC_PS_PULL, comm_reqs_add(&q, r));
        comm_irecv(cache + offs[r] * d, counts[r] * d, MPI_FLOAT, 4, r, t_rows, px_world.ps_comm,
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
        float *reply = comm_buf_reserve(&reply_b, row_bytes * (size_t)(total > 0 ? total : 1));
        for (int r = 0; r < n; r++) {
            if (r == me || their[r] == 0) continue;
            for (int64_t j = their_offs[r]; j < their_offs[r] + their[r]; j++) {
                int64_t row = their_idx[j];
                if (row < 0 || row >= pv->rows)
                    px_rt_fail("ps_pull of '%s': rank %d asked for row %lld of %lld", pv->name, r,
                               (long long)row, (long long)pv->rows);
                memcpy(reply + j * d, ps_master_row(pv, row), row_bytes);
            }
            comm_isend(reply + their_offs[r] * d, their[r] * d, MPI_FLOAT, 4, r, t_rows,
                       px_world.ps_comm, PX_TRAFFIC_PS_PULL, comm_reqs_add(&q, r));
        }
    }
    snprintf(what, sizeof what, "the pull of '%s' (rows)", pv->name);
    comm_reqs_wait(&q, WATCH_MAIN, what);
    comm_reqs_free(&q);
    free(counts);
}
