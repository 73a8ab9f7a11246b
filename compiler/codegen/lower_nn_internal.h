/* Private to the nn lowerings (compiler/codegen/lower_nn*.c): helpers for
 * messages, optional operands and dtype checks. */
#ifndef PX_LOWER_NN_INTERNAL_H
#define PX_LOWER_NN_INTERNAL_H

#include "lower.h"

/* Spatial ranks the window kernels (conv, pools) support. */
#define PX_LNN_MAX_SPATIAL 3

/* Checks that v (described as `what`, e.g. "input X") is present, has a
 * static shape and one of the dtypes in `allowed` (PX_UNDEFINED-terminated). */
int px_lnn_check(const px_node *n, const px_value *v, const char *what, const px_dtype *allowed,
                 px_diag *d);

/* Same rank and dims (symbols ignored: the shapes are static here). */
int px_lnn_same_dims(const px_shape *a, const px_shape *b);

/* Writes v's descriptor, or dtype 0 and rank 0 when v is absent. */
void px_lnn_tensor_opt(px_kcall *k, const px_value *v);

/* A per-axis ints attribute with `count` entries (default dflt for each). */
int px_lnn_axis_ints(const px_node *n, const char *name, int count, int64_t dflt, int64_t *out,
                     px_diag *d);

extern const px_dtype px_lnn_float_types[]; /* f32 f64 f16 bf16 */
extern const px_dtype px_lnn_index_types[]; /* i32 i64 */

/* The SoftmaxCrossEntropyLossGrad node after fwd that differentiates it (the
 * first one; NULL if none), and back: the loss node whose partner is grad.
 * The pair shares the softmax: the forward kernel leaves it in the
 * gradient's dX buffer and the backward kernel finishes dX in place. */
const px_node *px_lnn_sce_grad_partner(const px_graph *g, const px_node *fwd);
const px_node *px_lnn_sce_forward_partner(const px_graph *g, const px_node *grad);

#endif
