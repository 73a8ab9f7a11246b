/* Private to the recurrent kernels (runtime/kernels/rnn*.c): the decoded
 * parameters of one LSTM / GRU / RNN call, activation codes, and the typed
 * implementations (rnn_cells.inc compiled once for float, once for double).
 * Not part of the ABI. */
#ifndef PX_RNN_INTERNAL_H
#define PX_RNN_INTERNAL_H

#include "px_kernel.h"

#include <stddef.h>
#include <stdint.h>

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
    int keep_gates; /* LSTM: leave the gates for LSTMGrad (rnn_stash.h) */
    const void *x, *w, *r, *b, *h0, *c0, *p;
    const int32_t *seq_lens;
    void *y, *y_h, *y_c;
} px_rnn_args;

void px_rnn_run_f32(const px_rnn_args *a);
void px_rnn_run_f64(const px_rnn_args *a);

/* A scratch buffer of at least `bytes` (64-byte aligned), kept and grown
 * across calls so the per-step loop never allocates; one per slot (0..3).
 * Contents are not preserved between calls. Ends the program when memory
 * runs out. */
#define PX_RNN_SCRATCH_SLOTS 4
void *px_rnn_scratch(int slot, size_t bytes);

#endif
