/* Many insertions into the middle of a graph's node order, in time linear
 * in the graph. px_graph_insert_node shifts the node array and renumbers
 * every node after the insertion point: a pass that inserts next to each
 * of n variables' nodes that way takes O(n^2). Between px_node_order_begin
 * and px_node_order_end, nodes are placed in a linked list instead (O(1)
 * each) and compared by order keys; _end writes the order back into
 * g->nodes (ids = positions again).
 *
 * While a session is open, g->nodes holds the new nodes at its end and node
 * ids are not positions: the pass must compare positions with
 * px_node_order_before and place nodes only through this API. */
#ifndef PX_NODE_ORDER_H
#define PX_NODE_ORDER_H

#include "graph.h"

typedef struct px_node_order px_node_order;

/* The order of g->nodes as it is. NULL when out of memory. */
px_node_order *px_node_order_begin(px_graph *g);
/* Creates a node as px_graph_insert_node does and places it immediately
 * before `at` (after == 0) or immediately after it (after == 1), as one
 * px_graph_insert_node at that moment would. at == NULL: at the very
 * front (after == 1) or the very end (after == 0). NULL when out of
 * memory. */
px_node *px_node_order_insert(px_node_order *o, px_node *at, int after, const char *op_type,
                              const char *domain, const char *name, int n_inputs,
                              px_value *const *inputs, int n_outputs, px_value *const *outputs);
/* Whether a comes before b in the current order. */
int px_node_order_before(const px_node_order *o, const px_node *a, const px_node *b);
/* The first node of the current order (dead ones included), or NULL; the
 * one after n, or NULL. */
px_node *px_node_order_first(const px_node_order *o);
px_node *px_node_order_next(const px_node_order *o, const px_node *n);
/* Writes the order into g->nodes, renumbers ids, frees the session. */
void px_node_order_end(px_node_order *o);

#endif
