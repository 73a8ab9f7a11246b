/* Private to the tensor-family lowerings (compiler/codegen/lower_tensor*.c):
 * helpers for messages, operand checks and compile-time constants.
 * The kernels they call live in runtime/kernels/tensor*.c; each kernel's
 * buffer order and parameter layout is documented at the kernel and
 * repeated at the lowering that builds it. */
#ifndef PX_LOWER_TENSOR_INTERNAL_H
#define PX_LOWER_TENSOR_INTERNAL_H

#include "lower.h"

/* Checks that v (described as `what`, e.g. "input 'data'") is present, has a
 * static shape and a fixed-size dtype: the tensor kernels move bytes, so
 * every numeric dtype and bool works, strings do not. */
int px_ltn_check(const px_node *n, const px_value *v, const char *what, px_diag *d);

/* Checks that out has in's dtype (shape inference guarantees it; a mismatch
 * means the graph was edited inconsistently). */
int px_ltn_same_dtype(const px_node *n, const px_value *in, const px_value *out, px_diag *d);

/* Reads the integer contents of a constant input (any integer dtype) into
 * out (at most cap entries). Returns 1 when read, 0 when v is absent, -1
 * with an error naming the node and `what` when v is not a compile-time
 * constant, not integer, or too long. */
int px_ltn_const_ints(const px_node *n, const px_value *v, const char *what, int64_t *out, int cap,
                      int *count, px_diag *d);

/* An integer list given as attribute `attr` (older opsets) or constant input
 * `input` (newer ones); the attribute wins when both exist. Returns 1 when
 * given, 0 when neither is, -1 on error. */
int px_ltn_ints_attr_or_input(const px_node *n, const char *attr, int input, const char *what,
                              int64_t *out, int cap, int *count, px_diag *d);

/* Reports that v (`what`, e.g. "output") should have want_dim on axis. */
int px_ltn_dim_error(const px_node *n, const char *what, const px_value *v, int64_t want_dim,
                     int axis, px_diag *d);

/* Normalizes axis into [0, rank), error naming the node and `what`. */
int px_ltn_axis(const px_node *n, int64_t axis, int rank, const char *what, int *out, px_diag *d);

/* Packs the node's name (or its first output's when the name is empty) as a
 * length and int64 words, for kernels that report data-dependent errors. */
void px_ltn_name(px_kcall *k, const px_node *n);

/* Writes the bit pattern of value converted to dtype into *bits (low bytes,
 * little-endian). Returns 0, or -1 when dtype is wider than 8 bytes. */
int px_ltn_scalar_bits(px_dtype dtype, double value, int64_t *bits);

/* Copies the first element of t (at most 8 bytes) into *bits. */
int64_t px_ltn_tensor_bits(const px_tensor *t);

#endif
