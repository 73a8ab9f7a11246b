/* The parameter-server variables: which they are, their row shape and
 * their first layout (partitions from the program, the override, or the
 * first automatic candidate), placed over the shards (px_ps_layout.h):
 * each variable's shard offset is chosen here, from the first layout, and
 * kept for the run, so that changing automatic counts keeps the rows on
 * their shards. */
#include "ps.h"

#include <stdlib.h>

/* Each PS variable's shard offset for the first layout (counts). */
static void place_offsets(const int64_t *counts) {
    int n = px_ps.n_ps > 0 ? px_ps.n_ps : 1;
    int64_t *rows = calloc((size_t)n, sizeof *rows), *row_bytes = calloc((size_t)n, sizeof *rows);
    int64_t *scratch = calloc(2 * (size_t)px_world.n_shards, sizeof *scratch);
    int *offsets = calloc((size_t)n, sizeof *offsets);
    if (!rows || !row_bytes || !scratch || !offsets)
        px_rt_fail("out of memory placing the parameter servers");
    for (int i = 0; i < px_ps.n_ps; i++) {
        rows[i] = px_ps.ps[i].rows;
        row_bytes[i] = (int64_t)sizeof(float) * px_ps.ps[i].dim;
    }
    px_ps_shard_offsets(px_ps.n_ps, rows, row_bytes, counts, px_world.n_shards, scratch, offsets);
    for (int i = 0; i < px_ps.n_ps; i++) px_ps.ps[i].shard_offset = offsets[i];
    free(rows);
    free(row_bytes);
    free(scratch);
    free(offsets);
}

void comm_ps_setup(const px_program_desc *p, const px_comm_opts *opts) {
    px_ps.prog = p;
    px_ps.opts = *opts;
    /* --pp: a table's rows are pulled per micro-batch, from rows the
     * stage slices out of its inputs, which the prefetch (keyed by a
     * step's inputs) does not follow: every pull at its place */
    if (p->pp > 1) px_ps.opts.prefetch = 0;
    px_ps.n_slots = p->optim ? px_optim_n_slots(p->optim->kind) : 0;
    px_ps.ps_of_var = calloc((size_t)(p->n_vars > 0 ? p->n_vars : 1), sizeof(ps_var *));
    px_ps.n_ps = 0;
    for (int64_t v = 0; v < p->n_vars; v++) px_ps.n_ps += p->vars[v].sync == PX_SYNC_PS;
    px_ps.ps = calloc((size_t)(px_ps.n_ps > 0 ? px_ps.n_ps : 1), sizeof(ps_var));
    int64_t *counts = calloc((size_t)(px_ps.n_ps > 0 ? px_ps.n_ps : 1), sizeof *counts);
    if (!px_ps.ps_of_var || !px_ps.ps || !counts)
        px_rt_fail("out of memory setting up the parameter servers");
    int i = 0;
    for (int64_t v = 0; v < p->n_vars; v++) {
        const px_var_desc *d = &p->vars[v];
        if (d->sync != PX_SYNC_PS) continue;
        ps_var *pv = &px_ps.ps[i++];
        pv->var = v;
        pv->name = d->name ? d->name : "?";
        if (d->dtype != 1) px_rt_fail("PS variable '%s' is not float32", pv->name);
        int64_t numel = d->nbytes / 4;
        pv->rows = d->rank > 0 ? d->dims[0] : 1;
        if (pv->rows <= 0 || numel <= 0 || numel % pv->rows)
            px_rt_fail("PS variable '%s' has no rows to partition", pv->name);
        pv->dim = numel / pv->rows;
        int64_t parts =
            px_ps.opts.partitions_override > 0 ? px_ps.opts.partitions_override : d->partitions;
        pv->auto_parts = parts <= 0;
        /* one partition per shard, or the count chosen before (the first
         * candidate of a search too); see sched/autotune.c */
        if (pv->auto_parts)
            parts = !px_ps.opts.partitions_search && px_ps.opts.partitions_start > 0
                        ? px_ps.opts.partitions_start
                        : px_world.n_shards;
        counts[i - 1] = parts < pv->rows ? parts : pv->rows;
        px_ps.ps_of_var[v] = pv;
    }
    place_offsets(counts);
    int **owners = ps_place(counts);
    for (i = 0; i < px_ps.n_ps; i++) {
        ps_var *pv = &px_ps.ps[i];
        ps_layout_init(pv, counts[i], owners[i]);
    }
    ps_place_free(owners);
    free(counts);
    px_ps.ready = 1;
}

void comm_ps_teardown(void) {
    for (int i = 0; i < px_ps.n_ps; i++) ps_layout_free(&px_ps.ps[i]);
    free(px_ps.ps);
    free(px_ps.ps_of_var);
    px_ps.ps = NULL;
    px_ps.ps_of_var = NULL;
    px_ps.n_ps = 0;
    px_ps.ready = 0;
}
