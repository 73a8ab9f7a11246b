/* The output vocabulary projection split by columns over a tensor-parallel
 * group (--tp K), with a parallel softmax cross-entropy that never gathers
 * the full scores:
 *
 *   X ─TPCopy─▶ MatMul/Gemm (W [D, V], by columns; a Gemm's bias sliced)
 *     ─▶ (+ b [V], sliced) ─▶ (Reshape to [N, V/K])
 *     ─▶ TPSoftmaxCrossEntropy (labels) ─▶ loss
 *
 * in place of SoftmaxCrossEntropyLoss (reduction mean or sum, no class
 * weights, its log-probabilities unused). Rank t computes the scores of
 * classes [t*V/K, (t+1)*V/K); the loss combines each row's maximum, sum of
 * exponentials and target score over the group (runtime/comm/sched/
 * tp_loss.c), the same on every rank of the group, and so does its
 * gradient; the gradient of X is summed over the group (TPCopy's).
 *
 * W read by the projection alone is stored split. A tied W (the token
 * embedding's table, read whole by its Gather, and by the projection
 * directly or through a Transpose: GPT-2's lm_head) is a dense variable:
 * the projection reads all of it, so it is no sparse table on the
 * parameter servers. It stays whole on every rank, with its optimizer
 * state, and the projection reads its classes through TPSlice; its
 * gradient (the Gather's rows plus K times the rank's slab, TPSliceGrad)
 * goes through the data-parallel AllReduce over all ranks, whose mean over
 * a group is the whole gradient. The compute and the scores are divided
 * by K, the table's memory is not.
 *
 * When K does not divide V the projection stays whole (every rank of the
 * group computes it, as in data parallelism) and inspect says why. */
#include "tp_internal.h"

#include <stdio.h>
#include <string.h>

typedef struct vocab {
    px_node *linear, *bias_add, *reshape, *loss;
    int axis, bias_input;
    int gemm_bias; /* the Gemm's own bias (input 2), a row of the classes */
    int tied_var;  /* -1: W is stored split; else the tied variable W reads */
} vocab;

/* 1 if b is a row of the v classes ([v] or [1, v]) read whole. */
static int is_class_row(const px_train_plan *plan, const px_value *b, int64_t v) {
    if (!b || b->producer || (px_plan_var_of(plan, b) < 0 && !px_value_is_const(b))) return 0;
    return (b->shape.rank == 1 && b->shape.dims[0] == v) ||
           (b->shape.rank == 2 && b->shape.dims[0] == 1 && b->shape.dims[1] == v);
}

/* The trained variable a projection weight w reads whole when w cannot be
 * stored split: w itself read elsewhere too, or Transpose(w') of a 2-D
 * variable w' (a tied embedding's table); -1 when neither, or when the
 * variable is split already (by a layer of its own). */
static int tied_var(const px_train_plan *plan, const px_value *w) {
    if (w && w->producer) w = px_tp_transposed(w);
    int v = px_plan_var_of(plan, w);
    if (v < 0 || w->shape.rank != 2 || w->dtype != PX_F32) return -1;
    return plan->vars[v].tp_split || px_tp_stored(&plan->vars[v]) ? -1 : v;
}

static px_node *only_use(const px_value *v) {
    return v && !v->is_output && v->n_uses == 1 ? v->uses[0].node : NULL;
}

/* The pattern from linear; 1 with *why when it is not there. */
static int find_vocab(vocab *w, const px_train_plan *plan, px_node *linear, const char **why) {
    memset(w, 0, sizeof *w);
    w->linear = linear;
    w->tied_var = -1;
    w->axis = px_tp_weight_axis(linear, 1, why);
    if (w->axis < 0) return 1;
    int64_t v = linear->inputs[1]->shape.dims[w->axis];
    if (linear->op == PX_OP_Gemm && linear->n_inputs > 2 && linear->inputs[2]) {
        if (!is_class_row(plan, linear->inputs[2], v))
            return *why = "its Gemm bias is not an initializer row of its classes", 1;
        w->gemm_bias = 1;
    }
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
    if (w->tied_var < 0)
        plan->vars[px_tp_weight_var(plan, w->linear->inputs[1])].tp_split = PX_TP_COLUMNS;
    /* A tied weight (not a variable read by this node alone) is read
     * through TPSlice (px_tp_split_input's rule). */
    if (px_tp_copy_input(g, w->linear, tp, d) ||
        px_tp_split_input(g, plan, w->linear, 1, w->axis, 1, tp, d))
        return -1;
    if (w->gemm_bias) {
        px_value *b = w->linear->inputs[2];
        int v = px_plan_var_of(plan, b);
        if (v >= 0) plan->vars[v].tp_split = PX_TP_COLUMNS;
        if (px_tp_split_input(g, plan, w->linear, 2, b->shape.rank - 1, 1, tp, d)) return -1;
    }
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
    const px_value *weight = linear->inputs[1];
    const char *weight_why = NULL;
    int stored = px_tp_splittable_weight(plan, weight, &weight_why) >= 0;
    int tied = stored ? -1 : tied_var(plan, weight);
    if (!stored && tied < 0) return *why = weight_why, 1;
    if (find_vocab(&w, plan, linear, why)) return 1;
    w.tied_var = tied;
    int var = tied >= 0 ? tied : px_tp_weight_var(plan, weight);
    const char *name = plan->vars[var].value->name; /* W's variable, not its Transpose */
    int64_t v = weight->shape.dims[w.axis];
    if (v % tp) {
        *why = px_tp_note(plan,
                          "node '%s' (weight '%s') not split: %lld classes not divisible by --tp "
                          "%d (kept whole: every rank of the group computes it)",
                          linear->name, name, (long long)v, tp);
        return *why ? 2 : oom(d);
    }
    if (tied >= 0) {
        /* A sparse table lives on the parameter servers, where no rank
         * holds it whole to slice; the classifier makes a table the
         * projection reads dense, so this guards that contract. */
        if (plan->vars[tied].cls != PX_VAR_DENSE)
            return px_error(d,
                            "--tp %d: node '%s' projects onto the classes of '%s', a sparse "
                            "table on the parameter servers: a vocabulary projection tied to "
                            "it cannot be split",
                            tp, linear->name, name);
        if (!px_tp_note(plan,
                        "node '%s' split by classes, reading its slab of the tied weight '%s' "
                        "through TPSlice (stored whole: it has other readers)",
                        linear->name, name))
            return oom(d);
    }
    return rewrite(g, plan, &w, tp, d) ? -1 : 0;
}
