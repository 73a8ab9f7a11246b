/* --stats: each rank's measured peak RSS next to the bytes it is predicted
 * to hold, by kind, computed from what it holds at run time: its shard's
 * partitions (after placement and any automatic re-partitioning), its row
 * caches, its replicas, its frozen weights and the arena. The same kinds as
 * `parallaxc inspect --ranks N` predicts before compiling
 * (compiler/memory_model.h). */
#ifndef PX_MEMORY_STATS_H
#define PX_MEMORY_STATS_H

#include "px_program.h"

#include <stdint.h>
#include <stdio.h>

enum px_mem_field {
    PX_MEM_SHARD_ROWS = 0,
    PX_MEM_OPTIMIZER_STATE,
    PX_MEM_ROW_CACHE, /* inside the arena: not added again to the total */
    PX_MEM_DENSE_REPLICAS,
    PX_MEM_FROZEN_WEIGHTS,
    PX_MEM_FROZEN_IN_FILE, /* of the frozen weights: pages of the model's mapping */
    PX_MEM_ACTIVATIONS,
    PX_MEM_TOTAL,
    PX_MEM_PEAK_RSS, /* measured: getrusage's ru_maxrss of this process */
    PX_MEM_FIELDS
};

/* This rank's prediction and peak RSS so far. */
void px_memory_mine(const px_program_desc *p, uint64_t v[PX_MEM_FIELDS]);
/* Writes `, "peak_rss_bytes": N, "predicted_memory_bytes": {...}` for one
 * rank's fields. */
void px_memory_write_json(FILE *f, const uint64_t v[PX_MEM_FIELDS]);

#endif
