/* Eval mode and output selection for inference programs (eval_mode.h). */
#include "eval_mode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Output i of n is read by a node or is a graph output. */
static int output_used(const px_node *n, int i) {
    const px_value *v = i < n->n_outputs ? n->outputs[i] : NULL;
    return v && (v->n_uses > 0 || v->is_output);
}

/* Detaches outputs from index `from` on (unused: checked by the caller). */
static void drop_outputs(px_node *n, int from) {
    for (int i = from; i < n->n_outputs; i++) {
        if (n->outputs[i] && n->outputs[i]->producer == n) n->outputs[i]->producer = NULL;
        n->outputs[i] = NULL;
    }
    n->n_outputs = from;
}

/* Training-mode BatchNormalization whose updated statistics nothing reads
 * (PyTorch's TRAINING export leaves them dangling) runs in inference mode.
 * One whose statistics are read or are graph outputs was asked for them and
 * keeps its mode. */
static int eval_batchnorm(px_node *n) {
    if (px_attr_int(n, "training_mode", 0) == 0 && n->n_outputs <= 1) return 0;
    for (int i = 1; i < n->n_outputs; i++)
        if (output_used(n, i)) return 0;
    drop_outputs(n, 1);
    px_node_remove_attr(n, "training_mode");
    return 1;
}

/* Dropout runs as in inference: training_mode dropped (false), or is_test
 * set before opset 7. Its output is then its input and its mask all true. */
static int eval_dropout(px_graph *g, px_node *n) {
    int64_t opset = px_graph_opset(g, "");
    if (opset > 0 && opset < 7) {
        if (px_attr_int(n, "is_test", 0)) return 0;
        px_node_set_attr_int(n, "is_test", 1);
        return 1;
    }
    if (n->n_inputs < 3 || !n->inputs[2]) return 0;
    px_node_set_input(n, 2, NULL);
    return 1;
}

int px_pass_eval_mode(px_graph *g, px_diag *d) {
    (void)d;
    int changed = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        px_node *n = g->nodes[i];
        if (n->dead) continue;
        if (n->op == PX_OP_BatchNormalization) changed |= eval_batchnorm(n);
        if (n->op == PX_OP_Dropout) changed |= eval_dropout(g, n);
    }
    if (changed) px_graph_compact(g);
    return 0;
}

int px_pass_select_outputs(px_graph *g, int n, char *const *names, px_diag *d) {
    px_value **chosen = calloc((size_t)n + 1, sizeof *chosen);
    if (!chosen) return px_error(d, "out of memory");
    for (int i = 0; i < n; i++) {
        chosen[i] = px_graph_find_value(g, names[i]);
        if (chosen[i]) continue;
        char list[1024] = "";
        size_t len = 0;
        for (int k = 0; k < g->n_outputs && len < sizeof list - 2; k++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", k ? ", " : "",
                                    g->outputs[k]->name);
        free(chosen);
        return px_error(d, "--outputs: the model has no value named '%s' (its outputs: %s)",
                        names[i], list);
    }
    for (int i = 0; i < g->n_outputs; i++) g->outputs[i]->is_output = 0;
    g->n_outputs = 0;
    for (int i = 0; i < n; i++) {
        int dup = 0;
        for (int k = 0; k < g->n_outputs; k++) dup |= g->outputs[k] == chosen[i];
        if (!dup) px_graph_add_output(g, chosen[i]);
    }
    free(chosen);
    return 0;
}

int px_pass_drop_unused_inputs(px_graph *g) {
    int kept = 0, dropped = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        px_value *v = g->inputs[i];
        if (v->n_uses == 0 && !v->is_output) {
            v->kind = PX_VALUE_INTERMEDIATE; /* unproduced and unread: compact frees it */
            dropped++;
            continue;
        }
        g->inputs[kept++] = v;
    }
    g->n_inputs = kept;
    if (dropped) px_graph_compact(g);
    return dropped;
}
