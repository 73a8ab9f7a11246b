/* Gradient rules of LSTM, GRU and RNN (passes/grad_rnn.c and the backward
 * kernels of runtime/kernels/rnn_grad.c): a float64 graph whose loss is
 * sum(R_k * out_k) over the chosen outputs (Y, Y_h, Y_c) with random
 * constants R_k, differentiated by the pass, lowered and run in-process;
 * every coordinate of every input's gradient (X, W, R, B, initial_h,
 * initial_c, all trainable here) is compared with a central finite
 * difference of the loss. Configurations: with and without bias and initial
 * states, seq_len 1 and > 1, batch 1 and 3, hidden 2..5, outputs Y only /
 * Y_h only / several, every direction, both layouts, sequence_lens
 * shorter than seq_len (one entry empty), and forward nodes
 * without a Y output (the kernel then reruns the recurrence instead of
 * reading the states from Y). With Y, LSTMGrad takes the gates and cells
 * the forward kernel kept (runtime/kernels/stash.h), so these checks
 * hold that path; without Y it rebuilds them. float32 gradients are compared with the
 * float64 ones of the same numbers. The lstm_lm example (PyTorch nn.LSTM,
 * opset 17) differentiates end to end after folding. */
#include "autodiff.h"
#include "gradcheck.h"
#include "interp.h"
#include "onnx_io.h"
#include "passes.h"
#include "plan.h"
#include "shape_infer.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- graph building ---------- */

/* A trainable initializer with values in [lo, hi). */
static px_value *param(tg *t, px_dtype dt, const char *name, int rank, const int64_t *dims,
                       double lo, double hi) {
    px_shape s = px_shape_make(rank, dims);
    px_value *v = px_graph_add_value(t->g, name, dt, &s, &t->d);
    cr_assert_not_null(v);
    px_graph_add_initializer(t->g, v, tg_rand_tensor(dt, rank, dims, lo, hi));
    return v;
}

/* sum(R * y) with R random */
static px_value *weighted_sum(tg *t, px_value *y) {
    px_value *r = px_graph_add_constant(
        t->g, "R", tg_rand_tensor(y->dtype, y->shape.rank, y->shape.dims, -1, 1));
    px_value *m = tg_op2(t, "Mul", y, r);
    px_node *s = tg_node(t, "ReduceSum", 1, &m, 1);
    px_node_set_attr_int(s, "keepdims", 0);
    return tg_out(t, s);
}

/* ---------- recurrent cases ---------- */

typedef struct rnn_case {
    const char *op;        /* LSTM, GRU, RNN */
    const char *direction; /* NULL: forward */
    int64_t layout, seq, batch, input, hidden;
    int bias, h0, c0;   /* which optional inputs exist */
    int use[3];         /* outputs Y, Y_h, Y_c that feed the loss */
    int no_y;           /* the node has no Y output at all */
    int64_t lbr;        /* GRU linear_before_reset */
    const char *act[2]; /* RNN activations per direction (NULL: default) */
    int lens;           /* 1: sequence_lens from len (batch entries) */
    int32_t len[4];
} rnn_case;

static int gates_of(const char *op) {
    return !strcmp(op, "LSTM") ? 4 : !strcmp(op, "GRU") ? 3 : 1;
}

/* Builds the case in dtype dt (same random numbers for a given seed state). */
static tg *build(const rnn_case *c, px_dtype dt) {
    tg *t = tg_new();
    int lstm = gates_of(c->op) == 4;
    const char *dir = c->direction ? c->direction : "forward";
    int64_t nd = !strcmp(dir, "bidirectional") ? 2 : 1, H = c->hidden;
    int64_t gh = gates_of(c->op) * H;
    int64_t xd[3] = {c->seq, c->batch, c->input}, st[3] = {nd, c->batch, H};
    if (c->layout) {
        xd[0] = c->batch;
        xd[1] = c->seq;
        st[0] = c->batch;
        st[1] = nd;
    }
    px_value *in[8] = {0};
    in[0] = param(t, dt, "X", 3, xd, -1, 1);
    in[1] = param(t, dt, "W", 3, (int64_t[]){nd, gh, c->input}, -0.8, 0.8);
    in[2] = param(t, dt, "Rw", 3, (int64_t[]){nd, gh, H}, -0.8, 0.8);
    if (c->bias) in[3] = param(t, dt, "B", 2, (int64_t[]){nd, 2 * gh}, -0.5, 0.5);
    if (c->h0) in[5] = param(t, dt, "initial_h", 3, st, -1, 1);
    if (c->c0 && lstm) in[6] = param(t, dt, "initial_c", 3, st, -1, 1);
    if (c->lens) {
        px_shape ls = px_shape_make(1, &c->batch);
        px_tensor *lt = px_tensor_new(PX_I32, &ls, &t->d);
        for (int64_t b = 0; b < c->batch; b++) px_tensor_set_f64(lt, b, c->len[b]);
        in[4] = px_graph_add_constant(t->g, "sequence_lens", lt);
    }
    int n_in = lstm ? (in[6] ? 7 : in[5] ? 6 : 4) : (in[5] ? 6 : 4);
    if (c->lens && n_in < 5) n_in = 5;
    int n_out = lstm ? 3 : 2;
    px_value *outs[3] = {0};
    px_shape u = px_shape_unknown();
    for (int i = 0; i < n_out; i++)
        if (!(i == 0 && c->no_y)) outs[i] = px_graph_new_value(t->g, c->op, PX_UNDEFINED, &u);
    px_node *n = px_graph_add_node(t->g, c->op, "", c->op, n_in, in, n_out, outs);
    px_node_set_attr_int(n, "hidden_size", H);
    if (strcmp(dir, "forward")) px_node_set_attr_string(n, "direction", dir);
    if (c->layout) px_node_set_attr_int(n, "layout", 1);
    if (c->lbr) px_node_set_attr_int(n, "linear_before_reset", 1);
    if (c->act[0]) {
        px_attr *a = px_node_add_attr(n, "activations", PX_ATTR_STRINGS);
        a->strings = calloc((size_t)nd, sizeof *a->strings);
        for (int i = 0; i < nd; i++, a->n++) {
            a->strings[i].data = strdup(c->act[i]);
            a->strings[i].len = strlen(c->act[i]);
        }
    }
    cr_assert_eq(px_infer_node(t->g, n, &t->d), 0, "%s", t->d.text);
    px_value *loss = NULL;
    for (int i = 0; i < n_out; i++) {
        if (!c->use[i]) continue;
        cr_assert_not_null(outs[i]);
        px_value *term = weighted_sum(t, outs[i]);
        loss = loss ? tg_op2(t, "Add", loss, term) : term;
    }
    px_graph_add_output(t->g, loss);
    return t;
}

static int n_params(const rnn_case *c) {
    return 3 + c->bias + c->h0 + (c->c0 && gates_of(c->op) == 4);
}

static void run_case(const char *name, const rnn_case *c) {
    tg *t = build(c, PX_F64);
    tg_fd_err e = tg_check_grads(t, n_params(c), 0, 400, 1e-6, 1e-7, 1e-6);
    fprintf(stderr, "rnn gradcheck %-28s max |autodiff - fd| %.2e (relative %.2e)\n", name, e.abs,
            e.rel);
    tg_free(t);
}

#define LSTM_CASE(name, ...)                                                                       \
    Test(autodiff_rnn, name) {                                                                     \
        rnn_case c = {.op = "LSTM", __VA_ARGS__};                                                  \
        run_case(#name, &c);                                                                       \
    }
#define GRU_CASE(name, ...)                                                                        \
    Test(autodiff_rnn, name) {                                                                     \
        rnn_case c = {.op = "GRU", __VA_ARGS__};                                                   \
        run_case(#name, &c);                                                                       \
    }
#define RNN_CASE(name, ...)                                                                        \
    Test(autodiff_rnn, name) {                                                                     \
        rnn_case c = {.op = "RNN", __VA_ARGS__};                                                   \
        run_case(#name, &c);                                                                       \
    }

/* ---------- LSTM ---------- */

LSTM_CASE(lstm_all_inputs_all_outputs, .seq = 3, .batch = 3, .input = 4, .hidden = 5, .bias = 1,
          .h0 = 1, .c0 = 1, .use = {1, 1, 1})
LSTM_CASE(lstm_seq1_batch1_plain_y_only, .seq = 1, .batch = 1, .input = 2, .hidden = 2,
          .use = {1, 0, 0})
LSTM_CASE(lstm_y_only_bias, .seq = 4, .batch = 3, .input = 3, .hidden = 4, .bias = 1,
          .use = {1, 0, 0})
/* Y present but unused: the kernel reads the states from it */
LSTM_CASE(lstm_yh_only_y_unused, .seq = 3, .batch = 1, .input = 3, .hidden = 4, .bias = 1, .c0 = 1,
          .use = {0, 1, 0})
/* no Y output: the kernel reruns the recurrence */
LSTM_CASE(lstm_yh_only_no_y, .seq = 4, .batch = 3, .input = 2, .hidden = 3, .h0 = 1,
          .use = {0, 1, 0}, .no_y = 1)
LSTM_CASE(lstm_yc_only_no_y_seq1, .seq = 1, .batch = 3, .input = 2, .hidden = 5, .bias = 1, .h0 = 1,
          .c0 = 1, .use = {0, 0, 1}, .no_y = 1)
LSTM_CASE(lstm_y_and_yh, .seq = 2, .batch = 3, .input = 3, .hidden = 2, .h0 = 1, .c0 = 1,
          .use = {1, 1, 0})
LSTM_CASE(lstm_reverse, .direction = "reverse", .seq = 3, .batch = 2, .input = 3, .hidden = 3,
          .bias = 1, .h0 = 1, .c0 = 1, .use = {1, 0, 1})
LSTM_CASE(lstm_bidirectional, .direction = "bidirectional", .seq = 3, .batch = 3, .input = 2,
          .hidden = 2, .bias = 1, .h0 = 1, .c0 = 1, .use = {1, 1, 1})
LSTM_CASE(lstm_bidirectional_no_y, .direction = "bidirectional", .seq = 3, .batch = 2, .input = 3,
          .hidden = 3, .bias = 1, .use = {0, 1, 1}, .no_y = 1)
LSTM_CASE(lstm_layout1, .layout = 1, .seq = 3, .batch = 2, .input = 3, .hidden = 3, .bias = 1,
          .h0 = 1, .c0 = 1, .use = {1, 1, 0})
LSTM_CASE(lstm_layout1_bidirectional_no_y, .layout = 1, .direction = "bidirectional", .seq = 3,
          .batch = 3, .input = 2, .hidden = 2, .h0 = 1, .c0 = 1, .use = {0, 1, 1}, .no_y = 1)

/* sequence_lens (pack_padded_sequence): entries shorter than seq_len, one
 * of them empty (its state passes through); reverse directions start each
 * entry at its own last step */
LSTM_CASE(lstm_lens, .seq = 4, .batch = 3, .input = 3, .hidden = 3, .bias = 1, .h0 = 1, .c0 = 1,
          .use = {1, 1, 1}, .lens = 1, .len = {4, 2, 0})
LSTM_CASE(lstm_lens_reverse_layout1, .direction = "reverse", .layout = 1, .seq = 4, .batch = 3,
          .input = 2, .hidden = 3, .bias = 1, .use = {1, 1, 0}, .lens = 1, .len = {1, 4, 3})
LSTM_CASE(lstm_lens_bidirectional_no_y, .direction = "bidirectional", .seq = 3, .batch = 2,
          .input = 2, .hidden = 2, .bias = 1, .h0 = 1, .c0 = 1, .use = {0, 1, 1}, .no_y = 1,
          .lens = 1, .len = {2, 3})

/* ---------- GRU ---------- */

GRU_CASE(gru_all, .seq = 3, .batch = 3, .input = 4, .hidden = 5, .bias = 1, .h0 = 1,
         .use = {1, 1, 0})
GRU_CASE(gru_linear_before_reset, .seq = 3, .batch = 3, .input = 3, .hidden = 4, .bias = 1, .h0 = 1,
         .use = {1, 1, 0}, .lbr = 1)
GRU_CASE(gru_seq1_batch1_y_only, .seq = 1, .batch = 1, .input = 2, .hidden = 2, .use = {1, 0, 0})
GRU_CASE(gru_yh_only_no_y, .seq = 4, .batch = 2, .input = 3, .hidden = 3, .bias = 1, .h0 = 1,
         .use = {0, 1, 0}, .no_y = 1)
GRU_CASE(gru_lbr_no_y, .seq = 3, .batch = 3, .input = 2, .hidden = 3, .bias = 1, .h0 = 1,
         .use = {0, 1, 0}, .no_y = 1, .lbr = 1)
GRU_CASE(gru_bidirectional_lbr, .direction = "bidirectional", .seq = 3, .batch = 2, .input = 3,
         .hidden = 2, .bias = 1, .h0 = 1, .use = {1, 1, 0}, .lbr = 1)
GRU_CASE(gru_reverse_layout1, .direction = "reverse", .layout = 1, .seq = 3, .batch = 3, .input = 2,
         .hidden = 3, .bias = 1, .use = {1, 0, 0})

GRU_CASE(gru_lens_bidirectional_lbr, .direction = "bidirectional", .seq = 4, .batch = 3, .input = 2,
         .hidden = 3, .bias = 1, .h0 = 1, .use = {1, 1, 0}, .lbr = 1, .lens = 1, .len = {3, 4, 1})
GRU_CASE(gru_lens_no_y, .seq = 3, .batch = 3, .input = 2, .hidden = 2, .bias = 1, .h0 = 1,
         .use = {0, 1, 0}, .no_y = 1, .lens = 1, .len = {2, 0, 3})

/* ---------- RNN ---------- */

RNN_CASE(rnn_tanh, .seq = 3, .batch = 3, .input = 3, .hidden = 4, .bias = 1, .h0 = 1,
         .use = {1, 1, 0})
RNN_CASE(rnn_relu_no_y, .seq = 3, .batch = 3, .input = 3, .hidden = 4, .bias = 1, .h0 = 1,
         .use = {0, 1, 0}, .no_y = 1, .act = {"Relu"})
RNN_CASE(rnn_bidirectional_sigmoid_tanh, .direction = "bidirectional", .seq = 2, .batch = 1,
         .input = 2, .hidden = 3, .bias = 1, .h0 = 1, .use = {1, 1, 0}, .act = {"Sigmoid", "Tanh"})

RNN_CASE(rnn_lens_reverse, .direction = "reverse", .seq = 3, .batch = 3, .input = 2, .hidden = 3,
         .bias = 1, .h0 = 1, .use = {1, 1, 0}, .lens = 1, .len = {3, 1, 2})

/* ---------- float32 ---------- */

/* The float32 kernels (fast expf/tanhf) against the float64 ones on the
 * same numbers: every gradient agrees to float32 accuracy. */
static void f32_case(const rnn_case *c) {
    px_tensor **o[2];
    tg *t[2];
    px_grads gr[2];
    px_plan plan[2];
    for (int k = 0; k < 2; k++) {
        t[k] = build(c, k ? PX_F32 : PX_F64);
        cr_assert_eq(px_pass_autodiff(t[k]->g, NULL, &gr[k], &t[k]->d), 0, "%s", t[k]->d.text);
        cr_assert_eq(gr[k].n, n_params(c));
        for (int i = 0; i < gr[k].n; i++) px_graph_add_output(t[k]->g, gr[k].items[i].grad);
        cr_assert_eq(px_plan_build(t[k]->g, &plan[k], &t[k]->d), 0, "%s", t[k]->d.text);
    }
    /* the second build drew new numbers: copy the float64 case's values over */
    for (int i = 0; i < t[0]->g->n_values; i++) {
        px_value *a = t[0]->g->values[i], *b = px_graph_find_value(t[1]->g, a->name);
        if (!a->data || !b || !b->data) continue;
        for (int64_t j = 0; j < px_tensor_numel(a->data); j++)
            px_tensor_set_f64(b->data, j, px_tensor_get_f64(a->data, j));
    }
    for (int k = 0; k < 2; k++) tg_run_loss(t[k], &plan[k], &o[k]);
    double worst = 0;
    for (int i = 0; i < gr[0].n; i++) {
        const px_tensor *g64 = o[0][1 + i], *g32 = o[1][1 + i];
        double scale = 0;
        for (int64_t j = 0; j < px_tensor_numel(g64); j++)
            scale = fmax(scale, fabs(px_tensor_get_f64(g64, j)));
        for (int64_t j = 0; j < px_tensor_numel(g64); j++) {
            double a = px_tensor_get_f64(g64, j), b = px_tensor_get_f64(g32, j);
            double e = fabs(a - b) / fmax(scale, 1e-3);
            worst = fmax(worst, e);
            cr_expect(e < 2e-5, "%s[%lld]: float64 %.9g, float32 %.9g", gr[0].items[i].var->name,
                      (long long)j, a, b);
        }
    }
    fprintf(stderr, "rnn %s float32 vs float64: max error %.2e of the largest gradient\n", c->op,
            worst);
    for (int k = 0; k < 2; k++) {
        tg_free_outs(t[k], o[k]);
        px_plan_free(&plan[k]);
        px_grads_free(&gr[k]);
        tg_free(t[k]);
    }
}

Test(autodiff_rnn, lstm_float32) {
    rnn_case c = {.op = "LSTM",
                  .direction = "bidirectional",
                  .seq = 5,
                  .batch = 3,
                  .input = 4,
                  .hidden = 6,
                  .bias = 1,
                  .h0 = 1,
                  .c0 = 1,
                  .use = {1, 1, 1}};
    f32_case(&c);
    c.no_y = 1;
    c.use[0] = 0;
    f32_case(&c);
}

Test(autodiff_rnn, gru_float32) {
    rnn_case c = {.op = "GRU",
                  .direction = "forward",
                  .seq = 5,
                  .batch = 3,
                  .input = 4,
                  .hidden = 6,
                  .bias = 1,
                  .h0 = 1,
                  .use = {1, 1, 0},
                  .lbr = 1};
    f32_case(&c);
    c.lbr = 0;
    f32_case(&c);
}

/* ---------- refusals ---------- */

static void expect_refusal(const char *attr, const char *message) {
    rnn_case c = {.op = "LSTM",
                  .direction = "forward",
                  .seq = 2,
                  .batch = 2,
                  .input = 2,
                  .hidden = 2,
                  .use = {1, 0, 0}};
    tg *t = build(&c, PX_F64);
    px_node *n = t->g->nodes[0];
    if (!strcmp(attr, "clip")) px_node_set_attr_float(n, "clip", 3.0f);
    if (!strcmp(attr, "input_forget")) px_node_set_attr_int(n, "input_forget", 1);
    if (!strcmp(attr, "activations")) {
        px_attr *a = px_node_add_attr(n, "activations", PX_ATTR_STRINGS);
        const char *names[3] = {"HardSigmoid", "Tanh", "Tanh"};
        a->strings = calloc(3, sizeof *a->strings);
        for (int i = 0; i < 3; i++, a->n++) {
            a->strings[i].data = strdup(names[i]);
            a->strings[i].len = strlen(names[i]);
        }
    }
    px_grads gr;
    cr_assert_eq(px_pass_autodiff(t->g, NULL, &gr, &t->d), -1);
    cr_assert(strstr(t->d.text, message), "%s", t->d.text);
    cr_assert(strstr(t->d.text, "LSTM"), "%s", t->d.text);
    tg_free(t);
}

Test(autodiff_rnn, refuses_clip_input_forget_activations) {
    expect_refusal("clip", "clip");
    expect_refusal("input_forget", "input_forget");
    expect_refusal("activations", "HardSigmoid");
}

/* Only W trainable: no dX, dR, dB, dinitial_* outputs are made. */
Test(autodiff_rnn, only_wanted_outputs) {
    rnn_case c = {.op = "LSTM",
                  .direction = "forward",
                  .seq = 3,
                  .batch = 2,
                  .input = 2,
                  .hidden = 3,
                  .bias = 1,
                  .h0 = 1,
                  .c0 = 1,
                  .use = {1, 0, 0}};
    tg *t = build(&c, PX_F64);
    const char *freeze[5] = {"X", "Rw", "B", "initial_h", "initial_c"};
    px_train_spec spec = {.n_freeze = 5, .freeze = freeze};
    px_grads gr;
    cr_assert_eq(px_pass_autodiff(t->g, &spec, &gr, &t->d), 0, "%s", t->d.text);
    cr_assert_eq(gr.n, 1);
    int found = 0;
    for (int k = 0; k < t->g->n_nodes; k++) {
        const px_node *n = t->g->nodes[k];
        if (n->op != PX_OP_LSTMGrad) continue;
        found++;
        for (int i = 0; i < n->n_outputs; i++)
            cr_assert_eq(n->outputs[i] != NULL, i == 1, "output %d", i);
    }
    cr_assert_eq(found, 1);
    px_grads_free(&gr);
    tg_free(t);
}

/* ---------- the lstm_lm example ---------- */

/* PyTorch nn.LSTM (batch_first, exported at opset 17 with Transposes and
 * zero initial states) between a sparse embedding and a Linear with
 * cross-entropy: folded at --batch 3, promoted to float64, every variable's
 * gradient against finite differences at sampled coordinates. */
Test(autodiff_rnn, example_lstm_lm) {
    tg *t = tg_load_example("lstm_lm", 3);
    /* embedding (row set), LSTM W, R, B, Linear weight and bias */
    tg_fd_err e = tg_check_grads(t, 6, 1, 12, 1e-6, 1e-8, 1e-5);
    fprintf(stderr, "rnn gradcheck %-28s max |autodiff - fd| %.2e (relative %.2e)\n",
            "example_lstm_lm", e.abs, e.rel);
    tg_free(t);
}
