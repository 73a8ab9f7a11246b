/* The masked weights of the running program (px_program.masked): each one's
 * mask, as the traversal of its live entries (spmm.h), the live values and
 * their optimizer state, packed in that order.
 *
 * The packed values are what the step reads (the sparse products) and what
 * the update writes (px_k_sparse_update); the variable's dense storage holds
 * the same values with zeros elsewhere whenever it is read: at setup, after
 * every step for the weights the step multiplies densely (dense_path), and
 * before --save or a checkpoint (px_sparse_write_back). */
#ifndef PX_SPARSE_MASKED_H
#define PX_SPARSE_MASKED_H

#include "px_program.h"
#include "px_train.h"
#include "spmm.h"

#include <stdint.h>

typedef struct px_masked {
    const px_masked_desc *d;
    const char *name;
    float *w; /* the variable's dense storage, d->out * d->in floats */
    int64_t numel;
    uint64_t name_hash;
    px_spm s;
    float *vals;                      /* nnz live values, traversal order */
    float *slots[PX_OPTIM_MAX_SLOTS]; /* their optimizer state */
} px_masked;

/* Chooses every masked weight's initial mask from its loaded values (or at
 * random, as compiled), zeroes the pruned entries of its storage and packs
 * the live ones, with zeroed optimizer state. After px_weights_load. */
void px_sparse_setup(const px_program_desc *p);
void px_sparse_teardown(void);
int64_t px_sparse_count(void);
px_masked *px_sparse_get(int64_t id); /* ends the run on a bad id */
/* The masked weight of variable var, or -1. */
int64_t px_sparse_of_var(int64_t var);
/* Writes every masked weight's live values into its dense storage. */
void px_sparse_write_back(void);
/* After a step's updates (and px_clip_finish): the dense storage of the
 * weights the step multiplies densely gets their new values. */
void px_sparse_step_done(void);

/* Gives m the mask chosen[numel] (storage order, 1: live): its traversal,
 * the values packed from the storage with every pruned entry of the storage
 * zeroed; an entry live before and after keeps its value and optimizer
 * state, one that becomes live or is in reset (may be NULL) starts from
 * zero. Fails (px_rt_fail) when the count is not d->nnz. */
void px_masked_set_mask(px_masked *m, const uint8_t *chosen, const uint8_t *reset, int n_slots);

/* The storage-order bitmap of m's live entries: bit k % 8 of bits[k / 8]
 * for entry k, (numel + 7) / 8 bytes. */
void px_masked_bits(const px_masked *m, unsigned char *bits);
/* Checkpoints read and write the masked weights' optimizer state through
 * px_train.slots, dense, like any replicated variable's: begin allocates
 * those arrays (fill 1: the packed state written into them; 0: zeros, to
 * be read into) and writes the live values into the storage; end frees
 * them. */
void px_sparse_dense_state_begin(int fill);
void px_sparse_dense_state_end(void);
/* After a checkpoint was read into the storage and the dense state: m's
 * mask from bits, its values and state packed from them. Fails naming the
 * weight when the mask does not have m's live count. */
void px_masked_restore(px_masked *m, const unsigned char *bits, int n_slots);

#endif
