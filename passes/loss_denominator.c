/* The mean of a loss over the rows it keeps, made global (docs/training.md,
 * "Losses that skip rows").
 *
 * SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss with reduction
 * "mean" divide the sum of their terms by the sum of the weights of the
 * rows they keep: the row count, less the rows whose target is
 * ignore_index, or the class weights of the targets. When ranks keep
 * different counts, the mean of the ranks' means (what averaging the
 * gradients gives, and what PyTorch DDP computes) is not the mean over the
 * global batch. This pass gives each such loss a LossDenominator(labels[,
 * weights]) input: the kept weight of the rank's rows averaged over the
 * ranks (total / N), which the loss and its gradient divide by instead of
 * their own. Each rank's loss is then its sum / (total / N), their mean is
 * sum / total and the mean of their gradients the global batch's gradient,
 * for every way a gradient travels (AllReduce, parameter-server pushes,
 * --tp slabs). With one rank, or the same kept weight on every rank, the
 * divisor is the one the loss computed before, bit for bit.
 *
 * Under --pp the loss copies of the micro-batches run on their stage's
 * ranks only, where no collective over all ranks can run: there the node
 * checks instead (over_ranks 0) that its micro-batch keeps every row, and
 * class weights are refused here. The runtime makes the same check for
 * --accumulate (runtime/kernels/loss_denominator.c). */
#include "train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int loss_op(const px_node *n) {
    return n->op == PX_OP_SoftmaxCrossEntropyLoss || n->op == PX_OP_NegativeLogLikelihoodLoss ||
           n->op == PX_OP_TPSoftmaxCrossEntropy;
}

/* The loss node's input that takes the denominator: after (scores,
 * labels[, weights]), or after (scores, labels) for the --tp form. */
static int denominator_input(const px_node *n) {
    return n->op == PX_OP_TPSoftmaxCrossEntropy ? 2 : 3;
}

/* The class weights of n, or NULL. */
static px_value *class_weights(const px_node *n) {
    return n->op != PX_OP_TPSoftmaxCrossEntropy && n->n_inputs > 2 ? n->inputs[2] : NULL;
}

/* Whether n's mean can differ between ranks: reduction mean with
 * ignore_index or class weights, and no denominator yet. */
static int mean_may_differ(const px_node *n) {
    if (n->dead || !loss_op(n) || strcmp(px_attr_string(n, "reduction", "mean"), "mean")) return 0;
    px_value *w = class_weights(n);
    /* constant targets (a sampled softmax's) keep the same rows on every rank */
    if (px_value_is_const(n->inputs[1]) && (!w || px_value_is_const(w))) return 0;
    return px_node_attr(n, "ignore_index") != NULL || w != NULL;
}

static int needs_denominator(const px_node *n) {
    return mean_may_differ(n) && n->n_inputs <= denominator_input(n);
}

int px_loss_means_over_ranks(const px_graph *g, const px_train_config *cfg) {
    int k = 0;
    if (cfg->pp > 1) return 0;
    for (int i = 0; i < g->n_nodes; i++) k += mean_may_differ(g->nodes[i]);
    return k;
}

static int position_of(const px_graph *g, const px_node *n) {
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] == n) return i;
    return g->n_nodes;
}

static int add_denominator(px_graph *g, px_node *n, const px_train_config *cfg, px_train_plan *plan,
                           px_diag *d) {
    px_value *w = class_weights(n);
    int pp = cfg->pp > 1;
    if (pp && w)
        return px_error(d,
                        "node '%s' (%s): class weights with reduction mean under --pp %d: the "
                        "micro-batches' weighted means cannot be combined into the batch's "
                        "exactly yet; use reduction sum, or train without --pp",
                        n->name[0] ? n->name : n->outputs[0]->name, n->op_type, cfg->pp);
    /* named after the loss's output: ONNX nodes may have no name */
    const char *loss = n->outputs[0]->name;
    char name[300];
    snprintf(name, sizeof name, "%s.denominator", loss);
    px_shape scalar = px_shape_scalar();
    px_value *den = px_graph_new_value(g, name, PX_F64, &scalar);
    px_value *ins[2] = {n->inputs[1], w};
    snprintf(name, sizeof name, "loss_denominator/%s", loss);
    px_node *c = px_graph_insert_node(g, position_of(g, n), "LossDenominator", PX_DOMAIN_PARALLAX,
                                      name, w ? 2 : 1, ins, 1, &den);
    if (!den || !c) return px_error(d, "out of memory adding the denominator of '%s'", loss);
    const px_attr *ig = px_node_attr(n, "ignore_index");
    if (ig) px_node_set_attr_int(c, "ignore_index", ig->i);
    px_node_set_attr_int(c, "over_ranks", !pp);
    /* --pp: it runs where its loss runs (stage, micro-batch, phase) */
    for (int a = 0; a < n->n_attrs; a++)
        if (!strncmp(n->attrs[a].name, "pp_", 3) && px_node_copy_attr(c, &n->attrs[a], d))
            return -1;
    while (n->n_inputs < denominator_input(n)) px_node_add_input(n, NULL);
    px_node_add_input(n, den);
    plan->loss_means_over_ranks += !pp;
    return 0;
}

int px_pass_loss_denominators(px_graph *g, const px_train_config *cfg, px_train_plan *plan,
                              px_diag *d) {
    plan->loss_means_over_ranks = 0;
    /* inserting shifts the nodes after: collect first */
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) n += needs_denominator(g->nodes[i]);
    if (n == 0) return 0;
    px_node **losses = calloc((size_t)n, sizeof *losses);
    if (!losses) return px_error(d, "out of memory");
    n = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (needs_denominator(g->nodes[i])) losses[n++] = g->nodes[i];
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) rc = add_denominator(g, losses[i], cfg, plan, d);
    free(losses);
    return rc;
}
