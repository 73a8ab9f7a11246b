/* Sparsity analysis: which trainable variables are sparse (read only through
 * row look-ups) and which are dense. design.md §4:
 *
 *   A variable is sparse iff it has at least one use and every use is input 0
 *   (data) of a Gather on axis 0 (after normalising a negative axis) whose
 *   indices (input 1) are not compile-time constants. Otherwise it is dense.
 *
 * Indices are compile-time constants when they are a constant, a non-float
 * initializer, or computed only from such values: Constant nodes, shape
 * arithmetic, Shape/Size of static dims, and Gather(Shape(x), constant) of
 * static dims of x. This matters before folding (the "imported" stage), where
 * e.g. Range(0, Shape(tokens)[1]) feeding a position embedding must count as
 * constant although the batch dim of tokens is still symbolic. After folding
 * all such arithmetic is already constant. A variable that is also a graph
 * output is dense. */
#ifndef PX_SPARSITY_H
#define PX_SPARSITY_H

#include "graph.h"
#include "px_enums.h" /* px_var_class */

typedef struct px_var_info {
    px_value *value; /* the initializer (owned by the graph) */
    px_var_class cls;
    int n_gathers; /* uses that are row look-ups (all of them when sparse) */
    /* Why a variable is dense, for listings: a static string, e.g.
     * "read by a non-Gather node", or NULL when sparse. */
    const char *dense_reason;
    const px_node *dense_node; /* the use that made it dense, or NULL */
} px_var_info;

/* Classifies every trainable variable of g: every INITIALIZER with a float
 * dtype, in g->inits order. Its one caller is px_plan_variables (var_plan.h),
 * which drops the frozen ones; every other stage reads that plan.
 * *out is malloc'd (free() it; NULL when *n == 0). Returns 0, or -1 with an
 * error in d (out of memory). */
int px_classify_variables(const px_graph *g, px_var_info **out, int *n, px_diag *d);

#endif
