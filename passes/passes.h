/* Graph rewrites. Every pass is `int px_pass_NAME(px_graph *, ..., px_diag *)`
 * returning 0 on success, -1 with an error in the diag. */
#ifndef PX_PASSES_H
#define PX_PASSES_H

#include "graph.h"

/* Symbolic dim bindings from the command line. */
typedef struct px_dim_binding {
    const char *name; /* dim_param name */
    int64_t value;
} px_dim_binding;

typedef struct px_shape_binding {
    const char *input; /* graph input name */
    px_shape shape;    /* fully static */
} px_shape_binding;

typedef struct px_bindings {
    int64_t batch; /* >0: binds the leading dim of inputs when symbolic/unknown; 0 = unset */
    int n_dims;
    px_dim_binding *dims;
    int n_shapes;
    px_shape_binding *shapes;
} px_bindings;

/* Binds graph input shapes (explicit --shape first, then --dim names, then
 * --batch for a symbolic leading dim). Error when a binding names nothing,
 * contradicts a static dim, or an input stays non-static (naming it). */
int px_pass_bind_shapes(px_graph *g, const px_bindings *b, px_diag *d);

/* A training program reads its samples along dim 0 of every input: error
 * unless the binding found that batch (g->batch > 0), naming the inputs
 * whose leading dims disagree (or the scalar input). */
int px_require_batch(const px_graph *g, px_diag *d);

/* Evaluates nodes whose inputs are all compile-time constants (not trainable
 * initializers) and Shape/Size of static values, replacing them with
 * constants; repeats to a fixed point. Needs shapes inferred. */
int px_pass_fold_constants(px_graph *g, px_diag *d);

/* Removes nodes whose outputs reach no graph output, and unused constants. */
int px_pass_dce(px_graph *g, px_diag *d);

/* Debug check between passes: px_graph_verify(g) when built with
 * -DPX_VERIFY_PASSES (debug builds) or run with PX_VERIFY_PASSES=1 in the
 * environment (the tests), else nothing. On failure the error names the pass
 * that left the graph inconsistent. Linear in the graph's size. */
int px_verify_after(const px_graph *g, const char *pass, px_diag *d);

/* The "folded" stage: bind, infer, fold, DCE, infer again, then check that every
 * value has a static shape (error naming the first that has not). */
int px_pipeline_fold(px_graph *g, const px_bindings *b, px_diag *d);

/* Error naming the first live node whose op is marked PX_F_COMPILE_TIME
 * (ir/ops.def): the folded stage rewrites or refuses every such node, so one
 * left over is a compiler bug. Run by px_pipeline_fold. */
int px_check_compile_time_ops(const px_graph *g, px_diag *d);

#endif
