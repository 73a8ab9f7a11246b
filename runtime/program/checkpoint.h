/* --checkpoint / --resume: the whole training state in one file.
 *
 * Format (version 1, little-endian, every integer 8 bytes):
 *   "PXCKPT\r\n"  version  model-identity  optimizer-kind  slots-per-variable
 *   variables  step  shuffle  shuffle-seed  epoch  samples  global-batch
 *   data-fingerprint  dropout-seed  model-path (length, bytes)
 *   per variable: name (length, bytes), rank, dims, float32 weights, then each
 *                 optimizer slot (float32, same shape)
 *   checksum of everything above (px_hash64, 1 MiB pieces)  "PXCKEND\n"
 * Arrays are full (gathered from the shards), so a checkpoint does not depend
 * on the number of ranks. The model identity hashes the variables' names,
 * dtypes and shapes and the optimizer kind. */
#ifndef PX_CHECKPOINT_H
#define PX_CHECKPOINT_H

#include "px_program.h"

#include <stdint.h>

#define PX_CKPT_VERSION 1

typedef struct px_ckpt_state {
    int64_t step; /* steps completed: the next step to run */
    int shuffle;
    uint64_t shuffle_seed;
    int64_t epoch; /* epoch of the next step (informational) */
    int64_t samples, global_batch;
    uint64_t data_fingerprint;
    uint64_t dropout_seed;
} px_ckpt_state;

uint64_t px_model_identity(const px_program_desc *p);
/* Collective: gathers every variable to rank 0, which writes path atomically
 * (path.tmp, fsync, rename). A variable holding NaN or infinity is never
 * written: the run fails and the previous file stays. */
void px_checkpoint_write(const char *path, const px_program_desc *p, const px_ckpt_state *st);
/* Collective: every rank reads and validates path, then loads the variables
 * and optimizer state. Fails with a clear message (px_rt_fail) on a damaged
 * file or one written for another model. */
void px_checkpoint_read(const char *path, const px_program_desc *p, px_ckpt_state *st);

#endif
