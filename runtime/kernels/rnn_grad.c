/* Backward kernels of the recurrent ops: ai.parallax LSTMGrad, GRUGrad and
 * RNNGrad (made by passes/grad_rnn.c, lowered in
 * compiler/codegen/lower_rnn_grad.c). This file decodes the parameters;
 * rnn_grad_cells.inc, included once for float and once for double,
 * computes (its header comment gives the plan).
 *
 * Without -fno-trapping-math GCC keeps the selects of px_rnn_expf and
 * px_rnn_tanhf as branches and the activation loops stay scalar (see
 * rnn_f32.c); nothing here reads the floating-point exception flags. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "rnn_internal.h"
#include "rnn_math.h"
#include "stash.h"

#include "gemm_split.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One call, decoded. Pointers follow the kernel's buf order; NULL: absent
 * (for outputs: not wanted, its products are skipped). */
typedef struct px_rnn_grad_args {
    int cell;    /* enum px_rnn_cell */
    int layout;  /* 0: [seq, batch, ...], 1: [batch, seq, ...] */
    int reverse; /* direction "reverse" (only with num_dirs 1) */
    int num_dirs;
    int variant; /* GRU linear_before_reset */
    int act[2];  /* RNN: enum px_rnn_act_kind per direction */
    int64_t seq, batch, input, hidden;
    const void *x, *w, *r, *b, *h0, *c0, *y, *dy, *dy_h, *dy_c;
    const int32_t *seq_lens;
    void *dx, *dw, *dr, *db, *dh0, *dc0;
} px_rnn_grad_args;

/* Scratch of at least `bytes` (64-byte aligned) kept and grown across calls,
 * so training steps after the first never allocate. */
static void *px_rnn_grad_scratch(size_t bytes) {
    static void *p;
    static size_t cap;
    if (bytes == 0) bytes = 1;
    if (cap < bytes) {
        free(p);
        size_t want = (bytes + 63) & ~(size_t)63; /* aligned_alloc needs a multiple of 64 */
        p = aligned_alloc(64, want);
        if (!p) px_rt_fail("out of memory: recurrent gradient scratch of %zu bytes", bytes);
        cap = want;
    }
    return p;
}

static inline double sigmoid_f64(double v) {
    return 1.0 / (1.0 + exp(-v));
}

#define RT float
#define RT_FN(name) name##_f32
#define RT_GEMM px_sgemm
#define RT_TANH px_rnn_tanhf
#define RT_SIGMOID px_rnn_sigmoidf
/* AVX2 clones of the elementwise loops, picked at load time (see rnn_f32.c) */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define RT_HOT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define RT_HOT_CLONES
#endif
#include "rnn_grad_cells.inc"
#undef RT
#undef RT_FN
#undef RT_GEMM
#undef RT_TANH
#undef RT_SIGMOID
#undef RT_HOT_CLONES

#define RT double
#define RT_FN(name) name##_f64
#define RT_GEMM px_dgemm
#define RT_TANH tanh
#define RT_SIGMOID sigmoid_f64
#define RT_HOT_CLONES
#include "rnn_grad_cells.inc"

static void run_grad(int cell, void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_rnn_grad_args a;
    memset(&a, 0, sizeof a);
    a.cell = cell;
    int dtype = (int)px_kp_i64(&c);
    int64_t direction = px_kp_i64(&c);
    a.layout = (int)px_kp_i64(&c);
    a.seq = px_kp_i64(&c);
    a.batch = px_kp_i64(&c);
    a.input = px_kp_i64(&c);
    a.hidden = px_kp_i64(&c);
    a.variant = (int)px_kp_i64(&c);
    a.num_dirs = direction == 2 ? 2 : 1;
    a.reverse = direction == 1;
    for (int d = 0; d < a.num_dirs; d++) a.act[d] = (int)px_kp_i64(&c);
    const void **in[10] = {&a.x, &a.w, &a.r, &a.b, &a.h0, &a.c0, &a.y, &a.dy, &a.dy_h, &a.dy_c};
    void **out[6] = {&a.dx, &a.dw, &a.dr, &a.db, &a.dh0, &a.dc0};
    for (int i = 0; i < 10; i++) *in[i] = buf[i];
    a.seq_lens = buf[10];
    for (int i = 0; i < 6; i++) *out[i] = buf[11 + i];
    if (dtype == 1)
        px_rnn_grad_run_f32(&a);
    else if (dtype == 11)
        px_rnn_grad_run_f64(&a);
    else
        px_rt_fail("recurrent gradient kernel: unsupported dtype %d", dtype);
}

/* Gradient of ONNX LSTM (default activations, no peepholes, clip or
 * input_forget).
 * buf: X, W, R, B, initial_h, initial_c, Y, dY, dY_h, dY_c, sequence_lens
 *      (inputs; NULL when absent; Y, when given, is the forward's output
 *      and spares rerunning the recurrence; sequence_lens int32 [batch]),
 *      dX, dW, dR, dB, dinitial_h, dinitial_c (outputs;
 *      NULL when not wanted). Shapes as the forward op's (dB always
 *      [num_directions, 8*hidden]); all float or all double.
 * p:   dtype (1 float, 11 double), direction (0 forward, 1 reverse,
 *      2 bidirectional), layout, seq_length, batch_size, input_size,
 *      hidden_size, variant (GRU: linear_before_reset; else 0), then per
 *      direction the activation code (RNN: enum px_rnn_act_kind, Tanh,
 *      Sigmoid or Relu; LSTM and GRU: not read).
 * px_k_gru_grad and px_k_rnn_grad take the same layout, with NULL for
 * initial_c, dY_c and dinitial_c. */
void px_k_lstm_grad(void *const *buf, const int64_t *p) {
    run_grad(PX_RNN_CELL_LSTM, buf, p);
}

/* Gradient of ONNX GRU: buf and p as px_k_lstm_grad. */
void px_k_gru_grad(void *const *buf, const int64_t *p) {
    run_grad(PX_RNN_CELL_GRU, buf, p);
}

/* Gradient of ONNX RNN: buf and p as px_k_lstm_grad. */
void px_k_rnn_grad(void *const *buf, const int64_t *p) {
    run_grad(PX_RNN_CELL_RNN, buf, p);
}
