/* Writes a sharded dataset (runtime/program/dataset_manifest.h) row by row,
 * in bounded memory: one block of rows per input, the shard's checksum
 * table, buffered output files.
 *
 * DIR/.parallax-convert is created first and locked while the conversion
 * runs; the manifest is written last, atomically, after the shards are on
 * disk, and only then is the state file removed. A folder with the state
 * file and no manifest is an unfinished conversion: the runtime refuses it,
 * and the next conversion into it removes its shards and starts over. A
 * finished dataset is never replaced without --overwrite. */
#ifndef PX_DATASET_WRITER_H
#define PX_DATASET_WRITER_H

#include "dataset_manifest.h"

#include <stddef.h>
#include <stdint.h>

typedef struct px_dataset_writer px_dataset_writer;

typedef struct px_writer_opts {
    const char *dir;
    int64_t shard_rows; /* 0: about 64 MiB of samples per shard */
    int64_t block_rows; /* 0: about 64 KiB of samples per block */
    int overwrite;      /* replace a finished dataset in dir */
    int quiet;          /* no note about restarting an unfinished conversion */
    /* A file (name) the converter itself writes into dir, e.g. vocab.txt:
     * part of the dataset, removed with its shards when dir is taken over. */
    const char *own_file;
} px_writer_opts;

/* Creates (or takes over) dir for a dataset of these inputs. -1 with a
 * message: dir holds a finished dataset (without overwrite), files that are
 * not a dataset, or a conversion another process is running. */
int px_writer_open(px_dataset_writer **out, const px_writer_opts *o, const px_ds_input *inputs,
                   int n_inputs, char *err, size_t cap);
/* Where the next row's sample of input i goes (sample_bytes of it); fill
 * every input, then px_writer_commit. */
unsigned char *px_writer_row(px_dataset_writer *w, int i);
/* px_writer_row of every input into row[0..n_inputs): one call per row. */
void px_writer_rows(px_dataset_writer *w, unsigned char **row);
int px_writer_commit(px_dataset_writer *w, char *err, size_t cap);
/* Closes the last shard, syncs the files, writes the manifest. A dataset
 * of no rows is an error. Frees w. */
int px_writer_finish(px_dataset_writer *w, char *err, size_t cap);
/* Gives up: removes the shards written and the state file. Frees w. */
void px_writer_abort(px_dataset_writer *w);
int64_t px_writer_samples(const px_dataset_writer *w);
int64_t px_writer_shards(const px_dataset_writer *w);
int64_t px_writer_bytes(const px_dataset_writer *w); /* written so far */
const char *px_writer_dir(const px_dataset_writer *w);

#endif
