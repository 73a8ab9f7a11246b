/* A small reference evaluator: computes one node on constant inputs. It
 * covers the ops of exported shape arithmetic and small constant math, so
 * constant folding can turn them into constants. It is not a kernel library:
 * it favours exactness (int64 for integers, double for floats) over speed. */
#ifndef PX_CONST_EVAL_H
#define PX_CONST_EVAL_H

#include "graph.h"

/* Result of px_const_eval_node. */
enum px_eval_status {
    PX_EVAL_ERROR = -1,      /* the node is invalid on these inputs (error in diag) */
    PX_EVAL_OK = 0,          /* outputs computed */
    PX_EVAL_NOT_FOLDABLE = 1 /* unsupported op/dtype/attribute form, or output too large */
};

/* Outputs larger than this many elements are not folded (memory). */
#define PX_CONST_EVAL_MAX_ELEMS ((int64_t)16 * 1024 * 1024)

/* Evaluates n. inputs[i] (n->n_inputs entries, NULL for omitted optional
 * inputs) hold the input contents. Shape and Size read only dtype and shape of
 * their input, so for them inputs[0] may be a data-less descriptor (data NULL).
 * On PX_EVAL_OK, outputs[j] (n->n_outputs entries) receive new tensors owned by
 * the caller (NULL for omitted outputs); otherwise every outputs[j] is NULL. */
int px_const_eval_node(const px_node *n, const px_tensor *const *inputs, px_tensor **outputs,
                       px_diag *d);

/* 1 if px_const_eval_node knows op (it may still refuse particular inputs). */
int px_const_eval_supports(px_op op);

#endif
