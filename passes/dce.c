/* Dead code elimination: drops nodes none of whose outputs reach a graph
 * output, then constants nobody reads. Unused float initializers (weights)
 * stay: the driver saves them back into the trained model. */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

/* Nodes kept even when nothing reads them: nodes without outputs exist for
 * their effect, and so do the ai.parallax updates and communication ops. */
static int has_side_effects(const px_node *n) {
    if (n->op != PX_OP_UNKNOWN && (px_op_table[n->op].flags & PX_F_SIDE_EFFECT)) return 1;
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j]) return 0;
    return 1;
}

static void mark_live(px_node *n, char *live, px_node **stack, int *top) {
    if (n->dead || live[n->id]) return;
    live[n->id] = 1;
    stack[(*top)++] = n;
}

static int remove_unused_initializers(px_graph *g) {
    int kept = 0, removed = 0;
    for (int i = 0; i < g->n_inits; i++) {
        px_value *v = g->inits[i];
        int droppable = v->n_uses == 0 && !v->is_output && !v->also_input &&
                        !px_dtype_is_float(v->dtype) && v->dtype != PX_UNDEFINED;
        if (droppable) {
            /* Demoted to an unused constant, which px_graph_compact frees. */
            v->kind = PX_VALUE_CONSTANT;
            removed++;
            continue;
        }
        g->inits[kept++] = v;
    }
    g->n_inits = kept;
    return removed;
}

int px_pass_dce(px_graph *g, px_diag *d) {
    int rc = -1, top = 0;
    char *live = calloc((size_t)g->n_nodes + 1, 1);
    px_node **stack = calloc((size_t)g->n_nodes + 1, sizeof *stack);
    if (!live || !stack) {
        px_error(d, "out of memory in dead code elimination");
        goto cleanup;
    }
    for (int i = 0; i < g->n_nodes; i++) g->nodes[i]->id = i;
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] && g->outputs[i]->producer)
            mark_live(g->outputs[i]->producer, live, stack, &top);
    for (int i = 0; i < g->n_nodes; i++)
        if (has_side_effects(g->nodes[i])) mark_live(g->nodes[i], live, stack, &top);
    while (top > 0) {
        px_node *n = stack[--top];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] && n->inputs[k]->producer)
                mark_live(n->inputs[k]->producer, live, stack, &top);
    }
    /* Reverse order so each removed node's inputs lose their last use first. */
    for (int i = g->n_nodes - 1; i >= 0; i--)
        if (!g->nodes[i]->dead && !live[i]) px_graph_remove_node(g, g->nodes[i]);
    remove_unused_initializers(g);
    /* Compact drops dead nodes and unused, unproduced values that are not
     * graph inputs, outputs or initializers: that includes unused constants. */
    px_graph_compact(g);
    rc = 0;
cleanup:
    free(live);
    free(stack);
    return rc;
}
