/* Gradient rules of the recurrent ops LSTM, GRU and RNN: one ai.parallax
 * backward op per cell (ir/shape_rnn_grad.c), lowered to a dedicated kernel
 * (runtime/kernels/rnn_grad.c) that rebuilds the forward's gates and runs
 * back through time with BLAS products over the batch:
 *   LSTMGrad(X, W, R, B, initial_h, initial_c, Y, dY, dY_h, dY_c,
 *            sequence_lens) -> (dX, dW, dR, dB, dinitial_h, dinitial_c)
 *   GRUGrad / RNNGrad: the same inputs without initial_c / dY_c, outputs
 *       without dinitial_c.
 * Y is the forward's own output when it has one: with every hidden state
 * known, the kernel rebuilds all gates with a few large GEMMs instead of
 * rerunning the recurrence step by step. Outputs no input wants are left
 * absent, so the kernel skips their products.
 *
 * Supported: what PyTorch exports and more (layouts 0 and 1, every
 * direction, sequence_lens (pack_padded_sequence), optional B / initial
 * states / outputs, GRU either linear_before_reset, RNN with Tanh, Sigmoid
 * or Relu). Refused with a message: peepholes, clip, input_forget and
 * activations other than the defaults. */
#include "grad_internal.h"

#include "shape_infer.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int same_nocase(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

/* The activations attribute, when present, must name the defaults (LSTM,
 * GRU) or, for RNN, one of Tanh, Sigmoid, Relu per direction. */
static int check_activations(px_ad *a, const px_node *n, int gates, int nd) {
    const px_attr *attr = px_node_attr(n, "activations");
    if (!attr) return 0;
    static const char *const lstm[3] = {"Sigmoid", "Tanh", "Tanh"}, *const gru[2] = {"Sigmoid",
                                                                                     "Tanh"};
    int per = gates == 4 ? 3 : gates == 3 ? 2 : 1;
    if (attr->kind != PX_ATTR_STRINGS || (attr->n != per * nd && attr->n != per))
        return px_ad_error(a, n, "attribute 'activations' must list %d names", per * nd);
    for (int i = 0; i < attr->n; i++) {
        const char *s = attr->strings[i].data ? attr->strings[i].data : "";
        int ok = gates == 4   ? same_nocase(s, lstm[i % 3])
                 : gates == 3 ? same_nocase(s, gru[i % 2])
                              : same_nocase(s, "Tanh") || same_nocase(s, "Sigmoid") ||
                                    same_nocase(s, "Relu");
        if (!ok)
            return px_ad_error(a, n,
                               "no gradient rule for activation '%s' (supported: the defaults%s)",
                               s, gates == 1 ? ", Sigmoid, Relu" : "");
    }
    return 0;
}

/* What the kernel cannot differentiate, named. */
static int check_supported(px_ad *a, const px_node *n, int gates, int nd) {
    if (gates == 4 && n->n_inputs > 7 && n->inputs[7])
        return px_ad_error(a, n, "no gradient rule with peepholes (input P)");
    if (px_node_attr(n, "clip")) return px_ad_error(a, n, "no gradient rule with clip");
    if (gates == 4 && px_attr_int(n, "input_forget", 0))
        return px_ad_error(a, n, "no gradient rule with input_forget");
    return check_activations(a, n, gates, nd);
}

/* RNN's activations, one per direction, onto the backward node. */
static int copy_activations(px_node *gn, const px_attr *acts, int nd) {
    px_attr *at = px_node_add_attr(gn, "activations", PX_ATTR_STRINGS);
    at->strings = calloc((size_t)nd, sizeof *at->strings);
    if (!at->strings) return -1;
    for (int i = 0; i < nd; i++, at->n++) {
        const char *s = acts->strings[i % acts->n].data;
        at->strings[i].data = strdup(s ? s : "");
        if (!at->strings[i].data) return -1;
        at->strings[i].len = strlen(at->strings[i].data);
    }
    return 0;
}

int px_grad_recurrent(px_ad *a, px_node *n, px_value *const *dy) {
    int gates = n->op == PX_OP_LSTM ? 4 : n->op == PX_OP_GRU ? 3 : 1;
    const char *dir = px_attr_string(n, "direction", "forward");
    int nd = !strcmp(dir, "bidirectional") ? 2 : 1;
    if (check_supported(a, n, gates, nd)) return -1;
    px_value *r = n->inputs[2];
    if (!r || r->shape.rank != 3 || r->shape.dims[2] < 1)
        return px_ad_error(a, n,
                           "R must have a static shape [num_directions, gates*hidden, "
                           "hidden]");
    int n_states = gates == 4 ? 2 : 1;
    /* inputs: X W R B initial_h initial_c Y dY dY_h dY_c sequence_lens */
    px_value *in[11] = {0};
    for (int i = 0; i < 4 && i < n->n_inputs; i++) in[i] = n->inputs[i];
    for (int i = 0; i < n_states && 5 + i < n->n_inputs; i++) in[4 + i] = n->inputs[5 + i];
    in[6] = n->n_outputs > 0 ? n->outputs[0] : NULL;
    for (int o = 0; o < 1 + n_states && o < n->n_outputs; o++) in[7 + o] = dy[o];
    in[10] = n->n_inputs > 4 ? n->inputs[4] : NULL;
    /* outputs: dX dW dR dB dinitial_h dinitial_c; absent when not wanted */
    static const int src[6] = {0, 1, 2, 3, 5, 6}; /* the forward input of each */
    int n_out = gates == 4 ? 6 : 5, any = 0;
    char name[512];
    const char *op = gates == 4 ? "LSTMGrad" : gates == 3 ? "GRUGrad" : "RNNGrad";
    snprintf(name, sizeof name, "grad/%s/%s", n->name[0] ? n->name : "loss", op);
    px_value *out[6] = {0};
    px_shape unknown = px_shape_unknown();
    for (int i = 0; i < n_out; i++)
        if (px_ad_wants(a, n, src[i])) {
            out[i] = px_graph_new_value(a->g, name, PX_UNDEFINED, &unknown);
            any = 1;
        }
    if (!any) return 0;
    px_node *gn = px_graph_add_node(a->g, op, PX_DOMAIN_PARALLAX, name, 11, in, n_out, out);
    if (!gn) return px_ad_error(a, n, "cannot add the backward node");
    px_node_set_attr_string(gn, "direction", dir);
    px_node_set_attr_int(gn, "layout", px_attr_int(n, "layout", 0));
    px_node_set_attr_int(gn, "hidden_size", r->shape.dims[2]);
    if (gates == 3)
        px_node_set_attr_int(gn, "linear_before_reset",
                             px_attr_int(n, "linear_before_reset", 0) != 0);
    const px_attr *acts = px_node_attr(n, "activations");
    if (gates == 1 && acts && copy_activations(gn, acts, nd))
        return px_ad_error(a, n, "out of memory");
    if (px_infer_node(a->g, gn, a->d)) return -1;
    for (int i = 0; i < n_out; i++) {
        if (!out[i]) continue;
        if (!px_shape_is_static(&out[i]->shape))
            return px_ad_error(a, n, "backward output %d has no static shape", i);
        if (px_ad_accum(a, n, src[i], out[i])) return -1;
    }
    return 0;
}
