/* One walk for the local rewrite passes (stable_rewrite, einsum_rewrite). */
#ifndef PX_NODE_REWRITE_H
#define PX_NODE_REWRITE_H

#include "graph.h"

/* Calls fn on every live node whose op is `op`, in graph order. While fn
 * runs, node ids equal positions (fn may insert nodes at n->id + 1). Ids are
 * renumbered only after fn changed the graph, so the walk stays linear in
 * the graph size when rewrites are rare (renumbering before every node made
 * a 300k-node chain take minutes). fn returns < 0 on error (diagnostic in
 * d), 0 when it left the node alone, > 0 for a rewrite. The graph is
 * compacted when anything changed. Returns the number of rewrites, or -1. */
int px_rewrite_nodes(px_graph *g, px_op op, int (*fn)(px_graph *, px_node *, px_diag *),
                     px_diag *d);

#endif
