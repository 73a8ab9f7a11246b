/* Lowerings of the recurrent ops LSTM, GRU and RNN to px_k_lstm, px_k_gru,
 * px_k_rnn (runtime/kernels/rnn.c, whose comment at px_k_lstm documents
 * buf and p). Everything static is resolved here: direction, layout,
 * hidden_size, clip, the activations with their alpha/beta, and every shape
 * is checked so the kernel can trust them. */
#include "lower.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Activation codes: the same numbers as enum px_rnn_act_kind in
 * runtime/kernels/rnn_internal.h (the runtime cannot be included here). */
enum {
    ACT_SIGMOID = 0,
    ACT_TANH = 1,
    ACT_RELU = 2,
    ACT_AFFINE = 3,
    ACT_LEAKY_RELU = 4,
    ACT_THRESHOLDED_RELU = 5,
    ACT_SCALED_TANH = 6,
    ACT_HARD_SIGMOID = 7,
    ACT_ELU = 8,
    ACT_SOFTSIGN = 9,
    ACT_SOFTPLUS = 10,
};

/* The activations ONNX allows, whether they take alpha / beta, and the
 * defaults of the ONNX ops of the same name. */
static const struct activation {
    const char *name;
    int code, takes_alpha, takes_beta;
    float alpha, beta;
} activations[] = {
    {"Sigmoid", ACT_SIGMOID, 0, 0, 0, 0},
    {"Tanh", ACT_TANH, 0, 0, 0, 0},
    {"Relu", ACT_RELU, 0, 0, 0, 0},
    {"Affine", ACT_AFFINE, 1, 1, 1.0f, 0.0f},
    {"LeakyRelu", ACT_LEAKY_RELU, 1, 0, 0.01f, 0},
    {"ThresholdedRelu", ACT_THRESHOLDED_RELU, 1, 0, 1.0f, 0},
    {"ScaledTanh", ACT_SCALED_TANH, 1, 1, 1.0f, 1.0f},
    {"HardSigmoid", ACT_HARD_SIGMOID, 1, 1, 0.2f, 0.5f},
    {"Elu", ACT_ELU, 1, 0, 1.0f, 0},
    {"Softsign", ACT_SOFTSIGN, 0, 0, 0, 0},
    {"Softplus", ACT_SOFTPLUS, 0, 0, 0, 0},
};
#define N_ACTIVATIONS ((int)(sizeof activations / sizeof *activations))

/* The three cells; gates = the multiple of hidden_size in W and R. */
typedef struct cell {
    const char *kernel;
    int gates, n_acts, max_inputs, max_outputs;
    const char *default_acts[3];
} cell;

static const cell lstm_cell = {"px_k_lstm", 4, 3, 8, 3, {"Sigmoid", "Tanh", "Tanh"}};
static const cell gru_cell = {"px_k_gru", 3, 2, 6, 2, {"Sigmoid", "Tanh", NULL}};
static const cell rnn_cell = {"px_k_rnn", 1, 1, 6, 2, {"Tanh", NULL, NULL}};

#define MAX_ACTS 6 /* two directions of LSTM's f, g, h */

static int same_name_nocase(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

/* v (optional when `optional`) has a static shape equal to dims[rank] and
 * dtype `dtype`. */
static int check(const px_node *n, const px_value *v, const char *what, int optional,
                 px_dtype dtype, int rank, const int64_t *dims, px_diag *d) {
    char s[256];
    if (!v) return optional ? 0 : px_lower_error(d, n, "missing input %s", what);
    if (!px_shape_is_static(&v->shape))
        return px_lower_error(d, n, "%s '%s' has shape %s; the code generator needs static shapes",
                              what, v->name, px_shape_str(&v->shape, s, sizeof s));
    if (v->dtype != dtype)
        return px_lower_error(d, n, "%s '%s' has dtype %s, expected %s", what, v->name,
                              px_dtype_name(v->dtype), px_dtype_name(dtype));
    int same = v->shape.rank == rank;
    for (int i = 0; same && i < rank; i++) same = v->shape.dims[i] == dims[i];
    if (!same) {
        px_shape want = px_shape_make(rank, dims);
        char w[256];
        return px_lower_error(d, n, "%s '%s' has shape %s, expected %s", what, v->name,
                              px_shape_str(&v->shape, s, sizeof s),
                              px_shape_str(&want, w, sizeof w));
    }
    return 0;
}

/* Resolves the activations of every direction into codes and alpha/beta.
 * activation_alpha / activation_beta are consumed in order by the
 * activations that take them (as onnxruntime does); a list with exactly one
 * entry per activation is read one slot per activation instead (the other
 * reading of the spec). Anything else is an error rather than a guess. */
static int resolve_activations(const px_node *n, const cell *c, int nd, int *codes, double *alpha,
                               double *beta, px_diag *d) {
    const char *names[MAX_ACTS];
    int count = 0, want = nd * c->n_acts;
    const px_attr *attr = px_node_attr(n, "activations");
    if (attr) {
        if (attr->kind != PX_ATTR_STRINGS)
            return px_lower_error(d, n, "attribute 'activations' must be a list of strings");
        count = attr->n;
        if (count == want || (count == c->n_acts && nd == 2) ||
            (c->n_acts == 1 && nd == 1 && count == 2)) {
            /* exact; one list for both directions; RNN's 2-entry default form */
            for (int i = 0; i < want; i++) {
                const char *s = attr->strings[i % count].data;
                names[i] = s ? s : "";
            }
        } else {
            return px_lower_error(d, n, "attribute 'activations' has %d entries; %s %s needs %d",
                                  count, nd == 2 ? "bidirectional" : "unidirectional", n->op_type,
                                  want);
        }
    } else {
        for (int i = 0; i < want; i++) names[i] = c->default_acts[i % c->n_acts];
    }
    const struct activation *act[MAX_ACTS];
    int takes_alpha = 0, takes_beta = 0;
    for (int i = 0; i < want; i++) {
        act[i] = NULL;
        for (int k = 0; k < N_ACTIVATIONS; k++)
            if (same_name_nocase(names[i], activations[k].name)) act[i] = &activations[k];
        if (!act[i])
            return px_lower_error(
                d, n,
                "activation '%s' is not one of Sigmoid, Tanh, Relu, Affine, LeakyRelu, "
                "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus",
                names[i]);
        takes_alpha += act[i]->takes_alpha;
        takes_beta += act[i]->takes_beta;
    }
    int na = 0, nb = 0;
    const float *fa = px_attr_floats(n, "activation_alpha", &na);
    const float *fb = px_attr_floats(n, "activation_beta", &nb);
    if (px_node_attr(n, "activation_alpha") && !fa)
        return px_lower_error(d, n, "attribute 'activation_alpha' must be a list of floats");
    if (px_node_attr(n, "activation_beta") && !fb)
        return px_lower_error(d, n, "attribute 'activation_beta' must be a list of floats");
    int alpha_per_slot = na == want && na != takes_alpha,
        beta_per_slot = nb == want && nb != takes_beta;
    if (na && na != takes_alpha && !alpha_per_slot)
        return px_lower_error(d, n,
                              "attribute 'activation_alpha' has %d values; the activations take %d",
                              na, takes_alpha);
    if (nb && nb != takes_beta && !beta_per_slot)
        return px_lower_error(d, n,
                              "attribute 'activation_beta' has %d values; the activations take %d",
                              nb, takes_beta);
    int ia = 0, ib = 0;
    for (int i = 0; i < want; i++) {
        codes[i] = act[i]->code;
        alpha[i] = act[i]->alpha;
        beta[i] = act[i]->beta;
        if (alpha_per_slot)
            alpha[i] = act[i]->takes_alpha ? fa[i] : 0;
        else if (act[i]->takes_alpha && ia < na)
            alpha[i] = fa[ia++];
        if (beta_per_slot)
            beta[i] = act[i]->takes_beta ? fb[i] : 0;
        else if (act[i]->takes_beta && ib < nb)
            beta[i] = fb[ib++];
    }
    return 0;
}

/* Whether a live LSTMGrad reads y (the forward's Y): then the forward
 * kernel keeps its gates and cells for it (runtime/kernels/stash.h). */
static int read_by_lstm_grad(const px_value *y) {
    for (int i = 0; y && i < y->n_uses; i++)
        if (!y->uses[i].node->dead && y->uses[i].node->op == PX_OP_LSTMGrad) return 1;
    return 0;
}

static int check_blas(const px_node *n, int64_t v, const char *what, px_diag *d) {
    if (v > INT_MAX)
        return px_lower_error(d, n, "%s = %lld exceeds the BLAS limit %d", what, (long long)v,
                              INT_MAX);
    return 0;
}

/* buf and p: see px_k_lstm in runtime/kernels/rnn.c. */
static int lower_recurrent(const px_graph *g, const px_node *n, px_kcall *k, const cell *c,
                           px_diag *d) {
    (void)g;
    int is_lstm = c->gates == 4;
    if (n->n_inputs > c->max_inputs)
        return px_lower_error(d, n, "%s takes at most %d inputs, got %d", n->op_type, c->max_inputs,
                              n->n_inputs);
    for (int i = c->max_outputs; i < n->n_outputs; i++)
        if (n->outputs[i])
            return px_lower_error(d, n, "%s has at most %d outputs, got %d", n->op_type,
                                  c->max_outputs, n->n_outputs);
    const px_value *x = px_lower_in(n, 0), *w = px_lower_in(n, 1), *r = px_lower_in(n, 2),
                   *b = px_lower_in(n, 3), *lens = px_lower_in(n, 4), *h0 = px_lower_in(n, 5),
                   *c0 = is_lstm ? px_lower_in(n, 6) : NULL,
                   *p = is_lstm ? px_lower_in(n, 7) : NULL;
    const px_value *y = px_lower_out(n, 0), *yh = px_lower_out(n, 1),
                   *yc = is_lstm ? px_lower_out(n, 2) : NULL;
    char s[256];
    if (!x || !w || !r) return px_lower_error(d, n, "missing input %s", !x ? "X" : !w ? "W" : "R");
    if (x->dtype != PX_F32 && x->dtype != PX_F64)
        return px_lower_error(d, n,
                              "input X '%s' has dtype %s; the %s kernel supports float and double",
                              x->name, px_dtype_name(x->dtype), n->op_type);
    if (!px_shape_is_static(&x->shape) || x->shape.rank != 3)
        return px_lower_error(d, n, "input X '%s' has shape %s; expected a static 3-D shape",
                              x->name, px_shape_str(&x->shape, s, sizeof s));
    px_dtype dt = x->dtype;
    int64_t layout = px_attr_int(n, "layout", 0);
    if (layout != 0 && layout != 1)
        return px_lower_error(d, n, "attribute 'layout' must be 0 or 1, got %lld",
                              (long long)layout);
    const char *dir = px_attr_string(n, "direction", "forward");
    int direction, nd;
    if (!strcmp(dir, "forward"))
        direction = 0;
    else if (!strcmp(dir, "reverse"))
        direction = 1;
    else if (!strcmp(dir, "bidirectional"))
        direction = 2;
    else
        return px_lower_error(
            d, n, "attribute 'direction' is '%s'; expected forward, reverse or bidirectional", dir);
    nd = direction == 2 ? 2 : 1;
    int64_t seq = x->shape.dims[layout ? 1 : 0], batch = x->shape.dims[layout ? 0 : 1];
    int64_t input = x->shape.dims[2];
    if (r->shape.rank != 3 || !px_shape_is_static(&r->shape))
        return px_lower_error(d, n, "input R '%s' has shape %s; expected a static 3-D shape",
                              r->name, px_shape_str(&r->shape, s, sizeof s));
    int64_t hidden = r->shape.dims[2];
    if (px_node_attr(n, "hidden_size")) {
        int64_t hs = px_attr_int(n, "hidden_size", 0);
        if (hs < 1)
            return px_lower_error(d, n, "attribute 'hidden_size' must be >= 1, got %lld",
                                  (long long)hs);
        if (hs != hidden)
            return px_lower_error(d, n, "attribute 'hidden_size' is %lld but R '%s' has shape %s",
                                  (long long)hs, r->name, px_shape_str(&r->shape, s, sizeof s));
    }
    int64_t gh = c->gates * hidden;
    int64_t w_dims[3] = {nd, gh, input}, r_dims[3] = {nd, gh, hidden}, b_dims[2] = {nd, 2 * gh};
    int64_t p_dims[2] = {nd, 3 * hidden}, l_dims[1] = {batch};
    int64_t st_dims[3] = {layout ? batch : nd, layout ? nd : batch, hidden};
    int64_t y_dims[4] = {seq, nd, batch, hidden};
    if (layout) {
        y_dims[0] = batch;
        y_dims[1] = seq;
        y_dims[2] = nd;
    }
    if (check(n, w, "W", 0, dt, 3, w_dims, d) || check(n, r, "R", 0, dt, 3, r_dims, d) ||
        check(n, b, "B", 1, dt, 2, b_dims, d) ||
        check(n, lens, "sequence_lens", 1, PX_I32, 1, l_dims, d) ||
        check(n, h0, "initial_h", 1, dt, 3, st_dims, d) ||
        check(n, c0, "initial_c", 1, dt, 3, st_dims, d) || check(n, p, "P", 1, dt, 2, p_dims, d) ||
        check(n, y, "output Y", 1, dt, 4, y_dims, d) ||
        check(n, yh, "output Y_h", 1, dt, 3, st_dims, d) ||
        check(n, yc, "output Y_c", 1, dt, 3, st_dims, d))
        return -1;
    if (check_blas(n, seq * batch, "seq_length*batch_size", d) ||
        check_blas(n, gh, "gates*hidden_size", d) || check_blas(n, input, "input_size", d))
        return -1;
    double clip = 0;
    if (px_node_attr(n, "clip")) {
        clip = px_attr_float(n, "clip", 0);
        if (!(clip > 0)) return px_lower_error(d, n, "attribute 'clip' must be > 0, got %g", clip);
        if (isinf(clip)) clip = 0; /* no bound */
    }
    int64_t variant = 0;
    if (is_lstm) {
        variant = px_attr_int(n, "input_forget", 0);
        if (variant != 0 && variant != 1)
            return px_lower_error(d, n, "attribute 'input_forget' must be 0 or 1, got %lld",
                                  (long long)variant);
    } else if (c->gates == 3) {
        variant = px_attr_int(n, "linear_before_reset", 0) != 0;
    }
    int codes[MAX_ACTS];
    double alpha[MAX_ACTS], beta[MAX_ACTS];
    if (resolve_activations(n, c, nd, codes, alpha, beta, d)) return -1;

    px_kc_set_kernel(k, c->kernel);
    const px_value *bufs[11] = {x, w, r, b, lens, h0, c0, p, y, yh, yc};
    for (int i = 0; i < 11; i++) px_kc_buf(k, bufs[i]);
    for (int i = 0; i < 11; i++) {
        if (bufs[i]) {
            px_kc_tensor(k, bufs[i]);
        } else {
            px_kc_i64(k, 0); /* absent: dtype 0, rank 0 */
            px_kc_i64(k, 0);
        }
    }
    px_kc_i64(k, direction);
    px_kc_i64(k, layout);
    px_kc_i64(k, hidden);
    px_kc_f64(k, clip);
    px_kc_i64(k, variant);
    for (int i = 0; i < nd * c->n_acts; i++) {
        px_kc_i64(k, codes[i]);
        px_kc_f64(k, alpha[i]);
        px_kc_f64(k, beta[i]);
    }
    px_kc_i64(k, c->gates == 4 && read_by_lstm_grad(y)); /* keep the gates for it */
    return 0;
}

int px_lower_lstm(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    return lower_recurrent(g, n, k, &lstm_cell, d);
}

int px_lower_gru(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    return lower_recurrent(g, n, k, &gru_cell, d);
}

int px_lower_rnn(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    return lower_recurrent(g, n, k, &rnn_cell, d);
}
