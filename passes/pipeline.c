/* The "folded" stage: bind the input shapes, fold the shape arithmetic
 * (inlining an If once its condition is constant)
 * away, drop what became dead, and insist that every remaining value has a
 * static shape — the later stages (autodiff, memory planning, codegen)
 * assume it. Ops that exist only at compile time (PX_F_COMPILE_TIME: If,
 * Einsum) are rewritten here or refused by their rewrite. */
#include "control_flow.h"
#include "einsum_rewrite.h"
#include "passes.h"
#include "shape_infer.h"
#include "stable_rewrite.h"

#include <stdlib.h>
#include <string.h>

static const char *role(const px_value *v, const px_graph *g, char *buf, size_t cap) {
    (void)g;
    switch (v->kind) {
    case PX_VALUE_INPUT: return "graph input";
    case PX_VALUE_INITIALIZER: return "initializer";
    case PX_VALUE_CONSTANT: return "constant";
    default: break;
    }
    if (v->producer) return px_node_label(v->producer, buf, cap);
    return "no producer";
}

static int check_static(const px_graph *g, px_diag *d) {
    for (int i = 0; i < g->n_values; i++) {
        const px_value *v = g->values[i];
        if (px_shape_is_static(&v->shape) && v->dtype != PX_UNDEFINED) continue;
        char sb[256], pb[256];
        px_error(d, "value '%s' has %s shape %s after folding (produced by %s)", v->name,
                 v->dtype == PX_UNDEFINED ? "an unknown dtype and" : "a non-static",
                 px_shape_str(&v->shape, sb, sizeof sb), role(v, g, pb, sizeof pb));
        px_note(d, "the compiler needs static shapes: bind symbolic input dims with --batch, "
                   "--dim NAME=N or --shape INPUT=AxB");
        return -1;
    }
    return 0;
}

int px_check_compile_time_ops(const px_graph *g, px_diag *d) {
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        if (n->dead || !(px_op_table[n->op].flags & PX_F_COMPILE_TIME)) continue;
        char lb[256];
        return px_error(d,
                        "internal error: node %s survived the folded stage, but op %s exists "
                        "only at compile time (no code is generated for it)",
                        px_node_label(n, lb, sizeof lb), px_op_name(n->op));
    }
    return 0;
}

int px_verify_after(const px_graph *g, const char *pass, px_diag *d) {
#ifndef PX_VERIFY_PASSES
    const char *on = getenv("PX_VERIFY_PASSES");
    if (!on || strcmp(on, "1") != 0) return 0;
#endif
    if (px_graph_verify(g, d) == 0) return 0;
    px_note(d, "the graph is inconsistent after the pass %s (PX_VERIFY_PASSES)", pass);
    return -1;
}

int px_pipeline_fold(px_graph *g, const px_bindings *b, px_diag *d) {
    if (px_pass_bind_shapes(g, b, d) != 0 || px_verify_after(g, "bind_shapes", d)) return -1;
    if (px_infer_shapes(g, d) != 0 || px_verify_after(g, "infer_shapes", d)) return -1;
    if (px_pass_fold_constants(g, d) != 0 || px_verify_after(g, "fold_constants", d)) return -1;
    /* An If whose condition folded (e.g. PyTorch's squeeze(1) tests a dim)
     * becomes its branch; that branch's shape arithmetic folds in turn. */
    int rewrites = px_lower_control_flow(g, 0, d);
    if (rewrites < 0 || px_verify_after(g, "lower_control_flow", d)) return -1;
    if (rewrites > 0 && (px_infer_shapes(g, d) != 0 || px_pass_fold_constants(g, d) != 0 ||
                         px_verify_after(g, "fold_constants", d)))
        return -1;
    /* log(sigmoid(x)) and friends, as exporters write them, overflow */
    if (px_pass_stable_rewrite(g, d) < 0 || px_verify_after(g, "stable_rewrite", d)) return -1;
    /* into ops with gradients */
    if (px_pass_einsum_rewrite(g, d) < 0 || px_verify_after(g, "einsum_rewrite", d)) return -1;
    if (px_pass_dce(g, d) != 0 || px_verify_after(g, "dce", d)) return -1;
    if (px_infer_shapes(g, d) != 0) return -1;
    if (px_check_compile_time_ops(g, d) != 0) return -1;
    return check_static(g, d);
}
