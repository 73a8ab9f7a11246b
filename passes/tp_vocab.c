/* The output vocabulary projection split by columns over a tensor-parallel
 * group (--tp K), with a parallel softmax cross-entropy that never gathers
 * the full scores:
 *
 *   X ─TPCopy─▶ MatMul/Gemm (W [D, V], by columns) ─▶ (+ b [V], sliced)
 *     ─▶ (Reshape to [N, V/K]) ─▶ TPSoftmaxCrossEntropy (labels) ─▶ loss
 *
 * in place of SoftmaxCrossEntropyLoss (reduction mean or sum, no class
 * weights, its log-probabilities unused). Rank t computes the scores of
 * classes [t*V/K, (t+1)*V/K); the loss combines each row's maximum, sum of
 * exponentials and target score over the group (runtime/comm/sched/
 * tp_loss.c), the same on every rank of the group, and so does its
 * gradient; the gradient of X is summed over the group (TPCopy's). */
#include "tp_internal.h"

#include <stdio.h>
#include <string.h>

typedef struct vocab {
    px_node *linear, *bias_add, *reshape, *loss;
    int axis, bias_input;
} vocab;

static px_node *only_use(const px_value *v) {
    return v && !v->is_output && v->n_uses == 1 ? v->uses[0].node : NULL;
}

/* The pattern from linear; 1 with *why when it is not there. */
static int find_vocab(vocab *w, const px_train_plan *plan, px_node *linear, const char **why) {
    memset(w, 0, sizeof *w);
    w->linear = linear;
    w->axis = px_tp_weight_axis(linear, 1, why);
    if (w->axis < 0) return 1;
    int64_t v = linear->inputs[1]->shape.dims[w->axis];
    if (linear->op == PX_OP_Gemm && linear->n_inputs > 2 && linear->inputs[2])
        return *why = "a Gemm with a bias (not followed into a cross-entropy)", 1;
    px_value *y = linear->outputs[0];
    px_node *u = only_use(y);
    if (u && u->op == PX_OP_Add) {
        int j = u->inputs[0] == y ? 1 : 0;
        const px_value *b = u->inputs[j];
        if (u->inputs[1 - j] != y || !b || b->producer || b->shape.rank != 1 ||
            b->shape.dims[0] != v || (px_plan_var_of(plan, b) < 0 && !px_value_is_const(b)))
            return *why = "an Add after it that is not a bias of its columns", 1;
        w->bias_add = u;
        w->bias_input = j;
        y = u->outputs[0];
        u = only_use(y);
    }
    if (u && u->op == PX_OP_Reshape) {
        const px_value *out = u->outputs[0];
        if (!px_value_is_const(u->inputs[1]) || out->shape.rank != 2 || out->shape.dims[1] != v ||
            y->shape.dims[y->shape.rank - 1] != v)
            return *why = "a Reshape after it that does not keep its columns last", 1;
        w->reshape = u;
        y = u->outputs[0];
        u = only_use(y);
    }
    if (!u || u->op != PX_OP_SoftmaxCrossEntropyLoss || u->inputs[0] != y)
        return *why = "its output does not feed a SoftmaxCrossEntropyLoss alone", 1;
    const char *red = px_attr_string(u, "reduction", "mean");
    if (y->shape.rank != 2 || (u->n_inputs > 2 && u->inputs[2]) ||
        (u->n_outputs > 1 && u->outputs[1] && u->outputs[1]->n_uses) ||
        (strcmp(red, "mean") && strcmp(red, "sum")))
        return *why = "a cross-entropy with class weights, log-probabilities, more than 2 "
                      "dims or no reduction",
               1;
    w->loss = u;
    return 0;
}

static int oom(px_diag *d) {
    return px_error(d, "out of memory in the tensor-parallel pass");
}

static int rewrite(px_graph *g, px_train_plan *plan, vocab *w, int tp, px_diag *d) {
    plan->vars[px_plan_var_of(plan, w->linear->inputs[1])].tp_split = PX_TP_COLUMNS;
    if (px_tp_copy_input(g, w->linear, tp, d) ||
        px_tp_split_input(g, plan, w->linear, 1, w->axis, 1, tp, d))
        return -1;
    px_shape unknown = px_shape_unknown();
    px_value *narrowed[3] = {w->linear->outputs[0], NULL, NULL};
    if (w->bias_add) {
        int v = px_plan_var_of(plan, w->bias_add->inputs[w->bias_input]);
        if (v >= 0) plan->vars[v].tp_split = PX_TP_COLUMNS;
        if (px_tp_split_input(g, plan, w->bias_add, w->bias_input, 0, 1, tp, d)) return -1;
        narrowed[1] = w->bias_add->outputs[0];
    }
    if (w->reshape) {
        px_value *out = w->reshape->outputs[0];
        int64_t dims[1] = {2};
        px_shape s = px_shape_make(1, dims);
        px_tensor *t = px_tensor_new(PX_I64, &s, d);
        if (!t) return -1;
        ((int64_t *)t->data)[0] = out->shape.dims[0];
        ((int64_t *)t->data)[1] = out->shape.dims[1] / tp;
        char base[300];
        snprintf(base, sizeof base, "tp/%s/shape", w->reshape->name);
        px_value *c = px_graph_add_constant(g, base, t);
        if (!c) return oom(d);
        px_node_set_input(w->reshape, 1, c);
        narrowed[2] = out;
    }
    for (int i = 0; i < 3; i++)
        if (narrowed[i]) narrowed[i]->dtype = PX_UNDEFINED, narrowed[i]->shape = unknown;
    px_node *old = w->loss;
    px_value *ins[2] = {old->inputs[0], old->inputs[1]}, *loss = old->outputs[0];
    char name[300];
    snprintf(name, sizeof name, "tp/%s", old->name);
    const char *red = px_attr_string(old, "reduction", "mean");
    const px_attr *ig = px_node_attr(old, "ignore_index");
    int has_ignore = ig != NULL;
    int64_t ignore = ig ? ig->i : 0;
    char reduction[8];
    snprintf(reduction, sizeof reduction, "%s", red);
    px_graph_remove_node(g, old);
    px_node *n =
        px_graph_add_node(g, "TPSoftmaxCrossEntropy", PX_DOMAIN_PARALLAX, name, 2, ins, 1, &loss);
    if (!n) return oom(d);
    px_node_set_attr_int(n, "tp", tp);
    px_node_set_attr_string(n, "reduction", reduction);
    if (has_ignore) px_node_set_attr_int(n, "ignore_index", ignore);
    return 0;
}

int px_tp_split_vocab(px_graph *g, px_train_plan *plan, px_node *linear, int tp, const char **why,
                      px_diag *d) {
    vocab w;
    if (find_vocab(&w, plan, linear, why)) return 1;
    int64_t v = linear->inputs[1]->shape.dims[w.axis];
    if (v % tp)
        return px_error(d,
                        "--tp %d does not divide the %lld classes of node '%s' (weight '%s'), "
                        "the scores of the cross-entropy '%s'",
                        tp, (long long)v, linear->name, linear->inputs[1]->name, w.loss->name);
    return rewrite(g, plan, &w, tp, d) ? -1 : 0;
}
