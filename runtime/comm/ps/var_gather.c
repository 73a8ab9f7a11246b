/* The full value (and optimizer state) of a variable on rank 0, and loading
 * one back on every rank: for tests of the shards on small tables. The
 * training program never calls these (checkpoints and --save go shard by
 * shard, see checkpoint.c). A NULL array means "not wanted" (gather: nothing
 * written there) or "not given" (load: that array is left as it is). */
#include "ps.h"

#include <stdio.h>
#include <string.h>

static const px_var_desc *var_desc(int64_t var, const char *op) {
    if (!px_ps.ready) px_rt_fail("%s: communication is not set up", op);
    if (var < 0 || var >= px_ps.prog->n_vars)
        px_rt_fail("%s: variable %lld does not exist", op, (long long)var);
    return &px_ps.prog->vars[var];
}

/* The replica's optimizer slot s, or NULL when there is none. */
static float *replica_slot(int64_t var, int s) {
    if (!px_train.slots || s >= px_ps.n_slots) return NULL;
    return px_train.slots[var * PX_OPTIM_MAX_SLOTS + s];
}

void px_comm_var_gather(int64_t var, float *w, float *const slots[PX_OPTIM_MAX_SLOTS]) {
    const px_var_desc *d = var_desc(var, "checkpoint gather");
    int me = px_world.rank;
    size_t bytes = (size_t)d->nbytes;
    if (!px_ps.ps_of_var[var]) { /* replicated: rank 0's copy */
        if (me != 0) return;
        if (w && w != d->data) memcpy(w, d->data, bytes);
        for (int s = 0; s < PX_OPTIM_MAX_SLOTS; s++) {
            if (!slots || !slots[s]) continue;
            float *src = replica_slot(var, s);
            if (src)
                memcpy(slots[s], src, bytes);
            else
                memset(slots[s], 0, bytes);
        }
        return;
    }
    ps_var *pv = px_ps.ps_of_var[var];
    /* Which arrays rank 0 wants: bit 0 the rows, bit 1 + s slot s. */
    int mask = 0;
    if (me == 0) {
        mask = w ? 1 : 0;
        for (int s = 0; s < PX_OPTIM_MAX_SLOTS; s++)
            if (slots && slots[s]) mask |= 2 << s;
    }
    if (px_world.size > 1) {
        MPI_Bcast(&mask, 1, MPI_INT, 0, px_world.coll_comm);
        if (me == 0)
            comm_count_sent(PX_TRAFFIC_OTHER, 4);
        else
            comm_count_received(PX_TRAFFIC_OTHER, 4);
    }
    int tag = comm_tag(var, TAG_GATHER);
    comm_reqs q = {0};
    for (int64_t p = 0; p < pv->n_parts; p++) {
        ps_part *part = &pv->parts[p];
        int64_t off = part->row0 * pv->dim, len = part->rows * pv->dim;
        if (part->owner != me && me != 0) continue;
        for (int a = 0; a < 1 + PX_OPTIM_MAX_SLOTS; a++) {
            if (!(mask & (1 << a))) continue;
            float *dst = me == 0 ? (a == 0 ? w : slots[a - 1]) + off : NULL;
            const float *src = NULL;
            if (part->owner == me) {
                src = a == 0 ? part->w : part->slots[a - 1];
                if (!src) { /* a slot this optimizer does not have */
                    if (me == 0) memset(dst, 0, sizeof(float) * (size_t)len);
                    continue;
                }
            } else if (a > 0 && a - 1 >= px_ps.n_slots) {
                memset(dst, 0, sizeof(float) * (size_t)len); /* the owner sends nothing */
                continue;
            }
            if (me == 0 && part->owner == me)
                memcpy(dst, src, sizeof(float) * (size_t)len);
            else if (me == 0)
                comm_irecv(dst, len, MPI_FLOAT, 4, part->owner, tag, px_world.ps_comm,
                           PX_TRAFFIC_OTHER, comm_reqs_add(&q, part->owner));
            else
                comm_isend(src, len, MPI_FLOAT, 4, 0, tag, px_world.ps_comm, PX_TRAFFIC_OTHER,
                           comm_reqs_add(&q, 0));
        }
    }
    char what[160];
    snprintf(what, sizeof what, "the checkpoint gather of '%s'", pv->name);
    comm_reqs_wait(&q, WATCH_MAIN, what);
    comm_reqs_free(&q);
}

void px_comm_var_load(int64_t var, const float *w, const float *const slots[PX_OPTIM_MAX_SLOTS]) {
    comm_prefetch_drain(NULL); /* answers still to give read the rows rewritten here */
    const px_var_desc *d = var_desc(var, "checkpoint load");
    size_t bytes = (size_t)d->nbytes;
    ps_var *pv = px_ps.ps_of_var[var];
    if (!pv) {
        if (w && w != d->data) memcpy(d->data, w, bytes);
        for (int s = 0; s < px_ps.n_slots; s++) {
            float *dst = replica_slot(var, s);
            if (dst && slots && slots[s]) memcpy(dst, slots[s], bytes);
        }
        return;
    }
    for (int64_t p = 0; p < pv->n_parts; p++) {
        ps_part *part = &pv->parts[p];
        if (part->owner != px_world.rank) continue;
        size_t off = (size_t)(part->row0 * pv->dim),
               len = sizeof(float) * (size_t)(part->rows * pv->dim);
        if (w) memcpy(part->w, w + off, len);
        for (int s = 0; s < px_ps.n_slots; s++)
            if (slots && slots[s]) memcpy(part->slots[s], slots[s] + off, len);
    }
}
