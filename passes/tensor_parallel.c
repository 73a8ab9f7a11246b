/* Tensor parallelism (--tp K), Megatron's MLP pairs: a MatMul/Gemm whose
 * trained weight W1 produces a hidden layer of width H, followed through
 * elementwise ops by a second MatMul/Gemm with trained weight W2:
 *
 *   X ─TPCopy─▶ X @ W1[:, slab t] (+ b1[slab t]) ─elementwise─▶ h_t
 *     h_t @ W2[slab t, :] ─TPAllReduce─▶ Σ_t (+ b2) ─▶ the rest, replicated
 *
 * Rank t of a group of K computes H/K of the hidden units, and one group
 * sum follows the pair forward (TPAllReduce) and one backward (the
 * gradient of TPCopy, when X needs one). A trained weight (or bias) that
 * nothing else reads is stored split: rank t holds only its slab, with its
 * optimizer state, and the comm pass averages its gradient, a slab, over
 * the ranks holding the same slab (rank t of every group): the mean over
 * groups. Every rank of a group therefore updates its slab exactly as one
 * rank at the global batch would update those entries. Any other operand
 * (a frozen initializer, a weight read elsewhere too) stays whole and is
 * read through TPSlice each step. A MatMul/Gemm that starts no pair may
 * start an attention block (tp_attention.c); else it stays replicated. The
 * runtime loads slabs from the whole weights of the model and gathers them
 * for --save and checkpoints (runtime/program/tp_slabs.h). */
#include "tp_internal.h"

#include <stdio.h>
#include <string.h>

#define MAX_CHAIN 64

/* A pair found by the walk, and the bias operands of its chain to slice. */
typedef struct tp_pair {
    px_node *first, *second;
    int first_axis, second_axis; /* the split axis of W1 and W2 */
    int n_chain;                 /* the nodes from first to second, first included: their */
    px_node *chain[MAX_CHAIN];   /* outputs narrow to H/K */
    int n_bias;
    px_node *bias_node[MAX_CHAIN];
    int bias_input[MAX_CHAIN];
} tp_pair;

static int is_linear(const px_node *n) {
    return n->op == PX_OP_MatMul || n->op == PX_OP_Gemm;
}

/* 1 if b broadcasts along the last axis of a width-h tensor as [.., h]
 * (every other dim 1), so slab t of b is its slice on its last axis. */
static int is_row_bias(const px_value *b, int64_t h) {
    if (!b || b->shape.rank < 1 || b->shape.dims[b->shape.rank - 1] != h) return 0;
    for (int i = 0; i + 1 < b->shape.rank; i++)
        if (b->shape.dims[i] != 1) return 0;
    return 1;
}

/* Operand j of elementwise node u, on the chain of width h: fine when a
 * constant scalar, to slice when an initializer row (a bias); else the pair
 * is not split. A scalar that needs a gradient would get only this rank's
 * part of its sum over the hidden units, and TPSliceGrad's K-scaled
 * gradient is right only for what the data-parallel mean then averages (a
 * variable) or for nothing (a constant). */
static int check_operand(const px_train_plan *plan, tp_pair *pr, px_node *u, int j, int64_t h,
                         const char **why) {
    const px_value *o = u->inputs[j];
    if (!o) return 0;
    if (px_shape_numel(&o->shape) == 1 && !o->producer && px_plan_var_of(plan, o) < 0) return 0;
    if (!is_row_bias(o, h) || o->producer)
        return *why = "an elementwise operand is not a constant scalar or an initializer [H] row",
               -1;
    if (pr->n_bias == MAX_CHAIN) return *why = "the chain between the pair is too long", -1;
    pr->bias_node[pr->n_bias] = u;
    pr->bias_input[pr->n_bias++] = j;
    return 0;
}

/* 1 if v is the output of a node of pr's chain (a value of the hidden
 * layer, split). */
static int on_chain(const tp_pair *pr, const px_value *v) {
    for (int c = 0; c < pr->n_chain; c++)
        if (pr->chain[c]->outputs[0] == v) return 1;
    return 0;
}

/* The MatMul/Gemm u reading the hidden layer of width h as its input 0,
 * checked as the pair's second layer; 0 when it is one. */
static int check_second(const px_train_plan *plan, tp_pair *pr, px_node *u, int64_t h,
                        const char **why) {
    const char *second_why = NULL;
    if (pr->second && pr->second != u)
        return *why = "its hidden layer feeds two MatMul/Gemm nodes", 1;
    if (px_tp_splittable_weight(plan, u->inputs[1], &second_why) < 0)
        return *why = "the MatMul/Gemm it feeds has no splittable weight", 1;
    pr->second_axis = px_tp_weight_axis(u, 0, why);
    if (pr->second_axis < 0) return 1;
    if (u->inputs[1]->shape.dims[pr->second_axis] != h)
        return *why = "the second weight does not take the hidden width", 1;
    if (u->op == PX_OP_Gemm && u->n_inputs > 2 && u->inputs[2] &&
        px_attr_float(u, "beta", 1.0f) != 1.0f)
        return *why = "the second Gemm scales its bias (beta != 1)", 1;
    pr->second = u;
    return 0;
}

/* From first (whose weight is splittable), the elementwise subgraph to a
 * second MatMul/Gemm: every reader of a hidden value is an elementwise node
 * (whose output is hidden too) or the second layer. Not only a chain: the
 * hidden layer may be read twice, as GELU's exports read it (x * (1 +
 * erf(x / sqrt 2)) * 0.5, or the tanh approximation with x^3), since every
 * elementwise op on column slabs stays on its slab. 0: a pair; 1: none
 * (*why says why). */
static int find_pair(const px_train_plan *plan, px_node *first, tp_pair *pr, const char **why) {
    memset(pr, 0, sizeof *pr);
    pr->first = first;
    pr->first_axis = px_tp_weight_axis(first, 1, why);
    if (pr->first_axis < 0) return 1;
    int64_t h = first->inputs[1]->shape.dims[pr->first_axis];
    if (first->op == PX_OP_Gemm && first->n_inputs > 2 && first->inputs[2] &&
        check_operand(plan, pr, first, 2, h, why))
        return 1;
    pr->chain[pr->n_chain++] = first;
    /* Breadth first over the hidden values: chain[c]'s output, c in order. */
    for (int c = 0; c < pr->n_chain; c++) {
        const px_value *cur = pr->chain[c]->outputs[0];
        if (!cur || cur->is_output || cur->n_uses < 1)
            return *why = "its output is a graph output or unused", 1;
        for (int k = 0; k < cur->n_uses; k++) {
            px_node *u = cur->uses[k].node;
            if (is_linear(u) && cur->uses[k].index == 0) {
                if (check_second(plan, pr, u, h, why)) return 1;
                continue;
            }
            const px_op_info *info = &px_op_table[u->op];
            if (!(info->flags & PX_F_ELEMWISE) || (info->flags & PX_F_RANDOM) || u->n_outputs != 1)
                return *why = "a node between it and the next MatMul/Gemm is not elementwise", 1;
            if (on_chain(pr, u->outputs[0])) continue; /* reached twice */
            if (pr->n_chain == MAX_CHAIN) return *why = "the chain between the pair is too long", 1;
            pr->chain[pr->n_chain++] = u;
        }
    }
    if (!pr->second) return *why = "its output does not reach a MatMul/Gemm", 1;
    /* The other operands, now that every hidden value is known. */
    for (int c = 1; c < pr->n_chain; c++) {
        px_node *u = pr->chain[c];
        for (int j = 0; j < u->n_inputs; j++)
            if (!on_chain(pr, u->inputs[j]) && check_operand(plan, pr, u, j, h, why)) return 1;
    }
    return 0;
}

static int split_pair(px_graph *g, px_train_plan *plan, const tp_pair *pr, int tp, px_diag *d) {
    px_node *first = pr->first, *second = pr->second;
    plan->vars[px_tp_weight_var(plan, first->inputs[1])].tp_split = PX_TP_COLUMNS;
    plan->vars[px_tp_weight_var(plan, second->inputs[1])].tp_split = PX_TP_ROWS;
    if (px_tp_copy_input(g, first, tp, d) ||
        px_tp_split_input(g, plan, first, 1, pr->first_axis, 1, tp, d))
        return -1;
    for (int b = 0; b < pr->n_bias; b++) {
        px_node *n = pr->bias_node[b];
        int i = pr->bias_input[b];
        int v = px_plan_var_of(plan, n->inputs[i]);
        if (v >= 0) plan->vars[v].tp_split = PX_TP_COLUMNS;
        if (px_tp_split_input(g, plan, n, i, n->inputs[i]->shape.rank - 1, 1, tp, d)) return -1;
    }
    if (px_tp_split_input(g, plan, second, 1, pr->second_axis, 1, tp, d)) return -1;
    /* Narrower now: inferred again (px_infer_node's contract). */
    px_shape unknown = px_shape_unknown();
    for (int c = 0; c < pr->n_chain; c++) {
        pr->chain[c]->outputs[0]->dtype = PX_UNDEFINED;
        pr->chain[c]->outputs[0]->shape = unknown;
    }
    return px_tp_sum_second(g, second, tp, d);
}

/* n, a MatMul/Gemm that starts no pair, as an attention block (when its
 * weight is splittable) or a vocabulary projection (tp_vocab.c): 0 when
 * split, 1 when not (*why replaced by the plan's note when a projection is
 * kept whole), -1 on an error. */
static int split_block(px_graph *g, px_train_plan *plan, px_node *n, int tp, int splittable,
                       const char **why, px_diag *d) {
    const char *block_why = NULL;
    int rc = splittable ? px_tp_split_attention(g, plan, n, tp, &block_why, d) : 1;
    if (rc != 1) return rc;
    rc = px_tp_split_vocab(g, plan, n, tp, &block_why, d);
    if (rc == 2) *why = block_why, rc = 1;
    return rc;
}

int64_t px_tp_group_values(const px_node *n) {
    if (n->dead) return 0;
    if (n->op == PX_OP_TPAllReduce) return px_shape_numel(&n->inputs[0]->shape);
    const px_value *x = n->op == PX_OP_TPSoftmaxCrossEntropy       ? n->inputs[0]
                        : n->op == PX_OP_TPSoftmaxCrossEntropyGrad ? n->inputs[1]
                                                                   : NULL;
    return x && x->shape.rank == 2 && x->shape.dims[0] >= 0 ? 3 * x->shape.dims[0] : 0;
}

int64_t px_tp_group_sum_bytes(const px_node *n) {
    int64_t values = px_tp_group_values(n), tp = px_attr_int(n, "tp", 1);
    return values < 0 ? -1 : 2 * 4 * values * (tp - 1);
}

int px_pass_tensor_parallel(px_graph *g, int tp, px_train_plan *plan, px_diag *d) {
    if (tp <= 1) return 0;
    plan->tp = tp;
    const char *why = "it has no MatMul or Gemm with a trained weight";
    const px_node *why_node = NULL;
    int n_nodes = g->n_nodes, pairs = 0;
    for (int i = 0; i < n_nodes; i++) {
        px_node *n = g->nodes[i];
        if (n->dead) continue;
        if (n->op == PX_OP_DropoutTrain)
            return px_error(d,
                            "--tp %d: node '%s' (Dropout in training mode) draws its mask per "
                            "rank: the ranks of a tensor-parallel group would disagree",
                            tp, n->name);
        if (!is_linear(n)) continue;
        const char *reason = NULL;
        tp_pair pr;
        int splittable = px_tp_splittable_weight(plan, n->inputs[1], &reason) >= 0;
        if (!splittable || find_pair(plan, n, &pr, &reason)) {
            const char *pair_why = reason;
            int rc = split_block(g, plan, n, tp, splittable, &reason, d);
            if (rc < 0) return -1;
            if (rc == 0) {
                pairs++;
                continue;
            }
            /* A MatMul of two activations says nothing worth reporting. */
            if (!why_node &&
                (splittable || reason != pair_why || px_tp_weight_var(plan, n->inputs[1]) >= 0))
                why_node = n, why = reason;
            continue;
        }
        int64_t h = n->inputs[1]->shape.dims[pr.first_axis];
        if (h % tp != 0)
            return px_error(d,
                            "--tp %d does not divide the hidden width %lld of node '%s' (weight "
                            "'%s')",
                            tp, (long long)h, n->name, n->inputs[1]->name);
        if (split_pair(g, plan, &pr, tp, d)) return -1;
        pairs++;
    }
    if (!pairs) {
        char where[400] = "";
        if (why_node)
            snprintf(where, sizeof where, " (node '%s': %s)", why_node->name, why);
        else
            snprintf(where, sizeof where, " (%s)", why);
        return px_error(d,
                        "--tp %d: the model has no splittable weight: no MatMul/Gemm pair "
                        "joined by elementwise ops, no attention block and no vocabulary "
                        "projection into a cross-entropy%s",
                        tp, where);
    }
    if (px_graph_toposort(g, d)) return -1;
    return px_infer_shapes(g, d);
}
