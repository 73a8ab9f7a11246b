/* Tensor parallelism (--tp K): see tensor_parallel.c. */
#ifndef PX_TENSOR_PARALLEL_H
#define PX_TENSOR_PARALLEL_H

#include "shape_infer.h"
#include "var_plan.h"

/* Splits every Megatron MLP pair of g (folded, after px_plan_variables)
 * over groups of tp ranks, marking the split variables' tp_split and
 * plan->tp. tp <= 1: nothing. Errors: a pair whose hidden width tp does not
 * divide, a model with no pair, a training-mode Dropout (naming the node). */
int px_pass_tensor_parallel(px_graph *g, int tp, px_train_plan *plan, px_diag *d);

/* Bytes a rank sends plus receives per step for group sum n (a TPAllReduce):
 * the runtime gathers every rank's partial values (n's input) and adds them
 * in rank order, so each rank sends its values to the tp - 1 others and
 * receives theirs. Counted by the runtime as "other" traffic. */
int64_t px_tp_group_sum_bytes(const px_node *n);

#endif
