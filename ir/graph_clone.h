/* A deep copy of a top-level graph: same values (names, ids, kinds,
 * types, contents), nodes in the same order with the same attributes, and
 * the same inputs, outputs, initializers and model fields. */
#ifndef PX_GRAPH_CLONE_H
#define PX_GRAPH_CLONE_H

#include "graph.h"

/* 1 if px_graph_clone can copy g: a top-level graph whose value ids are
 * their positions, with no subgraph attributes and no tensor mapped from
 * external data (a copy would read such data into memory; loading the
 * model again maps it instead). */
int px_graph_clonable(const px_graph *g);
/* The copy, or NULL with an error in d (out of memory, or g not clonable). */
px_graph *px_graph_clone(const px_graph *g, px_diag *d);

#endif
