/* The manifest of a sharded dataset (docs/data.md): DIR/manifest.txt lists
 * the inputs (name, dtype, per-sample shape) and the shards, each a folder
 * DIR/<shard>/ holding one <input>.npy per input (its rows are the shard's
 * samples) and checksums.npy, a uint64 [blocks, inputs] array: the
 * px_block_checksum of every block of block-rows rows of every input's
 * data. The manifest is written last, atomically, so a dataset without one
 * is unfinished. Text, one record per line:
 *
 *   parallax-dataset 1
 *   samples 1000
 *   block-rows 256
 *   input dense float32 [13]
 *   input label float32 []
 *   shard shard-00000 600 <checksums hash> <bytes of dense.npy> <bytes of label.npy>
 *   shard shard-00001 400 ...
 *   checksum <hash>
 *
 * Hashes are 16 lower-case hex digits: the shard's is px_hash64 of its
 * checksums.npy file, the last line's is px_hash64 of every byte before it
 * (and identifies the dataset: the ranks compare it instead of the data). The
 * runtime reads manifests and the converters (tools/data) write them. */
#ifndef PX_DATASET_MANIFEST_H
#define PX_DATASET_MANIFEST_H

#include "npy_header.h"

#include <stddef.h>
#include <stdint.h>

#define PX_MANIFEST_FILE "manifest.txt"
#define PX_CHECKSUMS_FILE "checksums.npy"
/* A converter writes this file into DIR first and removes it after the
 * manifest is in place: a folder holding it is an unfinished conversion. */
#define PX_CONVERT_STATE_FILE ".parallax-convert"
#define PX_MANIFEST_NAME_MAX 255

typedef struct px_ds_input {
    char name[PX_MANIFEST_NAME_MAX + 1];
    int dtype; /* ONNX TensorProto.DataType */
    int rank;  /* of one sample */
    int64_t dims[PX_NPY_MAX_RANK - 1];
    int64_t sample_bytes;
} px_ds_input;

typedef struct px_ds_shard {
    char name[PX_MANIFEST_NAME_MAX + 1]; /* its folder in DIR */
    int64_t rows;
    int64_t first;           /* samples in the shards before it (manifest order) */
    uint64_t checksums_hash; /* px_hash64 of <shard>/checksums.npy */
    int64_t *file_bytes;     /* per input: the size of <shard>/<input>.npy */
} px_ds_shard;

typedef struct px_manifest {
    int64_t samples, block_rows;
    int n_inputs;
    px_ds_input *inputs;
    int64_t n_shards;
    px_ds_shard *shards;
    uint64_t hash;      /* the checksum line's: the dataset's identity */
    int64_t text_bytes; /* of the manifest's text (px_manifest_parse) */
} px_manifest;

/* Reads DIR/manifest.txt; -1 with a message naming the file and line. */
int px_manifest_read(const char *dir, px_manifest *m, char *err, size_t cap);
/* Parses a manifest's text (path names it in messages). */
int px_manifest_parse(const char *text, size_t len, const char *path, px_manifest *m, char *err,
                      size_t cap);
/* Formats m (its hash is set) into a malloc'd text; NULL when out of memory. */
char *px_manifest_format(px_manifest *m, size_t *len);
void px_manifest_free(px_manifest *m);
/* Bytes of the manifest's text (read or formatted). */
int64_t px_manifest_bytes(const px_manifest *m);
/* Index of the input called name, -1 if none. */
int px_manifest_input(const px_manifest *m, const char *name);
/* Whether s may name a shard folder: 1 to 255 bytes of [A-Za-z0-9._-], not
 * "." or "..". */
int px_manifest_shard_name_ok(const char *s);
/* Whether s may name an input: 1 to 255 printable ASCII bytes, no spaces
 * (its file is <name>.npy with '/' and ':' written '_', as in a
 * single-folder dataset: px_data_file_name). */
int px_manifest_input_name_ok(const char *s);

/* DIR/<name>.npy (or .pb) for input name, with '/' and ':' written '_'. */
void px_data_file_name(char *out, size_t cap, const char *dir, const char *name, const char *ext);

/* Checksum of a block of rows of one input (the bytes of the rows). */
uint64_t px_block_checksum(const void *data, size_t n);
/* Blocks of a shard of `rows` rows. */
int64_t px_shard_blocks(int64_t rows, int64_t block_rows);

#endif
