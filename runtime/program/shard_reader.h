/* A rank's reader of a sharded dataset (dataset_manifest.h): it reads, with
 * pread, only the blocks of rows its lanes output (lane_order.h), checks each
 * block against its checksum and range-checks the index inputs before any
 * sample of it is used, and keeps in memory only a block per lane, the
 * lanes' shuffle buffers and two steps' rows. The shards a rank reads in an
 * epoch are opened (file sizes, .npy headers, checksum tables) when the
 * epoch begins. */
#ifndef PX_SHARD_READER_H
#define PX_SHARD_READER_H

#include "px_program.h"

#include <stddef.h>
#include <stdint.h>

typedef struct px_shard_reader px_shard_reader;

typedef struct px_shards_opts {
    const char *dir;
    int rank, ranks;
    /* --accumulate K (1 without): this rank reads micro-batch m's rows as
     * slot m * ranks + rank of a K * ranks times larger global batch. */
    int64_t accumulate;
    int shuffle;
    uint64_t seed;
    int64_t shuffle_buffer; /* samples over all lanes (0: shards permuted only) */
} px_shards_opts;

/* Reads and checks DIR's manifest against the program's inputs (every
 * input present with its dtype and sample shape). *out stays NULL and -1
 * comes back with a message on failure. A dataset of fewer samples than
 * one global batch opens (px_shards_samples says how many) but cannot be
 * read. */
int px_shards_open(px_shard_reader **out, const px_program_desc *p, const px_shards_opts *o,
                   char *err, size_t cap);
int64_t px_shards_samples(const px_shard_reader *r);
int64_t px_shards_count(const px_shard_reader *r);
/* The manifest's hash: the dataset's identity. */
uint64_t px_shards_identity(const px_shard_reader *r);
/* Bytes this reader has read from the dataset's files so far. */
int64_t px_shards_bytes_read(const px_shard_reader *r);
/* Bytes of the shards' files of the inputs the program reads. */
int64_t px_shards_bytes_total(const px_shard_reader *r);
/* Copies this rank's rows of micro-batch m (0 without --accumulate) of
 * input i (program order) of step `step` into out (the input's nbytes).
 * Steps are produced in order (a step, and the next one ahead of time);
 * asking for another one repositions the lanes (resuming replays the
 * shuffle buffers' draws without reading). -1 with a message naming the
 * shard file when a shard is missing, truncated or altered, or an index is
 * out of range. */
int px_shards_fill(px_shard_reader *r, int64_t step, int64_t m, int64_t input, void *out, char *err,
                   size_t cap);
void px_shards_close(px_shard_reader *r);

#endif
