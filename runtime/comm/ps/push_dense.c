/* Dense push of a PS variable (a dense variable in ps mode): the whole
 * gradient. With local aggregation the node's ranks send theirs to the
 * leader, which sums them (rank order); the senders (leaders, or every rank
 * without aggregation) send each shard the slices of its partitions; the
 * shard sums them in sender rank order, divides by N and applies
 * px_optim_dense to each partition it holds. The slices travel in the
 * run's --wire format. */
#include "ps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void comm_ps_push_dense(int64_t var, const float *g, int64_t numel) {
    static comm_buf member_b, acc_b, in_b, part_b, stage_b;
    ps_var *pv = comm_ps_var(var, "ps_push_dense");
    if (numel != pv->rows * pv->dim)
        px_rt_fail("ps_push_dense of '%s': a gradient of %lld floats, the variable has %lld",
                   pv->name, (long long)numel, (long long)(pv->rows * pv->dim));
    int me = px_world.rank, n = px_world.size, tag_agg = comm_tag(var, TAG_DENSE_AGG),
        tag = comm_tag(var, TAG_DENSE), wf = comm_wire_format();
    uint16_t *stage = comm_buf_reserve(&stage_b, sizeof(uint16_t) * (size_t)(numel + 1));
    size_t bytes = sizeof(float) * (size_t)numel;
    char what[200];
    comm_reqs q = {0};
    const float *sum = g;

    if (px_ps.opts.local_aggregation && px_world.node_size > 1) {
        snprintf(what, sizeof what, "the push of '%s' (local aggregation)", pv->name);
        if (!px_world.is_leader) {
            comm_isend_wire(wf, comm_wire_pack(wf, g, numel, stage), numel, px_world.leader,
                            tag_agg, px_world.ps_comm, PX_TRAFFIC_PS_PUSH,
                            comm_reqs_add(&q, px_world.leader));
            comm_reqs_wait(&q, WATCH_MAIN, what);
            comm_reqs_free(&q);
            return;
        }
        int members = px_world.node_size;
        float *in = comm_buf_reserve(&member_b, bytes * (size_t)members);
        for (int i = 1; i < members; i++) /* members[0] is this leader */
            comm_irecv_wire(wf, in + (size_t)i * (size_t)numel, numel, px_world.node_members[i],
                            tag_agg, px_world.ps_comm, PX_TRAFFIC_PS_PUSH,
                            comm_reqs_add(&q, px_world.node_members[i]));
        comm_reqs_wait(&q, WATCH_MAIN, what);
        for (int i = 1; i < members; i++)
            comm_wire_arrived(wf, in + (size_t)i * (size_t)numel, numel);
        float *acc = comm_buf_reserve(&acc_b, bytes);
        memcpy(acc, g, bytes);
        for (int i = 1; i < members; i++) {
            const float *x = in + (size_t)i * (size_t)numel;
            for (int64_t j = 0; j < numel; j++) acc[j] += x[j];
        }
        sum = acc;
    }

    int *list = malloc(sizeof(int) * (size_t)n);
    int n_send = ps_senders(list), sending = 0;
    for (int i = 0; i < n_send; i++) sending |= list[i] == me;
    /* A shard's owned partitions, concatenated: one buffer per sender. */
    int64_t owned = 0;
    for (int64_t p = 0; p < pv->n_parts; p++)
        if (pv->parts[p].owner == me) owned += pv->parts[p].rows * pv->dim;
    float *in = NULL;
    if (px_world.is_leader)
        in = comm_buf_reserve(&in_b, sizeof(float) * (size_t)(owned * n_send + 1));
    for (int64_t p = 0, off = 0; p < pv->n_parts; p++) {
        ps_part *part = &pv->parts[p];
        int64_t len = part->rows * pv->dim;
        if (part->owner != me) {
            int64_t at = part->row0 * pv->dim;
            if (sending)
                comm_isend_wire(wf, comm_wire_pack(wf, sum + at, len, stage + at), len, part->owner,
                                tag, px_world.ps_comm, PX_TRAFFIC_PS_PUSH,
                                comm_reqs_add(&q, part->owner));
            continue;
        }
        for (int i = 0; i < n_send; i++)
            if (list[i] != me)
                comm_irecv_wire(wf, in + (size_t)i * (size_t)owned + (size_t)off, len, list[i], tag,
                                px_world.ps_comm, PX_TRAFFIC_PS_PUSH, comm_reqs_add(&q, list[i]));
        off += len;
    }
    snprintf(what, sizeof what, "the push of '%s' (to the shards)", pv->name);
    comm_reqs_wait(&q, WATCH_MAIN, what);
    comm_reqs_free(&q);
    for (int64_t p = 0, off = 0; p < pv->n_parts; p++) {
        ps_part *part = &pv->parts[p];
        if (part->owner != me) continue;
        int64_t len = part->rows * pv->dim;
        for (int i = 0; i < n_send; i++)
            if (list[i] != me)
                comm_wire_arrived(wf, in + (size_t)i * (size_t)owned + (size_t)off, len);
        off += len;
    }

    if (px_world.is_leader) {
        const px_optim_desc *o = ps_optim(pv);
        for (int64_t p = 0, off = 0; p < pv->n_parts; p++) {
            ps_part *part = &pv->parts[p];
            if (part->owner != me) continue;
            int64_t len = part->rows * pv->dim;
            float *acc = comm_buf_reserve(&part_b, sizeof(float) * (size_t)(len + 1));
            for (int i = 0; i < n_send; i++) { /* senders in rank order, the first copied */
                const float *x = list[i] == me ? sum + part->row0 * pv->dim
                                               : in + (size_t)i * (size_t)owned + (size_t)off;
                if (i == 0)
                    memcpy(acc, x, sizeof(float) * (size_t)len);
                else
                    for (int64_t j = 0; j < len; j++) acc[j] += x[j];
            }
            ps_scale_by_ranks(acc, len);
            px_optim_dense(o, px_train.t, part->w, acc, part->slots, len);
            off += len;
        }
    }
    free(list);
}
