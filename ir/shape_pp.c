/* Shapes of the pipeline-parallel ops (ir/ops.def, passes/pipeline_parallel.c). */
#include "shape_util.h"

/* PPTransfer, PPBroadcast: the output is like the input. */
int px_shape_pp_same(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "data", d, &x)) return -1;
    return px_su_set(n, 0, x->dtype, &x->shape, d);
}
