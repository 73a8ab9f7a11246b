/* The LSTM forward's activated gates and cells, kept for its gradient.
 *
 * LSTMGrad needs every step's gates (i, o, f, c~ after their activations)
 * and cells. Without them it rebuilds the forward: two GEMMs over all the
 * steps, the activations and the cell scan, a third of a small LSTM's
 * backward (lm1b). The forward kernel computes exactly these, so it leaves
 * them in a stash keyed by the call's buffers and sizes, and the gradient
 * kernel of the same call (same X, W, R, B, initial states and Y buffers:
 * buffers the gradient reads, so nothing writes them in between) takes
 * them instead. The gradient of the gates the forward actually computed is
 * also the exact one. Both kernels run on the rank's compute thread only.
 * Private to runtime/kernels/rnn*.c. */
#ifndef PX_RNN_STASH_H
#define PX_RNN_STASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct px_rnn_stash_key {
    const void *x, *w, *r, *b, *h0, *c0, *y;
    int64_t seq, batch, input, hidden;
    int layout, num_dirs, reverse, dtype;
} px_rnn_stash_key;

/* Space for a forward call's gates ([num_dirs][seq*batch rows, 4*hidden],
 * rows in X's row order) followed by its cells ([num_dirs][seq*batch,
 * hidden]), `bytes` in all; replaces the stash of any earlier call with
 * the same Y buffer (or the least recently used of a few). NULL when
 * memory runs out (the gradient then rebuilds). */
void *px_rnn_stash_begin(const px_rnn_stash_key *k, size_t bytes);

/* The stash the forward with this exact key left, or NULL. The caller may
 * overwrite it (it is consumed: a second take returns NULL). */
void *px_rnn_stash_take(const px_rnn_stash_key *k);

#endif
