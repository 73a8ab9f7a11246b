/* Runs each node's shape function (op table) in graph order. */
#ifndef PX_SHAPE_INFER_H
#define PX_SHAPE_INFER_H

#include "graph.h"

/* Infers dtype/shape of every node output. Stops at the first failing node
 * (its error names the node). Unknown ops are an error. */
int px_infer_shapes(px_graph *g, px_diag *d);
/* Same for one node. Whatever dtype/shape an output held before the call
 * counts as declared (by the model or an earlier inference): a pass that
 * changes a node's attributes or input shapes so that its output changes
 * must reset that output to PX_UNDEFINED / px_shape_unknown() first.
 * Refinement (inputs becoming constant, unknown dims becoming known) is fine. */
int px_infer_node(px_graph *g, px_node *n, px_diag *d);

#endif
