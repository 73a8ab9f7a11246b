/* Helpers shared by the shape functions in ir/shape_*.c: error reporting that
 * names the node, optional inputs, reading constant integer inputs, the
 * attribute-or-input forms that ONNX changed across opsets, axis
 * normalization and numpy broadcasting over partly unknown shapes. */
#ifndef PX_SHAPE_UTIL_H
#define PX_SHAPE_UTIL_H

#include "graph.h"

/* Records "<node label>: <message>" and returns -1. */
int px_su_error(px_diag *d, const px_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Opset of the default domain (ai.onnx); the latest we know when none is
 * declared, since programmatically built graphs usually omit it. */
int64_t px_su_opset(const px_graph *g);

/* Input/output i, or NULL when omitted (empty name or beyond the list). */
px_value *px_su_in(const px_node *n, int i);
px_value *px_su_out(const px_node *n, int i);

/* Input i, which must be present and have a known element type; else an
 * error naming the node and `what` (e.g. "input 'X'"). */
int px_su_need(const px_node *n, int i, const char *what, px_diag *d, px_value **out);
/* Errors when fewer than min_in inputs or none of the outputs are present. */
int px_su_arity(const px_node *n, int min_in, int max_in, px_diag *d);

/* Sets output i (if present). Static shapes must have a representable
 * element count, else an error ("absurd size"). */
int px_su_set(const px_node *n, int i, px_dtype dt, const px_shape *s, px_diag *d);

/* Makes a shape of the given rank with every dim unknown (rank -1: unknown). */
px_shape px_su_unknown_rank(int rank);
/* Copies dim si of src (value and symbol) into dim di of dst. */
void px_su_copy_dim(px_shape *dst, int di, const px_shape *src, int si);
/* Sets dim di of dst to a known value (clearing any symbol). */
void px_su_set_dim(px_shape *dst, int di, int64_t v);
/* Two dims are the same when both are known and equal, or both carry the
 * same symbol. */
int px_su_dim_same(const px_shape *a, int ai, const px_shape *b, int bi);

/* Normalizes axis into [0, rank) (or [0, rank] when allow_end, for ops that
 * insert a dim), reporting an error that names the node and `what`. */
int px_su_norm_axis(const px_node *n, px_diag *d, int64_t axis, int rank, int allow_end,
                    const char *what, int *out);
/* Normalizes every axis in place and rejects duplicates. */
int px_su_norm_axes(const px_node *n, px_diag *d, int64_t *axes, int count, int rank,
                    const char *what);

/* Reads a constant integer tensor (any integer dtype) of at most cap
 * elements. Returns 1 when read, 0 when v is absent or not constant, -1 on
 * error (wrong dtype, too many elements). */
int px_su_const_ints(const px_node *n, px_diag *d, const px_value *v, const char *what,
                     int64_t *out, int cap, int *count);
/* Reads the single element of a constant numeric tensor as double: 1/0/-1 as above. */
int px_su_const_scalar(const px_node *n, px_diag *d, const px_value *v, const char *what,
                       double *out);
/* Number of elements a 1-D input will hold when its shape is known: >= 0,
 * or -1 when unknown. */
int64_t px_su_len1d(const px_value *v);

/* A list of integers that ONNX takes as attribute `attr` up to opset
 * attr_until-1 and as input `input_index` from opset attr_until on (either
 * form is accepted whichever opset is declared, the attribute winning).
 * Sets *present (was any form given), *known (values read; else the count
 * may still be known, -1 if not). Returns 0 or -1. */
int px_su_ints_attr_or_input(const px_node *n, px_diag *d, const char *attr, int input_index,
                             const char *what, int64_t *out, int cap, int *count, int *present,
                             int *known);

/* Numpy (multidirectional) broadcast of a and b into out. */
int px_su_broadcast(const px_node *n, px_diag *d, const px_shape *a, const px_shape *b,
                    px_shape *out);
/* Checks that src broadcasts to target without changing it (unidirectional). */
int px_su_check_unidirectional(const px_node *n, px_diag *d, const px_shape *target,
                               const px_shape *src, const char *what);

/* Element-type checks naming the node and the operand. */
int px_su_same_dtype(const px_node *n, px_diag *d, const px_value *a, const px_value *b);
int px_su_want_float(const px_node *n, px_diag *d, const px_value *v, const char *what);
int px_su_want_int(const px_node *n, px_diag *d, const px_value *v, const char *what);
int px_su_want_numeric(const px_node *n, px_diag *d, const px_value *v, const char *what);
/* v's dtype must be in the classes cls (dtype.h); the error names them. */
int px_su_want_class(const px_node *n, px_diag *d, const px_value *v, const char *what,
                     unsigned cls);

/* dY, indices, the 'shape' and 'axis' attributes of a gradient scattering
 * dY into zeros of the gathered data's shape (ir/shape_grad.c): 0, or -1
 * with an error naming the node. */
int px_su_scatter_grad_args(px_node *n, px_diag *d, px_value **dy, px_value **idx,
                            const int64_t **dims, int *rank, int64_t *axis);

/* Input i of a loss or loss gradient, when present, must be the float64
 * output of a LossDenominator and the reduction mean (ir/shape_loss.c). */
int px_su_check_denominator(const px_node *n, int i, px_diag *d);

#endif
