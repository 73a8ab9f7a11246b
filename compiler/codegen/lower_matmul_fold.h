/* Matrix products whose transposed operands or batch sum BLAS does itself
 * (compiler/codegen/lower_matmul_fold.c): MatMul(A, Transpose(W)) with a
 * 2-D W becomes one GEMM with W transposed by the BLAS flag, and
 * ReduceSum(MatMul(Transpose(X), B), batch axes) one GEMM over the batch
 * rows, and Add(bias, MatMul(A, W)) one GEMM starting from the bias rows.
 * The Transpose and MatMul nodes such a GEMM replaces are absorbed:
 * the plan gives them no call and their outputs no buffer. */
#ifndef PX_LOWER_MATMUL_FOLD_H
#define PX_LOWER_MATMUL_FOLD_H

#include "lower.h"

typedef struct px_gemm_fold {
    const px_value *a, *b; /* the buffers BLAS reads */
    int ta, tb;            /* BLAS transpose flags */
    int64_t M, N, K;       /* Y[M, N] = op(a)[M, K] @ op(b)[K, N] */
    int64_t batch;         /* matrices in the stacks (1: one 2-D product) */
    const px_value *c;     /* NULL, or the bias added to every row (beta 1) */
    int n_absorbed;
    const px_node *absorbed[6]; /* nodes read through (computed inside this GEMM) */
} px_gemm_fold;

/* 1 and f filled when MatMul node mm folds a transpose of an operand. */
int px_lmm_fold_matmul(const px_node *mm, px_gemm_fold *f);
/* 1 and f filled when Transpose node t swaps the last two axes of a
 * MatMul's output that nothing else reads: Y^T = op(B)^T op(A)^T. */
int px_lmm_fold_transpose(const px_node *t, px_gemm_fold *f);
/* 1 and f filled when ReduceSum node red is the batch sum of a MatMul whose
 * first operand is a transpose (the weight gradient of a batched Linear). */
int px_lmm_fold_reduce(const px_node *red, px_gemm_fold *f);
/* 1 and f filled when Add node add sums a bias of the product's column
 * count and a MatMul (B 2-D) read by nothing else: the GEMM starts from the
 * bias rows (the Linear layer's forward). */
int px_lmm_fold_bias(const px_node *add, px_gemm_fold *f);
/* Whether every reader of node n computes it inside its GEMM (then n needs
 * no call and its output no buffer). */
int px_lmm_absorbed(const px_node *n);
/* The px_k_gemm (px_k_gemm_batched for stacks) call of a fold, writing y. */
void px_lmm_emit(const px_gemm_fold *f, const px_value *y, px_kcall *k);

#endif
