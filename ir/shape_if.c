/* Shape function of If (control_flow.h): the outputs are the outputs of the
 * branch the condition picks, inferred with the enclosing graph's current
 * shapes. Before the condition is constant (it usually becomes one while
 * folding, e.g. PyTorch's `squeeze(1)` tests the dim at run time) both
 * branches are inferred; the dtypes must agree and dims that differ stay
 * unknown, so the nodes after the If still see a dtype and rank. */
#include "control_flow_query.h"
#include "shape_infer.h"
#include "shape_util.h"

#include <stdlib.h>

/* Infers branch b after copying the captured outer values' types in. Errors
 * go to d. */
static int infer_branch(px_graph *b, px_diag *d) {
    for (int i = 0; i < b->n_values; i++) {
        px_value *v = b->values[i];
        if (v->kind != PX_VALUE_OUTER) continue;
        const px_value *o = pxcf_outer(b, v);
        if (!o)
            return px_error(d, "branch '%s': captured value '%s' is not defined", b->name, v->name);
        v->dtype = o->dtype;
        v->shape = o->shape;
    }
    return px_infer_shapes(b, d);
}

static px_graph *branch(const px_node *n, const char *name) {
    const px_attr *a = px_node_attr(n, name);
    return a && a->kind == PX_ATTR_GRAPH ? a->g : NULL;
}

/* Where two shapes differ the result is unknown. */
static px_shape merge(const px_shape *a, const px_shape *b) {
    if (a->rank != b->rank) return px_shape_unknown();
    px_shape s = *a;
    for (int i = 0; i < s.rank; i++)
        if (!px_su_dim_same(a, i, b, i)) {
            s.dims[i] = -1;
            s.sym_id[i] = 0;
        }
    return s;
}

int px_shape_if_branch(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_graph *then_b = branch(n, "then_branch"), *else_b = branch(n, "else_branch");
    if (n->n_inputs != 1 || !n->inputs[0])
        return px_su_error(d, n, "needs exactly one input, the condition");
    if (!then_b || !else_b)
        return px_su_error(d, n, "needs the graph attributes then_branch and else_branch");
    if (then_b->n_outputs != n->n_outputs || else_b->n_outputs != n->n_outputs)
        return px_su_error(d, n, "has %d outputs, its branches %d and %d", n->n_outputs,
                           then_b->n_outputs, else_b->n_outputs);
    int64_t cond;
    if (pxcf_const_ints(g, n->inputs[0], &cond, 1) == 1) {
        px_graph *b = cond ? then_b : else_b;
        if (infer_branch(b, d))
            return px_su_error(d, n, "in its %s branch", cond ? "then" : "else");
        for (int i = 0; i < n->n_outputs; i++)
            if (px_su_set(n, i, b->outputs[i]->dtype, &b->outputs[i]->shape, d)) return -1;
        return 0;
    }
    /* Not constant yet: a branch that cannot be inferred now leaves the
     * outputs unknown rather than failing; folding may still decide. */
    px_diag *scratch = malloc(sizeof *scratch);
    if (!scratch) abort();
    px_diag_init(scratch);
    int ok = infer_branch(then_b, scratch) == 0 && infer_branch(else_b, scratch) == 0;
    free(scratch);
    for (int i = 0; ok && i < n->n_outputs; i++) {
        const px_value *a = then_b->outputs[i], *b = else_b->outputs[i];
        if (a->dtype != b->dtype) continue;
        px_shape s = merge(&a->shape, &b->shape);
        if (px_su_set(n, i, a->dtype, &s, d)) return -1;
    }
    return 0;
}
