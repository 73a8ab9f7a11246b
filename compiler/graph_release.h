/* The graph a parallaxc command is done with, freed or left to the exit. */
#ifndef PX_GRAPH_RELEASE_H
#define PX_GRAPH_RELEASE_H

#include "graph.h"

/* From now on the process exits once the command returns: graphs passed to
 * px_graph_release are no longer freed one object at a time. */
void px_graph_release_at_exit(void);

/* Frees g (NULL: nothing), unless px_graph_release_at_exit was called:
 * then g stays reachable from a static slot until the process exits. */
void px_graph_release(px_graph *g);

#endif
