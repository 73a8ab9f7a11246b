/* Checkpoint and --save support: what each rank holds of a variable (the
 * shard's partitions), streaming a parameter-server variable to rank 0 in
 * bounded chunks, and the few small collectives the sharded checkpoint
 * needs. Nothing here ever holds a whole parameter-server table. */
#include "ps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void require_setup(const char *op) {
    if (!px_ps.ready) px_rt_fail("%s: communication is not set up", op);
}

static ps_var *ps_of(int64_t var, const char *op) {
    require_setup(op);
    if (var < 0 || var >= px_ps.prog->n_vars)
        px_rt_fail("%s: variable %lld does not exist", op, (long long)var);
    return px_ps.ps_of_var[var];
}

int px_comm_var_is_ps(int64_t var) {
    return ps_of(var, "checkpoint") != NULL;
}

int64_t px_comm_var_n_parts(int64_t var) {
    ps_var *pv = ps_of(var, "checkpoint");
    return pv ? pv->n_parts : 0;
}

void px_comm_var_part(int64_t var, int64_t p, px_row_block *out) {
    ps_var *pv = ps_of(var, "checkpoint");
    if (!pv || p < 0 || p >= pv->n_parts)
        px_rt_fail("checkpoint: variable %lld has no partition %lld", (long long)var, (long long)p);
    const ps_part *part = &pv->parts[p];
    memset(out, 0, sizeof *out);
    out->row0 = part->row0;
    out->rows = part->rows;
    out->dim = pv->dim;
    out->owner = part->owner;
    if (part->owner != px_world.rank) return;
    out->w = part->w;
    for (int s = 0; s < px_ps.n_slots && s < PX_OPTIM_MAX_SLOTS; s++)
        out->slots[s] = part->slots[s];
}

void px_comm_var_stream(int64_t var, int64_t chunk_bytes, px_rows_sink sink, void *ctx) {
    ps_var *pv = ps_of(var, "--save");
    if (!pv) px_rt_fail("--save: variable %lld is not on the parameter servers", (long long)var);
    int me = px_world.rank;
    int64_t row_floats = pv->dim > 0 ? pv->dim : 1;
    int64_t chunk_rows = chunk_bytes / (4 * row_floats);
    if (chunk_rows < 1) chunk_rows = 1;
    int tag = comm_tag(var, TAG_GATHER);
    char what[200];
    snprintf(what, sizeof what, "the rows of '%s' for --save", pv->name);
    float *buf = NULL;
    /* Partition by partition, chunk by chunk, one message at a time: rank 0
     * holds one chunk at most, and every owner sends its chunks in the order
     * rank 0 asks for them. */
    for (int64_t p = 0; p < pv->n_parts; p++) {
        ps_part *part = &pv->parts[p];
        if (me != 0 && part->owner != me) continue;
        for (int64_t r = 0; r < part->rows; r += chunk_rows) {
            int64_t n = (part->rows - r < chunk_rows ? part->rows - r : chunk_rows) * pv->dim;
            const float *src = part->owner == me ? part->w + r * pv->dim : NULL;
            if (me == 0 && part->owner == 0) {
                sink(ctx, src, n);
                continue;
            }
            MPI_Request req;
            int peer = me == 0 ? part->owner : 0;
            if (me == 0) {
                if (!buf) buf = malloc(sizeof(float) * (size_t)(chunk_rows * row_floats));
                if (!buf) px_rt_fail("out of memory for a --save chunk of '%s'", pv->name);
                comm_irecv(buf, n, MPI_FLOAT, 4, peer, tag, px_world.ps_comm, PX_TRAFFIC_OTHER,
                           &req);
            } else {
                comm_isend(src, n, MPI_FLOAT, 4, peer, tag, px_world.ps_comm, PX_TRAFFIC_OTHER,
                           &req);
            }
            comm_waitall(WATCH_MAIN, 1, &req, &peer, what);
            if (me == 0) sink(ctx, buf, n);
        }
    }
    free(buf);
}
