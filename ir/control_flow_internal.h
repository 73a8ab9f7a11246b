/* The Loop rewriters px_lower_control_flow (control_flow.c) tries in turn;
 * they read body graphs through control_flow_query.h. Not a public API. */
#ifndef PX_CONTROL_FLOW_INTERNAL_H
#define PX_CONTROL_FLOW_INTERNAL_H

#include "control_flow_query.h"

/* Unrolls the Loop node n of g when its trip count is a compile-time
 * constant (at most PXCF_MAX_UNROLL iterations) and its condition stays
 * true: 1 done, 0 not that kind of loop (g untouched), -1 error. */
#define PXCF_MAX_UNROLL 4096
int pxcf_unroll_loop(px_graph *g, px_node *n, px_diag *d);

/* Rewrites the Loop node n of g if it is PyTorch's nn.EmbeddingBag: 1 done,
 * 0 not that pattern (g untouched), -1 error. */
int pxcf_embedding_bag(px_graph *g, px_node *n, px_diag *d);

#endif
