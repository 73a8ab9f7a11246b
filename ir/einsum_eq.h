/* Parsing of an ONNX Einsum equation ("ij,jk->ik"), shared by its shape
 * function (ir/shape_einsum.c) and the pass that rewrites it into
 * Transpose/Reshape/Mul/ReduceSum (passes/einsum_rewrite.c). */
#ifndef PX_EINSUM_EQ_H
#define PX_EINSUM_EQ_H

#include "tensor.h"

#define PX_EINSUM_MAX_OPS 8

typedef struct px_einsum_eq {
    int n_ops;
    char ops[PX_EINSUM_MAX_OPS][PX_MAX_RANK + 1]; /* the letters of each operand */
    char out[PX_MAX_RANK + 1];                    /* the output letters */
    /* where "..." stands among the letters of each operand / the output, -1
     * where it does not (only in the general form) */
    int ell[PX_EINSUM_MAX_OPS], out_ell;
} px_einsum_eq;

/* Parses eq; the implicit form (no "->") gets the letters seen exactly once,
 * in alphabetical order (after the ellipsis dims), as ONNX specifies. With
 * general == 0, ellipsis and a letter repeated within one operand (a
 * diagonal) are refused, as the rewrite into other ops cannot do them; the
 * shape function accepts them (general == 1). Returns -1 with the reason in
 * why. */
int px_einsum_parse(const char *eq, int general, px_einsum_eq *e, char *why, size_t cap);

#endif
