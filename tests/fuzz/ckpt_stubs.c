/* Single-process stand-ins for the MPI side of checkpoint reading and
 * writing, for the checkpoint fuzz harnesses only: rank 0 of 1, every
 * collective is the identity, and a parameter-server variable is split into
 * its `partitions` row ranges (all owned here) over storage of this file, as
 * the runtime's comm layer lays out a table it holds whole (the reader reads
 * by row range, so any split must load a checkpoint of any writer). */
#include "ckpt_stubs.h"

#include "sparse/masked.h"

#include <stdlib.h>
#include <string.h>

static const px_program_desc *program;
static float ps_store[PX_FUZZ_MAX_VARS][PX_FUZZ_MAX_ROWS];
static float ps_slots[PX_FUZZ_MAX_VARS][PX_OPTIM_MAX_SLOTS][PX_FUZZ_MAX_ROWS];

void px_fuzz_stub_program(const px_program_desc *p) {
    program = p;
    /* The harness's program must fit the stub storage. */
    if (p->n_vars > PX_FUZZ_MAX_VARS) abort();
    for (int64_t v = 0; v < p->n_vars; v++)
        if (p->vars[v].sync == PX_SYNC_PS && p->vars[v].nbytes > 4 * PX_FUZZ_MAX_ROWS) abort();
}

int px_comm_rank(void) {
    return 0;
}

int px_comm_size(void) {
    return 1;
}

int px_comm_var_is_ps(int64_t var) {
    return program->vars[var].sync == PX_SYNC_PS;
}

int64_t px_comm_var_n_parts(int64_t var) {
    return program->vars[var].partitions > 0 ? program->vars[var].partitions : 1;
}

/* Partition p of n: rows [p * rows / n, (p + 1) * rows / n), one column. */
void px_comm_var_part(int64_t var, int64_t p, px_row_block *out) {
    const px_var_desc *d = &program->vars[var];
    int64_t rows = d->rank > 0 ? d->dims[0] : 1, n = px_comm_var_n_parts(var);
    int64_t dim = d->nbytes / 4 / rows;
    memset(out, 0, sizeof *out);
    out->row0 = p * rows / n;
    out->rows = (p + 1) * rows / n - out->row0;
    out->dim = dim;
    out->owner = 0;
    out->w = ps_store[var] + out->row0 * dim;
    for (int k = 0; k < PX_OPTIM_MAX_SLOTS; k++) out->slots[k] = ps_slots[var][k] + out->row0 * dim;
}

/* One rank: a tensor-parallel group of one (the harnesses' programs have
 * no --tp). */
void px_comm_tp_gather(const float *mine, float *all, int64_t n, int tp) {
    if (tp != 1) abort();
    memmove(all, mine, sizeof(float) * (size_t)n);
}

/* One rank, no --pp: stage 0 holds every variable, and nothing is sent
 * to rank 0 from another stage. */
int64_t px_pp_stage;

int px_var_held(const px_program_desc *p, int64_t v) {
    (void)p;
    (void)v;
    return 1;
}

void px_comm_pp_to_first(float *buf, int64_t n, int stage) {
    (void)buf;
    (void)n;
    if (stage != 0) abort();
}

int64_t px_comm_min_i64(int64_t v) {
    return v;
}

uint64_t px_comm_bcast_u64(uint64_t v) {
    return v;
}

uint64_t *px_comm_gather_u64(const uint64_t *mine, int64_t n, int64_t *counts) {
    uint64_t *all = malloc(sizeof *all * (size_t)(n > 0 ? n : 1));
    if (!all) abort();
    if (n > 0) memcpy(all, mine, sizeof *all * (size_t)n);
    counts[0] = n;
    return all;
}

/* Linked in with the optimizer (clipping), never called by the reader. */
void px_comm_allgather_doubles(const double *mine, int n, double *all) {
    if (n > 0) memcpy(all, mine, sizeof *all * (size_t)n);
}

/* Masked weights: the harnesses' programs have none (n_masked 0), so the
 * dense-state bracket has nothing to unpack and the rest is never called. */
void px_sparse_dense_state_begin(int fill) {
    (void)fill;
}

void px_sparse_dense_state_end(void) {}

px_masked *px_sparse_get(int64_t id) {
    (void)id;
    abort();
}

void px_masked_bits(const px_masked *m, unsigned char *bits) {
    (void)m;
    (void)bits;
    abort();
}

void px_masked_restore(px_masked *m, const unsigned char *bits, int n_slots) {
    (void)m;
    (void)bits;
    (void)n_slots;
    abort();
}
