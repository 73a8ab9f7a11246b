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

/* The values node n exchanges over its group: a TPAllReduce's input, 3 per
 * row of a TPSoftmaxCrossEntropy(Grad)'s scores; 0 for any other node. */
int64_t px_tp_group_values(const px_node *n);

/* Bytes a rank sends plus receives per step for group exchange n: the
 * runtime gathers every rank's values (px_tp_group_values) and combines
 * them in rank order, so each rank sends its values to the tp - 1 others
 * and receives theirs. Counted by the runtime as "other" traffic. */
int64_t px_tp_group_sum_bytes(const px_node *n);

#endif
