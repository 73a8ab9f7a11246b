/* Constant folding: evaluates every node whose result is known at compile
 * time and turns its outputs into constants, so exported shape arithmetic
 * (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, ConstantOfShape, Range...)
 * disappears once the input shapes are bound. */
#include "const_eval.h"
#include "passes.h"
#include "shape_infer.h"

#include <stdlib.h>
#include <string.h>

/* A float initializer is a weight: training changes it, so nothing computed
 * from it is a compile-time constant. Integer/bool initializers and folded
 * constants never change. */
static int value_is_foldable_const(const px_value *v) {
    if (!px_value_is_const(v)) return 0;
    return !(v->kind == PX_VALUE_INITIALIZER && px_dtype_is_float(v->dtype));
}

/* Nodes that must stay even with constant inputs. */
static int node_may_fold(const px_node *n) {
    if (n->op == PX_OP_UNKNOWN || n->dead) return 0;
    if (px_op_table[n->op].flags & PX_F_RANDOM) return 0;
    return px_const_eval_supports(n->op);
}

/* Collects the evaluator's inputs: constant contents, or for Shape/Size of a
 * static value a data-less descriptor in *desc. Returns 0 when n cannot fold. */
static int gather_inputs(const px_node *n, const px_tensor **inputs, px_tensor *desc) {
    int shape_only = n->op == PX_OP_Shape || n->op == PX_OP_Size;
    for (int i = 0; i < n->n_inputs; i++) {
        const px_value *v = n->inputs[i];
        inputs[i] = NULL;
        if (!v) continue;
        if (shape_only && i == 0 && px_shape_is_static(&v->shape)) {
            memset(desc, 0, sizeof *desc);
            desc->dtype = v->dtype;
            desc->shape = v->shape;
            inputs[i] = desc;
            continue;
        }
        if (!value_is_foldable_const(v)) return 0;
        inputs[i] = v->data;
    }
    return 1;
}

/* The evaluator must agree with shape inference; disagreement is a bug in
 * one of them, and silently trusting either would miscompile. */
static int check_agrees(const px_node *n, const px_value *v, const px_tensor *t, px_diag *d) {
    char lb[256], s1[128], s2[128];
    if (v->dtype != PX_UNDEFINED && v->dtype != t->dtype)
        return px_error(d,
                        "constant folding of %s gave %s for output '%s', shape inference said %s",
                        px_node_label(n, lb, sizeof lb), px_dtype_name(t->dtype), v->name,
                        px_dtype_name(v->dtype));
    int same_rank = v->shape.rank < 0 || v->shape.rank == t->shape.rank;
    for (int i = 0; same_rank && v->shape.rank >= 0 && i < v->shape.rank; i++)
        if (v->shape.dims[i] >= 0 && v->shape.dims[i] != t->shape.dims[i]) same_rank = 0;
    if (!same_rank)
        return px_error(d,
                        "constant folding of %s gave shape %s for output '%s', shape inference "
                        "said %s",
                        px_node_label(n, lb, sizeof lb), px_shape_str(&t->shape, s1, sizeof s1),
                        v->name, px_shape_str(&v->shape, s2, sizeof s2));
    return 0;
}

/* Tries to fold n. Returns 1 if folded, 0 if not, -1 on error. */
static int fold_node(px_graph *g, px_node *n, px_diag *d) {
    int rc = -1;
    const px_tensor **inputs = calloc((size_t)n->n_inputs + 1, sizeof *inputs);
    px_tensor **outputs = calloc((size_t)n->n_outputs + 1, sizeof *outputs);
    px_tensor desc;
    if (!inputs || !outputs) {
        px_error(d, "out of memory folding constants");
        goto cleanup;
    }
    if (!gather_inputs(n, inputs, &desc)) {
        rc = 0;
        goto cleanup;
    }
    int st = px_const_eval_node(n, (const px_tensor *const *)inputs, outputs, d);
    if (st == PX_EVAL_ERROR) {
        char lb[256];
        px_note(d, "while folding constants at %s", px_node_label(n, lb, sizeof lb));
        goto cleanup;
    }
    if (st == PX_EVAL_NOT_FOLDABLE) {
        rc = 0;
        goto cleanup;
    }
    /* A node may declare more outputs than its op computes (hostile or
     * malformed models): leave such a node to the later passes, which report
     * it, rather than turning a missing result into a constant. */
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j] && !outputs[j]) {
            rc = 0;
            goto cleanup;
        }
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j] && check_agrees(n, n->outputs[j], outputs[j], d) != 0) goto cleanup;
    /* The output values become the constants in place: their names, uses and
     * graph-output slots stay as they are (a graph output keeps its name). */
    px_graph_remove_node(g, n);
    for (int j = 0; j < n->n_outputs; j++) {
        px_value *v = n->outputs[j];
        if (!v) continue;
        v->kind = PX_VALUE_CONSTANT;
        px_tensor_free(v->data);
        v->data = outputs[j];
        v->dtype = outputs[j]->dtype;
        v->shape = outputs[j]->shape;
        outputs[j] = NULL;
    }
    rc = 1;
cleanup:
    if (outputs)
        for (int j = 0; j < n->n_outputs; j++) px_tensor_free(outputs[j]);
    free(inputs);
    free(outputs);
    return rc;
}

/* One sweep in graph (topological) order: each node's shapes are refreshed
 * first, since earlier folds may have made its inputs constant or static. */
static int sweep(px_graph *g, int *changed, px_diag *d) {
    *changed = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        px_node *n = g->nodes[i];
        if (n->dead || n->op == PX_OP_UNKNOWN) continue;
        if (px_infer_node(g, n, d) != 0) return -1;
        if (!node_may_fold(n)) continue;
        int r = fold_node(g, n, d);
        if (r < 0) return -1;
        if (r > 0) *changed = 1;
    }
    return 0;
}

int px_pass_fold_constants(px_graph *g, px_diag *d) {
    /* A sweep in topological order already propagates folds forward; the
     * loop is the fixed-point guard (e.g. nodes not yet in order). */
    for (int round = 0; round < 1000; round++) {
        int changed;
        if (sweep(g, &changed, d) != 0) return -1;
        if (!changed) return 0;
    }
    return px_error(d, "constant folding did not reach a fixed point after 1000 sweeps");
}
