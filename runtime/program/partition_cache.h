/* --partitions-cache FILE: the automatic partition count a measured search
 * (--partitions search) chose, kept for later runs of the same program on
 * the same ranks, which then start at that count and move no rows. Text:
 *   parallax-partitions 1
 *   key <16 hex digits: the model, ranks, per-rank batch, --ranks-per-node>
 *   partitions P */
#ifndef PX_PARTITION_CACHE_H
#define PX_PARTITION_CACHE_H

#include "px_program.h"

#include <stddef.h>
#include <stdint.h>

/* The key of a run: what the measured step times depend on. */
uint64_t px_partition_cache_key(const px_program_desc *p, int ranks, int ranks_per_node);
/* 1 and *parts when path holds a count for key; 0 when path does not exist
 * or was measured for another run (a note in err); -1 when it is not a
 * partition cache (message in err). */
int px_partition_cache_read(const char *path, uint64_t key, int64_t *parts, char *err, size_t cap);
/* Writes path atomically; -1 with a message. */
int px_partition_cache_write(const char *path, uint64_t key, int64_t parts, char *err, size_t cap);

#endif
