/* Dropout in training programs, and its gradient.
 *
 * Before differentiating, px_ad_rewrite_dropout turns every training-mode
 * Dropout with ratio > 0 (training_mode a constant true, or is_test = 0
 * before opset 7) into ai.parallax::DropoutTrain(data) with attributes
 * ratio and seed_key (a hash of the node's name), keeping its output values.
 * Its kernel (runtime/kernels/dropout_train.c) draws the mask from a
 * counter-based hash of (px_train.dropout_seed, px_train.t, seed_key, rank,
 * element index): the same step of a resumed run draws the same mask, and
 * the gradient DropoutGrad(dY) = dY * mask / (1 - ratio) regenerates the
 * mask instead of keeping it in memory. Every other Dropout (inference, or
 * ratio 0) is the identity, and so is its gradient. A training_mode or ratio
 * computed at run time is refused. */
#include "grad_internal.h"

#include <stdio.h>
#include <string.h>

/* 1: training-mode Dropout with ratio > 0 (*ratio set), 0: the identity,
 * -1: undecidable at compile time (error recorded). */
static int dropout_draws(const px_graph *g, const px_node *n, double *ratio, px_diag *d) {
    char buf[256];
    int64_t opset = px_graph_opset(g, "");
    int training;
    if (opset > 0 && opset < 7) {
        training = px_attr_int(n, "is_test", 0) == 0;
    } else {
        const px_value *tm = n->n_inputs > 2 ? n->inputs[2] : NULL;
        if (!tm) return 0;
        if (!px_value_is_const(tm) || !tm->data || px_tensor_numel(tm->data) != 1)
            return px_error(d,
                            "autodiff: node %s: input training_mode '%s' is computed at run time; "
                            "training programs need a constant",
                            px_node_label(n, buf, sizeof buf), tm->name);
        training = px_tensor_get_i64(tm->data, 0) != 0;
    }
    if (!training) return 0;
    *ratio = px_attr_float(n, "ratio", 0.5f);
    const px_value *r = n->n_inputs > 1 ? n->inputs[1] : NULL;
    if (r) {
        if (!px_value_is_const(r) || !r->data || px_tensor_numel(r->data) != 1)
            return px_error(d,
                            "autodiff: node %s: input ratio '%s' is computed at run time; "
                            "training programs need a constant",
                            px_node_label(n, buf, sizeof buf), r->name);
        *ratio = px_tensor_get_f64(r->data, 0);
    }
    if (!(*ratio >= 0 && *ratio < 1))
        return px_error(d, "autodiff: node %s: ratio %g is outside [0, 1)",
                        px_node_label(n, buf, sizeof buf), *ratio);
    return *ratio > 0;
}

/* FNV-1a of the node's name (its position when unnamed): the same node gets
 * the same mask stream in every compile of the model. */
static int64_t seed_key(const px_node *n, int pos) {
    char alt[32];
    const char *s = n->name;
    if (!s[0]) {
        snprintf(alt, sizeof alt, "#%d", pos);
        s = alt;
    }
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (int64_t)h;
}

int px_ad_rewrite_dropout(px_graph *g, px_diag *d) {
    for (int k = 0; k < g->n_nodes; k++) {
        px_node *n = g->nodes[k];
        if (n->dead || n->op != PX_OP_Dropout) continue;
        double ratio = 0;
        int draws = dropout_draws(g, n, &ratio, d);
        if (draws < 0) return -1;
        if (!draws) continue;
        px_value *x = n->inputs[0];
        px_value *outs[2] = {n->outputs[0], n->n_outputs > 1 ? n->outputs[1] : NULL};
        char name[512];
        snprintf(name, sizeof name, "%s", n->name);
        int64_t key = seed_key(n, k);
        px_graph_remove_node(g, n);
        px_node *t =
            px_graph_insert_node(g, k, "DropoutTrain", PX_DOMAIN_PARALLAX, name, 1, &x, 2, outs);
        px_node_set_attr_float(t, "ratio", (float)ratio);
        px_node_set_attr_int(t, "seed_key", key);
        k++; /* past the dead original */
    }
    return 0;
}

/* Dropout left in the graph is the identity (px_ad_rewrite_dropout took the
 * others); the mask output has no gradient. */
static int grad_dropout(px_ad *a, px_node *n, px_value *const *dy) {
    double ratio = 0;
    int draws = dropout_draws(a->g, n, &ratio, a->d);
    if (draws < 0) return -1;
    if (draws)
        return px_ad_error(a, n, "training-mode Dropout was not rewritten (px_ad_rewrite_dropout)");
    return dy[0] ? px_ad_accum(a, n, 0, dy[0]) : 0;
}

/* dX = DropoutGrad(dY): the forward's mask, regenerated, times 1/(1-ratio) */
static int grad_dropout_train(px_ad *a, px_node *n, px_value *const *dy) {
    if (!dy[0]) return 0;
    px_node *g = px_ad_op(a, "DropoutGrad", PX_DOMAIN_PARALLAX, 1, dy, 1);
    if (!g) return -1;
    px_node_set_attr_float(g, "ratio", px_attr_float(n, "ratio", 0.5f));
    px_node_set_attr_int(g, "seed_key", px_attr_int(n, "seed_key", 0));
    return px_ad_accum(a, n, 0, px_ad_done(a, g));
}

const px_grad_fn px_grad_rules_dropout[PX_OP_COUNT] = {
    [PX_OP_Dropout] = grad_dropout,
    [PX_OP_DropoutTrain] = grad_dropout_train,
};
