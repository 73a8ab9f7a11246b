/* Early pushes (part of px_pass_comm): a sparse variable's row gradients
 * are usually complete long before the end of the backward pass (the
 * output layer of a language model: right after the loss), but autodiff
 * emits the row-set accumulation (Reshape, Concat, GatherGrad) of every
 * variable at the end. The runtime hands a PSPush to the comm thread
 * (runtime/comm/sched/push_async.c), so the earlier it runs, the more of the
 * backward pass hides the push and the shards' answers to the next step's
 * pulls.
 *
 * For each PSPush T: the nodes that exist only for T (T's producers all of
 * whose results only T's chain reads, transitively) each move up to right
 * after the last producer of their inputs, in their order; every other
 * node keeps its place and order. A node moved up only passes nodes it
 * does not read, and its readers are all after it (T's chain, moved in
 * order, or T itself): a topological order still. Nothing is computed
 * differently, only when: the same bits. The forward pass, the AllReduce
 * starts, the loss and the nodes after T do not move, and nothing moves
 * above an AllReduce start that is ready where it would land.
 *
 * Nodes with a subgraph may read outer values that are not their inputs:
 * they are not moved. */
#include "train.h"

#include <stdlib.h>

static int has_subgraph(const px_node *n) {
    for (int a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].kind == PX_ATTR_GRAPH) return 1;
    return 0;
}

/* Every live reader of n's outputs is marked in mine[] (by node id). */
static int read_only_by(const px_node *n, const char *mine) {
    for (int i = 0; i < n->n_outputs; i++) {
        const px_value *v = n->outputs[i];
        for (int u = 0; v && u < v->n_uses; u++) {
            const px_node *r = v->uses[u].node;
            if (!r->dead && !mine[r->id]) return 0;
        }
    }
    return 1;
}

/* Marks T and the nodes that exist only for it (ids = positions). Walking
 * positions downwards from T sees every reader of a node before the node. */
static void mark_own(const px_graph *g, int pos, char *mine) {
    mine[pos] = 1;
    for (int i = pos - 1; i >= 0; i--) {
        const px_node *n = g->nodes[i];
        if (n->dead || has_subgraph(n) || n->op == PX_OP_PSPull) continue;
        int feeds = 0; /* reads of n by marked nodes make it a candidate */
        for (int k = 0; k < n->n_outputs && !feeds; k++) {
            const px_value *v = n->outputs[k];
            for (int u = 0; v && u < v->n_uses && !feeds; u++)
                feeds = !v->uses[u].node->dead && mine[v->uses[u].node->id];
        }
        if (feeds && read_only_by(n, mine)) mine[i] = 1;
    }
}

/* Moves node `from` up to position `to` (< from), shifting the ones between. */
static void move_up(px_graph *g, int from, int to) {
    px_node *n = g->nodes[from];
    for (int i = from; i > to; i--) {
        g->nodes[i] = g->nodes[i - 1];
        g->nodes[i]->id = i;
    }
    g->nodes[to] = n;
    n->id = to;
}

/* Where n moves: right after the last producer of its inputs, but after
 * every AllReduceStart on the way that is ready there too: a bucket that
 * could start first keeps its lead (the dense gradients' AllReduce is what
 * the step waits for at its end). */
static int target(const px_graph *g, const px_node *n) {
    int at = px_graph_after_producers(n->n_inputs, n->inputs);
    for (int i = at; i < n->id; i++) {
        const px_node *m = g->nodes[i];
        if (!m->dead && m->op == PX_OP_AllReduceStart &&
            px_graph_after_producers(m->n_inputs, m->inputs) <= at)
            at = i + 1;
    }
    return at;
}

int px_hoist_pushes(px_graph *g, px_diag *d) {
    int n = g->n_nodes;
    for (int i = 0; i < n; i++) g->nodes[i]->id = i;
    char *mine = malloc((size_t)n + 1);
    px_node **own = malloc(sizeof(px_node *) * ((size_t)n + 1));
    if (!mine || !own) {
        free(mine);
        free(own);
        return px_error(d, "out of memory scheduling the parameter-server pushes");
    }
    for (int i = 0; i < n; i++) {
        px_node *t = g->nodes[i];
        if (t->dead || t->op != PX_OP_PSPush) continue;
        for (int j = 0; j < n; j++) mine[j] = 0;
        mark_own(g, i, mine);
        int k = 0;
        for (int j = 0; j <= i; j++)
            if (mine[j]) own[k++] = g->nodes[j];
        /* In their order, so each one's producers have moved already. */
        for (int j = 0; j < k; j++) {
            int at = target(g, own[j]);
            if (at < own[j]->id) move_up(g, own[j]->id, at);
        }
    }
    free(mine);
    free(own);
    return 0;
}
