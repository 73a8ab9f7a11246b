/* Dropout in training programs: the forward rewrite that runs before
 * autodiff.
 *
 * px_pass_dropout_rewrite turns every training-mode Dropout with ratio > 0
 * (training_mode a constant true, or is_test = 0 before opset 7) into
 * ai.parallax::DropoutTrain(data) with attributes ratio and seed_key (a hash
 * of the node's name), keeping its output values. Its kernel
 * (runtime/kernels/dropout_train.c) draws the mask from a counter-based hash
 * of (px_train.dropout_seed, px_train.t, seed_key, rank, element index): the
 * same step of a resumed run draws the same mask, and the gradient
 * (grad_dropout.c) regenerates it. A training_mode or ratio computed at run
 * time is refused. */
#include "dropout_rewrite.h"

#include <stdio.h>
#include <string.h>

int px_dropout_draws(const px_graph *g, const px_node *n, double *ratio, px_diag *d) {
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

int px_pass_dropout_rewrite(px_graph *g, px_diag *d) {
    for (int k = 0; k < g->n_nodes; k++) {
        px_node *n = g->nodes[k];
        if (n->dead || n->op != PX_OP_Dropout) continue;
        double ratio = 0;
        int draws = px_dropout_draws(g, n, &ratio, d);
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
