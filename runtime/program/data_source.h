/* Where --data and --eval-data come from: a sharded dataset (DIR holds
 * manifest.txt: shard_reader.h, each rank reading only its lanes' shards)
 * or a single folder of one file per input (data.h, every rank mapping all
 * of it). One interface for the training loop, the validation and the
 * parameter-server prefetch. */
#ifndef PX_DATA_SOURCE_H
#define PX_DATA_SOURCE_H

#include "data.h"
#include "data_order.h"
#include "shard_reader.h"

#include <stddef.h>
#include <stdint.h>

typedef struct px_source_opts {
    int rank, ranks;
    /* --accumulate K: a step's batch is K micro-batches of every rank; this
     * rank's rows of micro-batch m are slot m * ranks + rank of it. */
    int64_t accumulate;
    int shuffle;
    uint64_t seed;
    /* Sharded datasets only: samples in the lanes' shuffle buffers; -1: not
     * given (PX_DEFAULT_SHUFFLE_BUFFER with shuffle, else 0). After
     * px_source_open, the value used (0 for a single folder). */
    int64_t shuffle_buffer;
} px_source_opts;

#define PX_DEFAULT_SHUFFLE_BUFFER 65536

typedef struct px_source {
    const char *dir;
    px_source_opts opts;
    px_shard_reader *shards; /* sharded; NULL: a single folder */
    px_dataset ds;           /* single folder */
    px_order order;          /* single folder, after px_source_start */
    int64_t samples;         /* -1: the model has no inputs */
    int64_t global_batch, steps_per_epoch;
} px_source;

/* Opens DIR and checks it against the program's inputs (a single folder:
 * every byte mapped and every index range-checked; a sharded dataset: its
 * manifest only). -1 with a message. */
int px_source_open(px_source *s, const px_program_desc *p, const char *dir, const px_source_opts *o,
                   char *err, size_t cap);
/* Whether DIR is a sharded dataset (holds manifest.txt). */
int px_source_is_sharded(const char *dir);
/* The sample order over `samples` samples (>= global_batch; the model
 * without inputs passes its own count). -1 when out of memory. */
int px_source_start(px_source *s, int64_t samples, int64_t global_batch);
/* What the ranks compare to be sure they read the same data: single
 * folders, input i's fingerprint (px_data_fingerprint); sharded datasets,
 * the manifest's hash for every i. */
uint64_t px_source_fingerprint(const px_source *s, int64_t i);
/* The file or folder input i is read from (messages). */
const char *px_source_path(const px_source *s, int64_t i);
int64_t px_source_epoch(const px_source *s, int64_t step);
/* This rank's rows of micro-batch m of step `step` (m 0 without
 * --accumulate) of input i into out, or of every input into its buffer
 * (px_source_fill). A damaged shard ends the job with a message
 * (px_rt_fail). */
void px_source_fill_input(px_source *s, const px_program_desc *p, int64_t step, int64_t m,
                          int64_t i, void *out);
void px_source_fill(px_source *s, const px_program_desc *p, int64_t step, int64_t m);
/* Bytes read from the dataset's files: a sharded dataset's reads so far; a
 * single folder's files whole (every byte is checksummed at start). */
int64_t px_source_bytes_read(const px_source *s);
/* Bytes of the files the program's inputs are in (a sharded dataset's
 * shards, all ranks' together). */
int64_t px_source_bytes_total(const px_source *s);
void px_source_close(px_source *s);

#endif
