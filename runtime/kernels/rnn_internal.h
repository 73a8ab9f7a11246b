/* Private to the recurrent kernels (runtime/kernels/rnn*.c): the decoded
 * parameters of one LSTM / GRU / RNN call, activation codes, and the typed
 * implementations (rnn_cells.inc compiled once for float, once for double).
 * Not part of the ABI. */
#ifndef PX_RNN_INTERNAL_H
#define PX_RNN_INTERNAL_H

#include "px_kernel.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Activation codes. compiler/codegen/lower_rnn.c writes the same numbers. */
enum px_rnn_act_kind {
    PX_RNN_SIGMOID = 0,
    PX_RNN_TANH = 1,
    PX_RNN_RELU = 2,
    PX_RNN_AFFINE = 3,
    PX_RNN_LEAKY_RELU = 4,
    PX_RNN_THRESHOLDED_RELU = 5,
    PX_RNN_SCALED_TANH = 6,
    PX_RNN_HARD_SIGMOID = 7,
    PX_RNN_ELU = 8,
    PX_RNN_SOFTSIGN = 9,
    PX_RNN_SOFTPLUS = 10,
    PX_RNN_ACT_COUNT
};

/* Which cell: the number of gates is also the multiple of hidden_size in W. */
enum px_rnn_cell { PX_RNN_CELL_RNN = 1, PX_RNN_CELL_GRU = 3, PX_RNN_CELL_LSTM = 4 };

typedef struct px_rnn_act {
    int kind;
    double alpha, beta;
} px_rnn_act;

/* Most activations a cell takes per direction (LSTM: f, g, h). */
#define PX_RNN_MAX_ACTS 3

/* One call, decoded. Pointers follow the kernel's buf order; NULL = absent. */
typedef struct px_rnn_args {
    int cell;    /* enum px_rnn_cell */
    int dtype;   /* 1 float, 11 double */
    int layout;  /* 0: [seq, batch, ...], 1: [batch, seq, ...] */
    int reverse; /* direction "reverse" (only with num_dirs 1) */
    int num_dirs;
    int64_t seq, batch, input, hidden;
    double clip; /* > 0: pre-activations clamped to [-clip, clip]; 0: none */
    int variant; /* LSTM input_forget, GRU linear_before_reset */
    int n_acts;  /* per direction */
    px_rnn_act act[2][PX_RNN_MAX_ACTS];
    int keep_gates; /* LSTM: leave the gates for LSTMGrad (stash.h) */
    const void *x, *w, *r, *b, *h0, *c0, *p;
    const int32_t *seq_lens;
    void *y, *y_h, *y_c;
} px_rnn_args;

/* The stash key (stash.h) of an LSTM call's gates: its buffers and sizes.
 * Fill with px_rnn_stash_key_of so the padding bytes are zero. */
typedef struct px_rnn_stash_key {
    const void *x, *w, *r, *b, *h0, *c0, *y;
    int64_t seq, batch, input, hidden;
    int64_t layout, num_dirs, reverse, dtype;
} px_rnn_stash_key;

static inline px_rnn_stash_key px_rnn_stash_key_of(const void *x, const void *w, const void *r,
                                                   const void *b, const void *h0, const void *c0,
                                                   const void *y, int64_t seq, int64_t batch,
                                                   int64_t input, int64_t hidden, int64_t layout,
                                                   int64_t num_dirs, int64_t reverse,
                                                   int64_t dtype) {
    px_rnn_stash_key k;
    memset(&k, 0, sizeof k);
    k.x = x;
    k.w = w;
    k.r = r;
    k.b = b;
    k.h0 = h0;
    k.c0 = c0;
    k.y = y;
    k.seq = seq;
    k.batch = batch;
    k.input = input;
    k.hidden = hidden;
    k.layout = layout;
    k.num_dirs = num_dirs;
    k.reverse = reverse;
    k.dtype = dtype;
    return k;
}

void px_rnn_run_f32(const px_rnn_args *a);
void px_rnn_run_f64(const px_rnn_args *a);

/* A scratch buffer of at least `bytes` (64-byte aligned), kept and grown
 * across calls so the per-step loop never allocates; one per slot (0..3).
 * Contents are not preserved between calls. Ends the program when memory
 * runs out. */
#define PX_RNN_SCRATCH_SLOTS 4
void *px_rnn_scratch(int slot, size_t bytes);

#endif
