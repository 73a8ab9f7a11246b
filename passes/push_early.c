/* Early pushes (part of px_pass_comm): a sparse variable's row gradients
 * are usually complete long before the end of the backward pass (the
 * output layer of a language model: right after the loss), but autodiff
 * emits the row-set accumulation (Reshape, Concat, GatherGrad) of every
 * variable at the end. The runtime hands a PSPush to the comm thread
 * (runtime/comm/ps_push_async.c), so the earlier it runs, the more of the
 * backward pass hides the push and the shards' answers to the next step's
 * pulls.
 *
 * For each PSPush T, the nodes before it are reordered: first T's cone (T
 * and every node it depends on, transitively), then the rest, each group in
 * its original order. The cone is closed under producers, so it is a valid
 * order by itself, and every other node only depends on nodes before it
 * (cone nodes moved up, the rest kept in order): a topological order still.
 * Nothing is computed differently, only when: the same bits. Nodes after T
 * (the AllReduce waits and the dense updates) do not move.
 *
 * Nodes without outputs (AllReduceStart, other pushes) whose inputs all
 * come from the cone join it, so they stay right after what they send
 * instead of moving down with the rest.
 *
 * A cone node with a subgraph may read outer values that are not its
 * inputs: that push is left where it is. */
#include "train.h"

#include <stdlib.h>

static int has_subgraph(const px_node *n) {
    for (int a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].kind == PX_ATTR_GRAPH) return 1;
    return 0;
}

/* Marks T's cone (by node id = position) in cone[]; 0 if it holds a node
 * with a subgraph. */
static int mark_cone(const px_graph *g, px_node *t, char *cone, int *stack) {
    int top = 0;
    cone[t->id] = 1;
    stack[top++] = t->id;
    while (top > 0) {
        const px_node *n = g->nodes[stack[--top]];
        if (has_subgraph(n)) return 0;
        for (int i = 0; i < n->n_inputs; i++) {
            const px_value *v = n->inputs[i];
            const px_node *p = v ? v->producer : NULL;
            if (!p || p->dead || cone[p->id]) continue;
            cone[p->id] = 1;
            stack[top++] = p->id;
        }
    }
    return 1;
}

static int no_outputs(const px_node *n) {
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i]) return 0;
    return 1;
}

/* The nodes without outputs before pos whose producers are all in the cone. */
static void add_senders(const px_graph *g, int pos, char *cone) {
    for (int i = 0; i < pos; i++) {
        const px_node *n = g->nodes[i];
        if (cone[i] || n->dead || !no_outputs(n)) continue;
        int fed = 1;
        for (int k = 0; k < n->n_inputs && fed; k++) {
            const px_node *p = n->inputs[k] ? n->inputs[k]->producer : NULL;
            fed = !p || p->dead || cone[p->id];
        }
        cone[i] = (char)fed;
    }
}

static void hoist(px_graph *g, int pos, const char *cone, px_node **scratch) {
    int k = 0;
    for (int i = 0; i <= pos; i++)
        if (cone[i]) scratch[k++] = g->nodes[i];
    for (int i = 0; i <= pos; i++)
        if (!cone[i]) scratch[k++] = g->nodes[i];
    for (int i = 0; i <= pos; i++) {
        g->nodes[i] = scratch[i];
        g->nodes[i]->id = i;
    }
}

int px_hoist_pushes(px_graph *g, px_diag *d) {
    int n = g->n_nodes;
    for (int i = 0; i < n; i++) g->nodes[i]->id = i;
    char *cone = malloc((size_t)n + 1);
    int *stack = malloc(sizeof(int) * ((size_t)n + 1));
    px_node **scratch = malloc(sizeof(px_node *) * ((size_t)n + 1));
    if (!cone || !stack || !scratch) {
        free(cone);
        free(stack);
        free(scratch);
        return px_error(d, "out of memory scheduling the parameter-server pushes");
    }
    for (int i = 0; i < n; i++) {
        px_node *t = g->nodes[i];
        if (t->dead || t->op != PX_OP_PSPush) continue;
        for (int j = 0; j < n; j++) cone[j] = 0;
        if (!mark_cone(g, t, cone, stack)) continue;
        add_senders(g, i, cone);
        hoist(g, i, cone, scratch);
    }
    free(cone);
    free(stack);
    free(scratch);
    return 0;
}
