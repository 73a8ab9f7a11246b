/* --stats FILE.json: throughput and per-rank traffic of a training run. */
#ifndef PX_TRAIN_STATS_H
#define PX_TRAIN_STATS_H

#include "px_train.h"

#include <stdint.h>

typedef struct px_run_summary {
    int64_t steps;         /* steps this run trained */
    int64_t warmup_steps;  /* of which left out of the rate and the traffic */
    int64_t counted_steps; /* steps - warmup_steps */
    double counted_seconds;
    int64_t global_batch, batch_per_rank;
    int64_t first_step, last_step; /* 1-based, of this run */
    /* The data: this rank's bytes read from the dataset's files, the bytes
     * of the files its inputs are in (all ranks together), the layout, and
     * the seconds from the start of the program to the first step. */
    int64_t data_bytes_read, data_bytes;
    int sharded;
    double startup_seconds;
    const px_comm_opts *comm; /* the synchronization mode (NULL: exact) */
} px_run_summary;

/* Global samples per second over the counted steps (0 when none). */
double px_samples_per_second(const px_run_summary *r);
/* Collective: gathers every rank's px_comm_get_stats to rank 0, which
 * writes path (atomically). */
void px_write_stats(const char *path, const px_run_summary *r);

#endif
