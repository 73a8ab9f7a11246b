/* The rewrites every tensor-parallel split shares (Megatron pairs in
 * tensor_parallel.c, attention blocks in tp_attention.c, the vocabulary
 * projection in tp_vocab.c): which weights may be split and along which
 * axis, reading an operand split or through TPSlice, the group sum after a
 * row-split product and the group copy before a column-split one. Kept
 * apart so that the three passes call down into it, never into each other. */
#include "tp_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

px_value *px_tp_transposed(const px_value *w) {
    const px_node *t = w ? w->producer : NULL;
    if (!t || t->op != PX_OP_Transpose || t->n_inputs != 1 || t->inputs[0]->shape.rank != 2)
        return NULL;
    int n = 0;
    const int64_t *perm = px_attr_ints(t, "perm", &n);
    return !perm || (n == 2 && perm[0] == 1 && perm[1] == 0) ? t->inputs[0] : NULL;
}

/* The variable a weight operand w stores split: w itself, or v when w is
 * Transpose(v) read once (PyTorch's export of a Linear without constant
 * folding) and v a variable read by that Transpose alone; NULL when
 * neither. */
static px_value *stored_source(const px_train_plan *plan, px_value *w) {
    px_value *v = px_tp_transposed(w);
    if (v && w->n_uses == 1 && !w->is_output && v->n_uses == 1 && px_plan_var_of(plan, v) >= 0)
        return v;
    return w;
}

int px_tp_weight_var(const px_train_plan *plan, const px_value *w) {
    return px_plan_var_of(plan, stored_source(plan, (px_value *)w));
}

int px_tp_splittable_weight(const px_train_plan *plan, const px_value *w, const char **why) {
    w = w ? stored_source(plan, (px_value *)w) : NULL;
    int v = w ? px_plan_var_of(plan, w) : -1;
    if (v < 0) return *why = "its weight is not a trained initializer", -1;
    const px_train_var *tv = &plan->vars[v];
    if (tv->cls != PX_VAR_DENSE) return *why = "its weight is not dense", -1;
    if (w->shape.rank != 2 || w->dtype != PX_F32)
        return *why = "its weight is not a 2-D float matrix", -1;
    if (w->n_uses != 1) return *why = "its weight has other uses", -1;
    if (tv->tp_split) return *why = "its weight is already split", -1;
    return v;
}

int px_tp_weight_axis(const px_node *n, int out, const char **why) {
    if (n->op == PX_OP_Gemm && px_attr_int(n, "transA", 0))
        return *why = "Gemm with transA is not supported", -1;
    int trans_b = n->op == PX_OP_Gemm && px_attr_int(n, "transB", 0);
    return out ? (trans_b ? 0 : 1) : (trans_b ? 1 : 0);
}

/* A value whose type the shape inference at the end of the pass sets. */
static px_value *new_value(px_graph *g, const char *name) {
    px_shape unknown = px_shape_unknown();
    return px_graph_new_value(g, name, PX_UNDEFINED, &unknown);
}

/* A node of op on x with one output; sections > 1: TPSlice's parts. */
static px_value *add_tp_node(px_graph *g, const char *op, const char *name, px_value *x, int tp,
                             int axis, int64_t sections, px_diag *d) {
    char vname[300];
    snprintf(vname, sizeof vname, "%s.tp", x->name);
    px_value *y = new_value(g, vname);
    px_node *n = y ? px_graph_add_node(g, op, PX_DOMAIN_PARALLAX, name, 1, &x, 1, &y) : NULL;
    if (!n) {
        px_error(d, "out of memory in the tensor-parallel pass");
        return NULL;
    }
    px_node_set_attr_int(n, "tp", tp);
    if (axis >= 0) px_node_set_attr_int(n, "axis", axis);
    if (sections > 1) px_node_set_attr_int(n, "sections", sections);
    return y;
}

/* Input i of n read through TPSlice on axis. */
static int slice_input(px_graph *g, px_node *n, int i, int axis, int64_t sections, int tp,
                       px_diag *d) {
    char name[300];
    snprintf(name, sizeof name, "tp/slice/%s/%s", n->name, n->inputs[i]->name);
    px_value *s = add_tp_node(g, "TPSlice", name, n->inputs[i], tp, axis, sections, d);
    if (!s) return -1;
    px_node_set_input(n, i, s);
    return 0;
}

/* A variable stored split holds one slab (px_tp_stored; the comm pass
 * averages its gradient over the ranks holding the same slab), of each of
 * its sections when it has several: the slab is then what TPSlice with
 * `sections` would make of the whole. */
int px_tp_split_input(px_graph *g, px_train_plan *plan, px_node *n, int i, int axis,
                      int64_t sections, int tp, px_diag *d) {
    px_value *w = stored_source(plan, n->inputs[i]);
    int v = px_plan_var_of(plan, w);
    if (v < 0 || w->n_uses != 1 || px_tp_stored(&plan->vars[v]))
        return slice_input(g, n, i, axis, sections, tp, d);
    if (w != n->inputs[i]) {
        /* Transpose(w): its axis `axis` is w's other one; the Transpose's
         * output narrows, inferred again at the end of the pass. */
        px_value *t = n->inputs[i];
        t->dtype = PX_UNDEFINED;
        t->shape = px_shape_unknown();
        axis = 1 - axis;
    }
    px_train_var *tv = &plan->vars[v];
    tv->tp_full = w->shape;
    tv->tp_axis = axis;
    tv->tp_sections = (int)sections;
    w->shape.dims[axis] /= tp;
    return 0;
}

int px_tp_sum_second(px_graph *g, px_node *second, int tp, px_diag *d) {
    char name[300];
    px_value *y = second->outputs[0];
    px_value *bias = second->op == PX_OP_Gemm && second->n_inputs > 2 ? second->inputs[2] : NULL;
    snprintf(name, sizeof name, "%s.tp_sum", y->name);
    px_value *sum = new_value(g, name), *result = sum;
    if (bias) {
        snprintf(name, sizeof name, "%s.tp_biased", y->name);
        result = new_value(g, name);
    }
    if (!sum || !result) return px_error(d, "out of memory in the tensor-parallel pass");
    px_value_replace_uses(g, y, result);
    snprintf(name, sizeof name, "tp/allreduce/%s", second->name);
    px_node *n = px_graph_add_node(g, "TPAllReduce", PX_DOMAIN_PARALLAX, name, 1, &y, 1, &sum);
    if (!n) return px_error(d, "out of memory in the tensor-parallel pass");
    px_node_set_attr_int(n, "tp", tp);
    if (!bias) return 0;
    px_node_set_input(second, 2, NULL);
    px_value *add_in[2] = {sum, bias};
    snprintf(name, sizeof name, "tp/bias/%s", second->name);
    if (!px_graph_add_node(g, "Add", "", name, 2, add_in, 1, &result))
        return px_error(d, "out of memory in the tensor-parallel pass");
    return 0;
}

int px_tp_copy_input(px_graph *g, px_node *first, int tp, px_diag *d) {
    char name[300];
    snprintf(name, sizeof name, "tp/copy/%s", first->name);
    px_value *x = add_tp_node(g, "TPCopy", name, first->inputs[0], tp, -1, 1, d);
    if (!x) return -1;
    px_node_set_input(first, 0, x);
    return 0;
}

const char *px_tp_note(px_train_plan *plan, const char *fmt, ...) {
    char text[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    char **notes = realloc(plan->tp_notes, (size_t)(plan->n_tp_notes + 1) * sizeof *notes);
    if (!notes) return NULL;
    plan->tp_notes = notes;
    size_t len = strlen(text) + 1;
    char *copy = malloc(len);
    if (!copy) return NULL;
    memcpy(copy, text, len);
    return notes[plan->n_tp_notes++] = copy;
}
