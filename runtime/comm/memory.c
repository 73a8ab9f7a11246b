/* What this rank holds for communication, for the memory prediction that
 * --stats writes next to the measured peak RSS (runtime/program/
 * memory_stats.c): the master rows and optimizer state of the partitions it
 * owns now (after any re-partitioning), the row caches its pulls filled in
 * one step, and the AllReduce buffers. */
#include "comm_internal.h"

/* Row-cache bytes of the pulls of the current step and the most of any step. */
static int64_t cache_step = -2, cache_now, cache_most;

void comm_note_row_cache(int64_t bytes) {
    int64_t step = __atomic_load_n(&px_comm.step, __ATOMIC_RELAXED);
    if (step != cache_step) {
        cache_step = step;
        cache_now = 0;
    }
    cache_now += bytes;
    if (cache_now > cache_most) cache_most = cache_now;
}

void px_comm_memory(px_comm_memory_use *m) {
    *m = (px_comm_memory_use){0};
    for (int i = 0; i < px_comm.n_ps; i++) {
        const ps_var *pv = &px_comm.ps[i];
        for (int64_t p = 0; p < pv->n_parts; p++)
            if (pv->parts[p].owner == px_comm.rank)
                m->shard_rows += (int64_t)sizeof(float) * pv->parts[p].rows * pv->dim;
    }
    m->optimizer_state = px_comm.n_slots * m->shard_rows;
    m->row_cache = cache_most;
    /* comm/allreduce.c: one buffer per bucket, and the ring's scratch of one
     * chunk of the largest bucket */
    int64_t max_chunk = 0;
    for (int64_t b = 0; b < px_comm.n_buckets; b++) {
        int64_t n = px_comm.buckets[b].n, chunk = (n + px_comm.size - 1) / px_comm.size;
        m->allreduce_buffers += px_comm.buckets[b].nbytes;
        if (chunk > max_chunk) max_chunk = chunk;
    }
    m->allreduce_buffers += (int64_t)sizeof(float) * max_chunk;
}
