/* Pipeline parallelism (--pp S --micro-batches M): see pipeline_parallel.c. */
#ifndef PX_PIPELINE_PARALLEL_H
#define PX_PIPELINE_PARALLEL_H

#include "train.h"

/* The phases of a stage's work in one step, in the attribute pp_phase: the
 * nodes that run once before the micro-batches (PRE), a micro-batch's
 * forward (FWD) and backward (BWD), and once after them (POST). */
enum { PX_PP_PRE = 0, PX_PP_FWD = 1, PX_PP_BWD = 2, PX_PP_POST = 3 };

/* The bindings to fold the model with under --pp: the batch of one
 * micro-batch (b's batch / M). Error naming --micro-batches when M does not
 * divide the batch, or when the batch is not given by --batch. */
int px_pp_micro_bindings(const px_bindings *b, const px_train_config *cfg, px_bindings *out,
                         px_diag *d);

/* Before autodiff (folded at the micro-batch, after tensor_parallel): cuts
 * the forward graph into cfg->pp stages balanced by predicted compute,
 * copies it once per micro-batch reading its rows of the (whole-batch)
 * inputs, inserts a PPTransfer for every activation that crosses a cut and
 * makes the loss the mean of the micro-batches' losses, broadcast to every
 * stage. Sets plan->pp and the stage table. cfg->pp <= 1: nothing. */
int px_pass_pipeline_split(px_graph *g, const px_train_config *cfg, px_train_plan *plan,
                           px_diag *d);

/* After autodiff and the optimizer pass: gives every backward node the
 * stage and micro-batch of the forward node it differentiates. */
int px_pass_pipeline_grads(px_graph *g, px_train_plan *plan, px_diag *d);

/* Last (after comm): gives the nodes outside the micro-batches that read a
 * stage's variables or values (gradient exchange, updates) that stage, and
 * orders the nodes in the 1F1B schedule: what needs no stage first, then
 * each stage's work in the order of a simulated 1F1B run, then those. */
int px_pass_pipeline_schedule(px_graph *g, const px_train_plan *plan, px_diag *d);

/* In px_pass_pipeline_schedule (pp_pulls.c): a parameter-server table's
 * pulls, one per micro-batch's look-up, become one pull of the step's
 * rows where the first runs, when every look-up's indices are made from
 * the step's inputs alone on the table's stage. */
int px_pp_union_pulls(px_graph *g, const px_train_plan *plan, px_diag *d);

/* Predicted floating-point operations of one forward node (the cost the
 * stages are balanced by). */
double px_node_flops(const px_node *n);

#endif
