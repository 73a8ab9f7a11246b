/* Kernels of the rnn family: LSTM, GRU and RNN (see px_kernel.h for the
 * ABI). This file decodes the parameters; rnn_cells.inc (through rnn_f32.c
 * and rnn_f64.c) computes. */
#include "rnn_internal.h"

#include <stdlib.h>
#include <string.h>

enum { N_BUFS = 11 }; /* X W R B sequence_lens initial_h initial_c P Y Y_h Y_c */

/* Shared by the three kernels; cell is enum px_rnn_cell. The layout of buf
 * and p is documented at px_k_lstm. */
static void run_cell(int cell, void *const *buf, const int64_t *p) {
    static const char *const names[] = {"", "RNN", "", "GRU", "LSTM"};
    px_kcur c = {p};
    px_kt t[N_BUFS];
    for (int i = 0; i < N_BUFS; i++) t[i] = px_kp_tensor(&c);
    px_rnn_args a;
    memset(&a, 0, sizeof a);
    a.cell = cell;
    a.dtype = t[0].dtype;
    int64_t direction = px_kp_i64(&c);
    a.layout = (int)px_kp_i64(&c);
    a.hidden = px_kp_i64(&c);
    a.clip = px_kp_f64(&c);
    a.variant = (int)px_kp_i64(&c);
    a.num_dirs = direction == 2 ? 2 : 1;
    a.reverse = direction == 1;
    a.n_acts = cell == PX_RNN_CELL_LSTM ? 3 : cell == PX_RNN_CELL_GRU ? 2 : 1;
    for (int d = 0; d < a.num_dirs; d++)
        for (int k = 0; k < a.n_acts; k++) {
            a.act[d][k].kind = (int)px_kp_i64(&c);
            a.act[d][k].alpha = px_kp_f64(&c);
            a.act[d][k].beta = px_kp_f64(&c);
        }
    a.keep_gates = (int)px_kp_i64(&c);
    a.seq = t[0].dims[a.layout ? 1 : 0];
    a.batch = t[0].dims[a.layout ? 0 : 1];
    a.input = t[0].dims[2];
    a.x = buf[0];
    a.w = buf[1];
    a.r = buf[2];
    a.b = buf[3];
    a.seq_lens = buf[4];
    a.h0 = buf[5];
    a.c0 = buf[6];
    a.p = buf[7];
    a.y = buf[8];
    a.y_h = buf[9];
    a.y_c = buf[10];
    if (a.dtype == 1)
        px_rnn_run_f32(&a);
    else if (a.dtype == 11)
        px_rnn_run_f64(&a);
    else
        px_rt_fail("%s kernel: unsupported dtype %d", names[cell], a.dtype);
}

/* ONNX LSTM (opsets 1-14, layout 0 and 1).
 * buf: X, W, R, B, sequence_lens, initial_h, initial_c, P, Y, Y_h, Y_c
 *      (NULL when absent; all float or all double, sequence_lens int32).
 * p:   tensor descriptors of the same 11 (absent: dtype 0, rank 0),
 *      direction (0 forward, 1 reverse, 2 bidirectional), layout (0/1),
 *      hidden_size, clip (f64; 0: none), variant (LSTM: input_forget, GRU:
 *      linear_before_reset, RNN: 0), then for each direction its activations
 *      (LSTM f g h, GRU f g, RNN f), each as: code (enum px_rnn_act_kind),
 *      alpha (f64), beta (f64), then keep_gates (1: an LSTMGrad of this
 *      call follows; the kernel leaves its gates in stash.h's stash).
 * px_k_gru and px_k_rnn take the same layout, with NULL / absent for
 * initial_c, P and Y_c. */
void px_k_lstm(void *const *buf, const int64_t *p) {
    run_cell(PX_RNN_CELL_LSTM, buf, p);
}

/* ONNX GRU: buf and p as px_k_lstm. */
void px_k_gru(void *const *buf, const int64_t *p) {
    run_cell(PX_RNN_CELL_GRU, buf, p);
}

/* ONNX RNN: buf and p as px_k_lstm. */
void px_k_rnn(void *const *buf, const int64_t *p) {
    run_cell(PX_RNN_CELL_RNN, buf, p);
}
