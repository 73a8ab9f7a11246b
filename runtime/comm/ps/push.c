/* PS push: row gradients to the shards, which average them over the ranks
 * and apply the optimizer to the rows they hold (dense push: push_dense.c).
 *
 * With local aggregation (default) the ranks of a node first send their
 * row sets to the node leader, which sums them (union of the indices); the
 * leaders then send to the owning shards. Without it every rank sends to
 * the shards directly. A shard sums the contributions it gets in the order
 * of the senders' ranks, divides by N (world size; under --pp the ranks of
 * the variable's stage) and calls
 * px_optim_rows / px_optim_dense. With one node both ways do the same
 * additions in the same order: the same bits.
 *
 * A row-set transfer to the leader is a count (8 bytes, always) and, when
 * the count is not 0, the indices and the rows; to the shards it goes into
 * receives the shards posted a push ahead (push_inbox.c). Rows travel in
 * the run's --wire format; a rank's own rows are summed as they are. */
#include "ps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct exchange {
    ps_var *pv;
    int t_count, t_idx, t_rows, kind;
    const char *stage;
    /* this rank's outgoing groups: counts[r] rows for rank r from offs[r] */
    const int64_t *counts, *offs, *idx;
    const float *rows;
    /* incoming: in_counts[r] rows from rank r, stored from in_offs[r] */
    int64_t *in_counts, *in_offs;
    comm_buf in_idx, in_rows;
    comm_buf out_rows; /* the outgoing rows in a 16-bit --wire */
} exchange;

/* Sends this rank's groups to the ranks in `to` and collects the groups of
 * the ranks in `from` (neither list holds this rank). */
static void exchange_rows(exchange *x, const int *to, int n_to, const int *from, int n_from) {
    ps_var *pv = x->pv;
    int64_t d = pv->dim;
    int wf = comm_wire_format();
    char what[200];
    comm_reqs q = {0};
    for (int i = 0; i < n_to; i++)
        comm_isend(&x->counts[to[i]], 1, MPI_INT64_T, 8, to[i], x->t_count, px_world.ps_comm,
                   x->kind, comm_reqs_add(&q, to[i]));
    for (int i = 0; i < n_from; i++)
        comm_irecv(&x->in_counts[from[i]], 1, MPI_INT64_T, 8, from[i], x->t_count, px_world.ps_comm,
                   x->kind, comm_reqs_add(&q, from[i]));
    snprintf(what, sizeof what, "the push of '%s' (%s, row counts)", pv->name, x->stage);
    comm_reqs_wait(&q, comm_self_slot(), what);

    int64_t total = 0;
    for (int i = 0; i < n_from; i++) {
        x->in_offs[from[i]] = total;
        total += x->in_counts[from[i]];
    }
    int64_t *in_idx = comm_buf_reserve(&x->in_idx, sizeof(int64_t) * (size_t)(total + 1));
    float *in_rows = comm_buf_reserve(&x->in_rows, sizeof(float) * (size_t)(total * d + 1));
    int64_t out_end = 0;
    for (int i = 0; i < n_to; i++)
        if (x->offs[to[i]] + x->counts[to[i]] > out_end)
            out_end = x->offs[to[i]] + x->counts[to[i]];
    uint16_t *stage = comm_buf_reserve(&x->out_rows, sizeof(uint16_t) * (size_t)(out_end * d + 1));
    for (int i = 0; i < n_to; i++) {
        int r = to[i];
        int64_t k = x->counts[r], o = x->offs[r];
        if (k == 0) continue;
        comm_isend(x->idx + o, k, MPI_INT64_T, 8, r, x->t_idx, px_world.ps_comm, x->kind,
                   comm_reqs_add(&q, r));
        comm_isend_wire(wf, comm_wire_pack(wf, x->rows + o * d, k * d, stage + o * d), k * d, r,
                        x->t_rows, px_world.ps_comm, x->kind, comm_reqs_add(&q, r));
    }
    for (int i = 0; i < n_from; i++) {
        int r = from[i];
        int64_t k = x->in_counts[r], o = x->in_offs[r];
        if (k == 0) continue;
        comm_irecv(in_idx + o, k, MPI_INT64_T, 8, r, x->t_idx, px_world.ps_comm, x->kind,
                   comm_reqs_add(&q, r));
        comm_irecv_wire(wf, in_rows + o * d, k * d, r, x->t_rows, px_world.ps_comm, x->kind,
                        comm_reqs_add(&q, r));
    }
    snprintf(what, sizeof what, "the push of '%s' (%s, rows)", pv->name, x->stage);
    comm_reqs_wait(&q, comm_self_slot(), what);
    comm_reqs_free(&q);
    for (int i = 0; i < n_from; i++)
        if (x->in_counts[from[i]] > 0)
            comm_wire_arrived(wf, in_rows + x->in_offs[from[i]] * d, x->in_counts[from[i]] * d);
}

const px_optim_desc *ps_optim(const ps_var *pv) {
    if (!px_ps.prog->optim) px_rt_fail("push of '%s': the program has no optimizer", pv->name);
    return px_optim_of_var(px_ps.prog, pv->var);
}

void ps_apply_rows(ps_var *pv, const int64_t *rows, float *g, int64_t n) {
    static comm_buf local_b;
    const px_optim_desc *o = ps_optim(pv);
    int64_t *local = comm_buf_reserve(&local_b, sizeof(int64_t) * (size_t)(n + 1));
    for (int64_t i = 0; i < n;) {
        ps_part *part = &pv->parts[px_ps_part_of_row(pv->rows, pv->n_parts, rows[i])];
        if (part->owner != px_world.rank)
            px_rt_fail("push of '%s': row %lld reached rank %d, which does not hold it", pv->name,
                       (long long)rows[i], px_world.rank);
        int64_t j = i;
        for (; j < n && rows[j] < part->row0 + part->rows; j++) local[j - i] = rows[j] - part->row0;
        px_optim_rows(o, px_train.t, part->w, part->slots, pv->dim, local, g + i * pv->dim, j - i);
        i = j;
    }
}

void ps_scale_by_ranks(float *g, int64_t n) {
    /* --pp: a variable lives on one stage, whose ranks (1 / pp of them)
     * push the gradients; the others push nothing */
    int64_t pp = px_ps.prog && px_ps.prog->pp > 1 ? px_ps.prog->pp : 1;
    float ranks = (float)(px_world.size / pp);
    if (px_world.size / pp > 1)
        for (int64_t i = 0; i < n; i++) g[i] /= ranks;
}

int ps_var_elsewhere(const ps_var *pv) {
    return px_ps.prog && !px_var_held(px_ps.prog, pv->var);
}

/* Ranks that send to the shards and the shards they send to. */
int ps_senders(int *out) {
    if (px_ps.opts.local_aggregation) {
        memcpy(out, px_world.shard_ranks, sizeof(int) * (size_t)px_world.n_shards);
        return px_world.n_shards;
    }
    for (int r = 0; r < px_world.size; r++) out[r] = r;
    return px_world.size;
}

/* The ranks of `list` other than this one. */
static int others(const int *list, int n, int *out) {
    int m = 0;
    for (int i = 0; i < n; i++)
        if (list[i] != px_world.rank) out[m++] = list[i];
    return m;
}

void comm_ps_push(int64_t var, const int64_t *idx, const float *rows, int64_t count, int64_t dim) {
    static comm_buf set_idx_b, set_rows_b, grp_idx_b, grp_rows_b, perm_b, sum_idx_b, sum_rows_b;
    static exchange agg;
    ps_var *pv = comm_ps_var(var, "ps_push");
    int me = px_world.rank, n = px_world.size;
    if (dim != pv->dim)
        px_rt_fail("ps_push of '%s': rows of %lld floats, the variable's have %lld", pv->name,
                   (long long)dim, (long long)pv->dim);
    if (count < 0)
        px_rt_fail("ps_push of '%s': negative row count %lld", pv->name, (long long)count);
    int ascending = 1; /* distinct ascending rows: see own_sum_needed */
    for (int64_t i = 0; i < count; i++) {
        if (idx[i] < 0 || idx[i] >= pv->rows)
            px_rt_fail("ps_push of variable '%s': index %lld at position %lld is out of range "
                       "[0, %lld)",
                       pv->name, (long long)idx[i], (long long)i, (long long)pv->rows);
        ascending &= i == 0 || idx[i] > idx[i - 1];
    }
    int64_t *tab = calloc((size_t)n * 4, sizeof(int64_t));
    int64_t *counts = tab, *offs = tab + n;
    int *list = calloc((size_t)n * 2, sizeof(int)), *peers = list + n;
    rowset set = {count, idx, rows};

    /* A leader alone in its node sums only its own set's duplicates: a
     * set of distinct ascending rows (what the Gather gradient makes) is
     * its own sum, so it goes on as it is rather than copied. */
    int own_sum_needed = !(px_world.is_leader && px_world.node_size == 1 && ascending);
    if (px_ps.opts.local_aggregation && own_sum_needed) {
        /* Round 0: the node's row sets to the leader, which sums them (a
         * leader alone in its node still sums its own set's duplicates). */
        agg.pv = pv;
        agg.t_count = comm_tag(var, TAG_AGG_COUNT);
        agg.t_idx = comm_tag(var, TAG_AGG_IDX);
        agg.t_rows = comm_tag(var, TAG_AGG_ROWS);
        agg.kind = PX_TRAFFIC_PS_PUSH;
        agg.stage = "local aggregation";
        agg.in_counts = tab + 2 * n;
        agg.in_offs = tab + 3 * n;
        if (!px_world.is_leader) {
            counts[px_world.leader] = count;
            offs[px_world.leader] = 0;
            agg.counts = counts, agg.offs = offs, agg.idx = idx, agg.rows = rows;
            exchange_rows(&agg, &px_world.leader, 1, NULL, 0);
            free(tab);
            free(list);
            return;
        }
        int m = others(px_world.node_members, px_world.node_size, peers);
        agg.counts = counts, agg.offs = offs, agg.idx = NULL, agg.rows = NULL;
        if (m > 0) exchange_rows(&agg, NULL, 0, peers, m);
        rowset *in = malloc(sizeof(rowset) * (size_t)px_world.node_size);
        int64_t total = 0;
        for (int i = 0; i < px_world.node_size; i++) {
            int r = px_world.node_members[i];
            if (r == me)
                in[i] = set;
            else
                in[i] = (rowset){agg.in_counts[r], (const int64_t *)agg.in_idx.p + agg.in_offs[r],
                                 (const float *)agg.in_rows.p + agg.in_offs[r] * dim};
            total += in[i].n;
        }
        int64_t *si = comm_buf_reserve(&set_idx_b, sizeof(int64_t) * (size_t)(total + 1));
        float *sr = comm_buf_reserve(&set_rows_b, sizeof(float) * (size_t)(total * dim + 1));
        set.n = ps_rowset_sum(in, px_world.node_size, dim, si, sr);
        set.idx = si;
        set.rows = sr;
        free(in);
    }

    /* Round 1: senders to the owning shards (push_inbox.c). */
    int n_send = ps_senders(list), sending = 0;
    for (int i = 0; i < n_send; i++) sending |= list[i] == me;
    int64_t *gi = comm_buf_reserve(&grp_idx_b, sizeof(int64_t) * (size_t)(set.n + 1));
    float *gr = comm_buf_reserve(&grp_rows_b, sizeof(float) * (size_t)(set.n * dim + 1));
    int64_t *perm = comm_buf_reserve(&perm_b, sizeof(int64_t) * (size_t)(set.n + 1));
    /* Sorted rows of partitions owned in rank order (the default layout)
     * are grouped already: then the rows are sent from where they are. */
    const float *grouped = set.rows;
    if (!ps_group_by_owner(pv, set.idx, set.n, counts, offs, gi, perm)) {
        for (int64_t j = 0; j < set.n; j++)
            memcpy(gr + j * dim, set.rows + perm[j] * dim, sizeof(float) * (size_t)dim);
        grouped = gr;
    }
    int *to = peers, n_to = sending ? others(px_world.shard_ranks, px_world.n_shards, to) : 0;
    int *from = calloc((size_t)n, sizeof(int));
    int n_from = px_world.is_leader ? others(list, n_send, from) : 0;
    rowset *got = malloc(sizeof(rowset) * (size_t)(n_from + 1));
    if (!from || !got) px_rt_fail("out of memory for the push of '%s'", pv->name);
    int64_t cap = ps_push_inbox_cap(pv, n_send);
    comm_reqs sends = {0};
    ps_push_inbox_send(pv, cap, to, n_to, counts, offs, gi, grouped, &sends);
    if (n_from > 0) ps_push_inbox_receive(pv, cap, from, n_from, got);

    if (px_world.is_leader) {
        rowset *in = malloc(sizeof(rowset) * (size_t)n_send);
        int64_t total = 0;
        for (int i = 0, j = 0; i < n_send; i++) {
            /* from lists the other senders in the order of list */
            in[i] = list[i] == me ? (rowset){counts[me], gi + offs[me], grouped + offs[me] * dim}
                                  : got[j++];
            total += in[i].n;
        }
        int64_t *si = comm_buf_reserve(&sum_idx_b, sizeof(int64_t) * (size_t)(total + 1));
        float *sr = comm_buf_reserve(&sum_rows_b, sizeof(float) * (size_t)(total * dim + 1));
        int64_t k = ps_rowset_sum(in, n_send, dim, si, sr);
        if (n_from > 0) ps_push_inbox_repost(pv); /* the next push's rows may come */
        ps_scale_by_ranks(sr, k * dim);
        ps_apply_rows(pv, si, sr, k);
        comm_prefetch_note_update(pv, si, k);
        free(in);
    }
    char what[200];
    snprintf(what, sizeof what, "the push of '%s' (to the shards, sending rows)", pv->name);
    comm_reqs_wait(&sends, comm_self_slot(), what);
    comm_reqs_free(&sends);
    free(got);
    free(from);
    free(tab);
    free(list);
}
