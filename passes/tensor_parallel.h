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

#endif
