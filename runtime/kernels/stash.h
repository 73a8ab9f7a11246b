/* What a forward kernel computed, kept for the gradient kernel that would
 * compute it again.
 *
 * - LSTM (rnn_cells.inc) keeps every step's activated gates (i, o, f, c~)
 *   and cells for LSTMGrad, which otherwise rebuilds them: two GEMMs over
 *   all the steps, the activations and the cell scan, a third of a small
 *   LSTM's backward (lm1b).
 * - Conv (nn_conv.c) keeps its im2col columns for ConvGradWeight, which
 *   otherwise builds the same columns again.
 * The lowering asks the forward to keep them only when that gradient reads
 * its input. A stash is keyed by the call's buffers and sizes (all bytes
 * of a zero-initialized key struct); the gradient of the same call names
 * the same buffers, which it reads, so nothing writes them in between, and
 * a key that does not match (another call, or none kept) makes the
 * gradient compute them itself: the same numbers. Only the rank's compute
 * thread calls these (the forward may fill the space from pool threads).
 * Private to runtime/kernels. */
#ifndef PX_STASH_H
#define PX_STASH_H

#include <stddef.h>

/* At most this many bytes per stash, and in all: a call whose stash would
 * pass either is not kept (its gradient computes them again). */
#define PX_STASH_MAX_BYTES ((size_t)64 << 20)
#define PX_STASH_TOTAL_BYTES ((size_t)256 << 20)

/* Space of `bytes` for the call whose key is key[0..key_len) (at most 256
 * bytes); it replaces the stash of an earlier call with the same `owner`
 * (the buffer the call writes), else the least recently used of a few
 * slots. NULL when too large, over the total or out of memory (nothing
 * is kept). */
void *px_stash_begin(const void *key, size_t key_len, const void *owner, size_t bytes);

/* The stash kept under this exact key, or NULL. The caller may overwrite
 * it: it is consumed (a second take returns NULL). */
void *px_stash_take(const void *key, size_t key_len);

#endif
