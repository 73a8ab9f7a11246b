/* Numerically stable forms of exported patterns (passes/stable_rewrite.c). */
#ifndef PX_STABLE_REWRITE_H
#define PX_STABLE_REWRITE_H

#include "graph.h"

/* Log(Sigmoid(x)) -> -Softplus(-x), Log(1 - Sigmoid(x)) -> -Softplus(x),
 * Log(Softmax(x)) -> LogSoftmax(x), on a folded graph (static shapes).
 * Returns the number of rewrites, or -1 on error. */
int px_pass_stable_rewrite(px_graph *g, px_diag *d);

#endif
