/* Einsum as existing ops (passes/einsum_rewrite.c). */
#ifndef PX_EINSUM_REWRITE_H
#define PX_EINSUM_REWRITE_H

#include "graph.h"

/* Rewrites every Einsum of a folded graph (static shapes) into Transpose,
 * Reshape, Mul and ReduceSum, so that autodiff, lowering and fusion need
 * nothing of their own for it. Returns the number rewritten, or -1. */
int px_pass_einsum_rewrite(px_graph *g, px_diag *d);

#endif
