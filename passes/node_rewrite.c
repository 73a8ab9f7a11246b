#include "node_rewrite.h"

static void number_nodes(px_graph *g) {
    for (int k = 0; k < g->n_nodes; k++) g->nodes[k]->id = k;
}

int px_rewrite_nodes(px_graph *g, px_op op, int (*fn)(px_graph *, px_node *, px_diag *),
                     px_diag *d) {
    int count = 0;
    number_nodes(g);
    for (int i = 0; i < g->n_nodes; i++) {
        px_node *n = g->nodes[i];
        if (n->dead || n->op != op) continue;
        int r = fn(g, n, d);
        if (r < 0) return -1;
        if (r > 0) {
            count++;
            number_nodes(g);
        }
    }
    if (count) px_graph_compact(g);
    return count;
}
