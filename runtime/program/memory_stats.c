#include "memory_stats.h"

#include "px_train.h"
#include "px_weights.h"
#include "tp_slabs.h"

#include <sys/resource.h>

void px_memory_mine(const px_program_desc *p, uint64_t v[PX_MEM_FIELDS]) {
    for (int i = 0; i < PX_MEM_FIELDS; i++) v[i] = 0;
    px_comm_memory_use c;
    px_comm_memory(&c);
    int64_t n_slots = p->optim ? px_optim_n_slots(p->optim->kind) : 0;
    /* Replicas (program/weights.c: variables with local storage) and the
     * optimizer state of the variables off the parameter servers
     * (program/train.c alloc_slots), plus the AllReduce buffers. */
    int64_t dense = c.allreduce_buffers;
    for (int64_t i = 0; i < p->n_vars; i++) {
        const px_var_desc *d = &p->vars[i];
        if (!px_var_held(p, i)) continue; /* --pp: another stage's */
        if (d->local_storage) dense += d->nbytes;
        if (d->sync != PX_SYNC_PS) dense += n_slots * d->nbytes;
    }
    /* masked weights keep their state packed, with their live values */
    for (int64_t i = 0; i < p->n_masked; i++) {
        const px_masked_desc *m = &p->masked[i];
        dense +=
            px_masked_bytes(m->out, m->in, m->nnz, (int)n_slots) - n_slots * 4 * m->out * m->in;
    }
    int64_t in_file = 0, frozen = px_weights_frozen_bytes(&in_file);
    v[PX_MEM_SHARD_ROWS] = (uint64_t)c.shard_rows;
    v[PX_MEM_OPTIMIZER_STATE] = (uint64_t)c.optimizer_state;
    v[PX_MEM_ROW_CACHE] = (uint64_t)c.row_cache;
    v[PX_MEM_DENSE_REPLICAS] = (uint64_t)dense;
    v[PX_MEM_FROZEN_WEIGHTS] = (uint64_t)frozen;
    v[PX_MEM_FROZEN_IN_FILE] = (uint64_t)in_file;
    int64_t arena = px_arena_bytes_held(p);
    v[PX_MEM_ACTIVATIONS] = (uint64_t)arena;
    v[PX_MEM_TOTAL] = (uint64_t)(c.shard_rows + c.optimizer_state + dense + frozen + arena);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) v[PX_MEM_PEAK_RSS] = (uint64_t)ru.ru_maxrss * 1024;
}

void px_memory_write_json(FILE *f, const uint64_t v[PX_MEM_FIELDS]) {
    static const char *const names[PX_MEM_TOTAL + 1] = {
        "shard_rows",     "optimizer_state", "row_cache",   "dense_replicas",
        "frozen_weights", "frozen_in_file",  "activations", "total"};
    fprintf(f, ", \"peak_rss_bytes\": %llu, \"predicted_memory_bytes\": {",
            (unsigned long long)v[PX_MEM_PEAK_RSS]);
    for (int i = 0; i <= PX_MEM_TOTAL; i++)
        fprintf(f, "%s\"%s\": %llu", i ? ", " : "", names[i], (unsigned long long)v[i]);
    fputc('}', f);
}
