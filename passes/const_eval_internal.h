/* Private to const_eval*.c: element access, allocation and broadcasting
 * helpers shared by the per-group evaluators. */
#ifndef PX_CONST_EVAL_INTERNAL_H
#define PX_CONST_EVAL_INTERNAL_H

#include "const_eval.h"

#include <stdint.h>

/* Every evaluator has this signature: reads in[0..n_inputs), writes out[0..)
 * and returns an enum px_eval_status. On failure it leaves out[] untouched
 * (the dispatcher frees whatever was stored). */
typedef int ce_eval_rule(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d);
typedef ce_eval_rule *ce_eval_fn;

/* px_eval_<eval> for every evaluator ops.def's eval column names, defined in
 * const_eval_shape.c, const_eval_elementwise.c and const_eval_reduce.c. */
#define OP(name, domain, flags, sig, shape, grad, lower, eval)                                     \
    PX_OP_RULE_DECLARE(ce_eval_rule, px_eval_, eval)
#include "ops.def"
#undef OP

/* Element access with explicit, exact conversions (not for STRING):
 * floats go through double, integers and bool through int64. */
double ce_load_f64(const px_tensor *t, int64_t i);
int64_t ce_load_i64(const px_tensor *t, int64_t i);
/* Stores convert like a C cast; bool stores v != 0; float->int truncates.
 * Callers must have checked that float->int conversions are in range. */
void ce_store_f64(px_tensor *t, int64_t i, double v);
void ce_store_i64(px_tensor *t, int64_t i, int64_t v);

/* 1 for the dtypes the arithmetic evaluators handle (all numeric + bool,
 * except uint64 whose upper half int64 arithmetic would misorder, and complex). */
int ce_numeric(px_dtype t);

/* Allocates an output; PX_EVAL_NOT_FOLDABLE when it exceeds the size cap. */
int ce_alloc(px_dtype dtype, const px_shape *shape, px_tensor **out, px_diag *d);

/* Reads a 1-D (or scalar) int32/int64 tensor into dst (cap entries). Returns
 * the count, or -1 (not an integer tensor, no data, or more than cap entries). */
int ce_read_ints(const px_tensor *t, int64_t *dst, int cap);

/* Numpy multidirectional broadcasting of k shapes: 0, or -1 with error. */
int ce_broadcast_shape(const px_node *n, int k, const px_shape *const *shapes, px_shape *out,
                       px_diag *d);
/* For output element `flat` of shape out, the flat index in input shape in
 * (which broadcasts to out). */
int64_t ce_broadcast_index(const px_shape *out, const px_shape *in, int64_t flat);

/* Normalises axis in [-rank, rank) to [0, rank); -1 with error when out of range. */
int ce_axis(const px_node *n, int64_t axis, int rank, int64_t *out, px_diag *d);

/* Row-major strides of a shape. */
void ce_strides(const px_shape *s, int64_t *strides);

/* "'name' (Op)" for messages. */
const char *ce_label(const px_node *n, char *buf, size_t cap);

#endif
