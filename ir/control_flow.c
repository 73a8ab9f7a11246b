/* px_lower_control_flow (control_flow.h): If with a constant condition is
 * inlined, Loops that are nn.EmbeddingBag are rewritten
 * (control_flow_embedding_bag.c), Loops with a constant trip count are
 * unrolled (control_flow_unroll.c), and every other control-flow node is
 * refused by name. */
#include "control_flow_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Inlining may expose more If nodes (a branch holding an If); the total is
 * bounded so a hostile model cannot make this run for ever. */
#define MAX_INLINED 100000

/* ---- If with a constant condition ---- */

/* The branch value v as a value of g: outer captures resolve by name,
 * constants are copied, node outputs come from the copied nodes. */
static px_value *map_value(px_graph *g, px_graph *branch, px_value **map, px_value *v, px_diag *d) {
    if (!v) return NULL;
    if (map[v->id]) return map[v->id];
    px_value *m = NULL;
    if (v->kind == PX_VALUE_OUTER) {
        m = pxcf_outer(branch, v);
    } else if (px_value_is_const(v)) {
        px_tensor *t = px_tensor_clone(v->data, d);
        if (t) m = px_graph_add_constant(g, v->name, t);
    } else {
        m = px_graph_new_value(g, v->name, v->dtype, &v->shape);
    }
    map[v->id] = m;
    return m;
}

static int inline_branch(px_graph *g, px_node *n, px_graph *branch, px_diag *d) {
    char buf[256];
    if (branch->n_outputs != n->n_outputs)
        return px_error(d, "node %s: its branch has %d outputs, the If %d",
                        px_node_label(n, buf, sizeof buf), branch->n_outputs, n->n_outputs);
    px_value **map = calloc((size_t)branch->n_values + 1, sizeof *map);
    if (!map) abort();
    int rc = -1;
    /* Branch outputs made by a branch node become the If's own output values,
     * so names the rest of the model uses stay as they are. */
    for (int k = 0; k < branch->n_outputs; k++) {
        px_value *bo = branch->outputs[k];
        if (bo->producer && !map[bo->id] && n->outputs[k]) map[bo->id] = n->outputs[k];
    }
    int n_out = n->n_outputs;
    px_value **outs = calloc((size_t)n_out + 1, sizeof *outs);
    if (!outs) abort();
    for (int k = 0; k < n_out; k++) outs[k] = n->outputs[k];
    int pos = 0;
    while (pos < g->n_nodes && g->nodes[pos] != n) pos++;
    px_graph_remove_node(g, n);
    pos++; /* the branch's nodes go where the If was */
    for (int i = 0; i < branch->n_nodes; i++) {
        px_node *bn = branch->nodes[i];
        if (bn->dead) continue;
        px_value **ins = calloc((size_t)bn->n_inputs + 1, sizeof *ins);
        px_value **bouts = calloc((size_t)bn->n_outputs + 1, sizeof *bouts);
        if (!ins || !bouts) abort();
        int bad = 0;
        for (int j = 0; j < bn->n_inputs; j++)
            if (bn->inputs[j] && !(ins[j] = map_value(g, branch, map, bn->inputs[j], d))) bad = 1;
        for (int j = 0; j < bn->n_outputs; j++)
            if (bn->outputs[j] && !(bouts[j] = map_value(g, branch, map, bn->outputs[j], d)))
                bad = 1;
        if (!bad) {
            px_node *c = px_graph_insert_node(g, pos++, bn->op_type, bn->domain, bn->name,
                                              bn->n_inputs, ins, bn->n_outputs, bouts);
            /* The attributes move over; nested subgraphs now hang off g. */
            c->attrs = bn->attrs;
            c->n_attrs = bn->n_attrs;
            bn->attrs = NULL;
            bn->n_attrs = 0;
            for (int j = 0; j < c->n_attrs; j++) {
                if (c->attrs[j].g) c->attrs[j].g->parent = g;
                for (int k = 0; c->attrs[j].graphs && k < c->attrs[j].n; k++)
                    c->attrs[j].graphs[k]->parent = g;
            }
        }
        free(ins);
        free(bouts);
        if (bad) {
            px_error(d, "node %s: cannot inline its branch: value '%s' is not defined",
                     px_node_label(bn, buf, sizeof buf), bn->name);
            goto cleanup;
        }
    }
    /* Outputs that are captures or constants: an Identity into the If output. */
    for (int k = 0; k < n_out; k++) {
        px_value *bo = branch->outputs[k];
        if (!outs[k] || map[bo->id] == outs[k]) continue;
        px_value *src = map_value(g, branch, map, bo, d);
        if (!src) {
            px_error(d, "If output '%s': its branch output '%s' is not defined", outs[k]->name,
                     bo->name);
            goto cleanup;
        }
        char name[300];
        snprintf(name, sizeof name, "%s/Identity", outs[k]->name);
        px_graph_insert_node(g, pos++, "Identity", "", name, 1, &src, 1, &outs[k]);
    }
    rc = 0;
cleanup:
    free(outs);
    free(map);
    return rc;
}

static int lower_if(px_graph *g, px_node *n, px_diag *d) {
    int64_t cond;
    if (n->n_inputs != 1 || pxcf_const_ints(g, n->inputs[0], &cond, 1) != 1) return 0;
    /* Bool constants read as integers 0 / 1 too. */
    const px_attr *a = px_node_attr(n, cond ? "then_branch" : "else_branch");
    if (!a || a->kind != PX_ATTR_GRAPH || !a->g) return 0;
    return inline_branch(g, n, a->g, d) ? -1 : 1;
}

/* 0 when v certainly varies at run time (it depends on the data of a graph
 * input or a weight, not just on shapes), so an If on it never folds; 1 when
 * it may fold once shapes are bound. */
static int may_fold(const px_graph *g, const px_value *v, int depth, int *budget) {
    /* too deep or too wide to tell (shared subexpressions are revisited):
     * let folding decide */
    if (!v || depth > 64 || --*budget < 0) return 1;
    const px_value *o = pxcf_outer(g, (px_value *)v);
    if (!o) return 0;
    if (px_value_is_const(o)) return o->kind == PX_VALUE_CONSTANT || !px_dtype_is_float(o->dtype);
    const px_node *p = o->producer;
    if (!p) return 0; /* a graph input */
    if (pxcf_is_op(p, "Shape") || pxcf_is_op(p, "Size")) return 1;
    for (int i = 0; i < p->n_inputs; i++)
        if (p->inputs[i] && !may_fold(g, p->inputs[i], depth + 1, budget)) return 0;
    return 1;
}

static int refuse(const px_node *n, px_diag *d) {
    char buf[256];
    if (pxcf_is_op(n, "If"))
        return px_error(d,
                        "unsupported operator use in node %s: its condition '%s' is not a "
                        "compile-time constant, and only an If whose branch is known when "
                        "compiling can be compiled",
                        px_node_label(n, buf, sizeof buf),
                        n->n_inputs > 0 && n->inputs[0] ? n->inputs[0]->name : "");
    return px_error(d,
                    "unsupported operator use in node %s: a Loop compiles when it is PyTorch's "
                    "nn.EmbeddingBag (a loop over bags that slices the indices, gathers table "
                    "rows and sums, averages or takes their max), or when its trip count is a "
                    "constant of at most %d and its condition stays true, so that it unrolls; "
                    "this Loop is neither",
                    px_node_label(n, buf, sizeof buf), PXCF_MAX_UNROLL);
}

/* Nesting depth of g's subgraphs (bounded: past the limit it stops counting). */
static int subgraph_depth(const px_graph *g, int depth) {
    if (depth > PX_CONTROL_FLOW_MAX_DEPTH) return depth;
    int deepest = depth;
    for (int i = 0; i < g->n_nodes; i++)
        for (int j = 0; j < g->nodes[i]->n_attrs; j++) {
            const px_attr *a = &g->nodes[i]->attrs[j];
            if (a->g) {
                int k = subgraph_depth(a->g, depth + 1);
                if (k > deepest) deepest = k;
            }
            for (int k = 0; a->graphs && k < a->n; k++) {
                int m = subgraph_depth(a->graphs[k], depth + 1);
                if (m > deepest) deepest = m;
            }
            if (deepest > PX_CONTROL_FLOW_MAX_DEPTH) return deepest;
        }
    return deepest;
}

/* Counts (and with report, lists) the nodes inside g's subgraphs whose op is
 * not in the op table: the importer checked only the main graph's nodes. */
static int unknown_in_bodies(const px_graph *g, const char *owner, int depth, int report,
                             px_diag *d) {
    int count = 0;
    char buf[256];
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        if (n->dead) continue;
        if (owner && n->op == PX_OP_UNKNOWN && !px_is_control_flow_op(n->op_type, n->domain)) {
            count++;
            if (report)
                px_note(d, "node %s inside the body of '%s': not in the op table",
                        px_node_label(n, buf, sizeof buf), owner);
        }
        if (depth >= PX_CONTROL_FLOW_MAX_DEPTH) continue;
        for (int j = 0; j < n->n_attrs; j++) {
            const px_attr *a = &n->attrs[j];
            if (a->g) count += unknown_in_bodies(a->g, n->name, depth + 1, report, d);
            for (int k = 0; a->graphs && k < a->n; k++)
                count += unknown_in_bodies(a->graphs[k], n->name, depth + 1, report, d);
        }
    }
    return count;
}

int px_lower_control_flow(px_graph *g, int flags, px_diag *d) {
    if (subgraph_depth(g, 0) > PX_CONTROL_FLOW_MAX_DEPTH)
        return px_error(d, "the model nests subgraphs (If/Loop bodies) more than %d deep",
                        PX_CONTROL_FLOW_MAX_DEPTH);
    int unknown = flags & PX_CF_ALLOW_UNSUPPORTED ? 0 : unknown_in_bodies(g, NULL, 0, 0, d);
    if (unknown) {
        px_error(d, "unsupported operators in the If/Loop bodies: %d node%s", unknown,
                 unknown == 1 ? "" : "s");
        unknown_in_bodies(g, NULL, 0, 1, d);
        return -1;
    }
    int inlined = 0, failed = 0;
    /* Nodes appended by a rewrite are visited too (n_nodes grows). */
    for (int i = 0; i < g->n_nodes; i++) {
        px_node *n = g->nodes[i];
        if (n->dead || !px_is_control_flow_op(n->op_type, n->domain)) continue;
        int r = pxcf_is_op(n, "If") ? lower_if(g, n, d) : pxcf_embedding_bag(g, n, d);
        if (r == 0 && pxcf_is_op(n, "Loop")) r = pxcf_unroll_loop(g, n, d);
        if (r < 0) return -1;
        if (r == 0 && pxcf_is_op(n, "If") && (flags & PX_CF_DEFER_IF) && n->n_inputs == 1 &&
            may_fold(g, n->inputs[0], 0, &(int){10000}))
            continue;
        if (r > 0) {
            if (++inlined > MAX_INLINED)
                return px_error(d, "the model's If/Loop nodes expand to more than %d rewrites",
                                MAX_INLINED);
            continue;
        }
        if (!(flags & PX_CF_ALLOW_UNSUPPORTED)) {
            refuse(n, d);
            failed++;
        }
    }
    if (failed) return -1;
    if (!inlined) return 0;
    px_graph_compact(g);
    return px_graph_toposort(g, d) || px_graph_verify(g, d) ? -1 : inlined;
}
