/* --checkpoint / --resume: the whole training state, written shard by shard.
 *
 * A checkpoint FILE is a small manifest at FILE plus pieces next to it,
 * FILE.<nonce>.<rank>: every rank holding rows (the parameter-server shards,
 * and rank 0 for the replicated variables) writes its own piece, in
 * parallel; rank 0 writes the manifest last (FILE.tmp, fsync, rename), which
 * makes the checkpoint whole. The nonce hashes the pieces' contents, so the
 * pieces of another checkpoint at FILE never match a manifest; after the
 * manifest is in place rank 0 removes the pieces it no longer lists. Copy a
 * checkpoint as the manifest and its pieces, into one folder.
 *
 * A piece holds segments: rows [row0, row0 + rows) of one variable, each row
 * its dim float32 weights followed by the same row of every optimizer slot.
 * A segment is hashed (px_hash64) in blocks of block_rows rows, so a reader
 * checks exactly the rows it reads.
 *
 * Manifest (version 4, or 5 under a relaxed synchronization mode;
 * little-endian, every integer 8 bytes):
 *   "PXCKPT\r\n"  version  model-identity  optimizer-kind  slots-per-variable
 *   variables  step  shuffle  shuffle-seed  epoch  samples  global-batch
 *   data-fingerprint  dropout-seed  shuffle-buffer  partitions
 *   [version 5: wire  error-feedback  sync-every  local-sgd-after  staleness]
 *   model-path (length, bytes)  nonce
 *   pieces; per piece: file name (length, bytes; in the manifest's folder), bytes
 *   per variable: name (length, bytes), rank, dims, rows, dim, segments;
 *     per segment: piece, row0, rows, offset in the piece, block_rows,
 *                  then one hash per block
 *   masked weights (version 4 and 5); per masked weight: variable, entries, then
 *     the storage-order bitmap of its live entries, (entries + 7) / 8 bytes
 *     (bit k % 8 of byte k / 8), padded with zeros to a multiple of 8 bytes
 *   checksum of everything above (px_hash64, 1 MiB pieces)  "PXCKEND\n"
 * Rows: dims[0] (1 for a scalar), dim: the other dims' product. The layout
 * does not depend on the number of ranks of the reader: --resume reads each
 * shard's rows by row range from whatever pieces hold them. The model
 * identity hashes the variables' names, dtypes and shapes and the optimizer
 * kind. */
#ifndef PX_CHECKPOINT_H
#define PX_CHECKPOINT_H

#include "out_paths.h"
#include "px_program.h"

#include <stdint.h>

#define PX_CKPT_VERSION 4         /* exact training */
#define PX_CKPT_VERSION_RELAXED 5 /* with the relaxed mode that wrote it */
/* Version 2 lacks shuffle-buffer (its runs read single folders: 0) and
 * partitions (0: none recorded); versions 2 and 3 lack the masked weights. */
#define PX_CKPT_VERSION_MIN 2

typedef struct px_ckpt_state {
    int64_t step; /* steps completed: the next step to run */
    int shuffle;
    uint64_t shuffle_seed;
    int64_t epoch; /* epoch of the next step (informational) */
    int64_t samples, global_batch;
    uint64_t data_fingerprint;
    uint64_t dropout_seed;
    int64_t shuffle_buffer; /* a sharded dataset's --shuffle-buffer (0: none) */
    int64_t partitions;     /* the automatic partition count in use (0: none) */
    /* The synchronization mode (px_comm_opts; all 0: exact, version 4):
     * wire format, error feedback, sync-every (0 or 1: every step),
     * local-sgd-after, staleness. */
    int64_t wire, error_feedback, sync_every, local_sgd_after, staleness;
} px_ckpt_state;

/* Whether st holds a relaxed mode (a version 5 manifest). */
int px_ckpt_relaxed(const px_ckpt_state *st);

uint64_t px_model_identity(const px_program_desc *p);
/* Collective: every rank writes its piece, rank 0 the manifest. A variable
 * holding NaN or infinity is never written: the run fails and the previous
 * checkpoint stays. */
void px_checkpoint_write(const char *path, const px_program_desc *p, const px_ckpt_state *st);
/* Adds the files of the checkpoint at path to l (out_paths.h): the
 * manifest, as "--resume", and every piece next to it. -1 when out of
 * memory. */
int px_checkpoint_input_files(const char *path, px_path_list *l);
/* Collective: every rank reads and validates the manifest, then reads its
 * own rows (its shard's partitions, and the replicated variables) from the
 * pieces. Fails with a clear message (px_rt_fail) on a damaged or
 * incomplete checkpoint or one written for another model. */
void px_checkpoint_read(const char *path, const px_program_desc *p, px_ckpt_state *st);
/* The run state alone (not collective, nothing loaded): what --resume
 * needs before the shards are set up. Fails as px_checkpoint_read does on
 * a damaged manifest. */
void px_checkpoint_peek(const char *path, px_ckpt_state *st);

#endif
