/* What the tensor-parallel pass's files share: tensor_parallel.c (the pass,
 * Megatron's MLP pairs), tp_attention.c (attention heads) and tp_vocab.c
 * (the vocabulary projection and its cross-entropy). */
#ifndef PX_TP_INTERNAL_H
#define PX_TP_INTERNAL_H

#include "tensor_parallel.h"

/* The input of Transpose node making w when it swaps the two axes of a
 * 2-D value; else NULL. */
px_value *px_tp_transposed(const px_value *w);

/* Index in plan of the variable a weight operand w stores split: w, or v
 * when w is Transpose(v) read once and v is read by that Transpose alone
 * (PyTorch's export of a Linear without constant folding); -1 when it is
 * no variable. */
int px_tp_weight_var(const px_train_plan *plan, const px_value *w);

/* Index of w in plan if it is a dense trained rank-2 float weight used once
 * (or the Transpose of one, as px_tp_weight_var) and not split yet; else -1
 * with *why set. */
int px_tp_splittable_weight(const px_train_plan *plan, const px_value *w, const char **why);

/* The axis of a Gemm/MatMul weight that holds the output (out = 1) or input
 * (out = 0) features; -1 with *why when transA is set. */
int px_tp_weight_axis(const px_node *n, int out, const char **why);

/* Input i of n split on axis into tp slabs of `sections` equal parts each
 * (rank t takes part t of every section): a trained variable read by n
 * alone is stored split, anything else is read through TPSlice. */
int px_tp_split_input(px_graph *g, px_train_plan *plan, px_node *n, int i, int axis,
                      int64_t sections, int tp, px_diag *d);

/* The output of `second` (a row-split MatMul/Gemm) summed over the group,
 * its Gemm bias added once after the sum. */
int px_tp_sum_second(px_graph *g, px_node *second, int tp, px_diag *d);

/* `first`'s input read through TPCopy (identity forward, group sum
 * backward). */
int px_tp_copy_input(px_graph *g, px_node *first, int tp, px_diag *d);

/* From `first` (a MatMul/Gemm with a splittable weight), an attention block
 * split by heads (tp_attention.c): 0 when found and split, 1 when first
 * starts none (*why says why, nothing changed), -1 on an error (in d:
 * --tp not dividing the heads). */
int px_tp_split_attention(px_graph *g, px_train_plan *plan, px_node *first, int tp,
                          const char **why, px_diag *d);

/* From `linear` (a MatMul/Gemm whose weight is splittable or tied: a
 * trained variable read elsewhere too, maybe through a Transpose), the
 * output vocabulary projection and its softmax cross-entropy split by
 * classes (tp_vocab.c): 0 when found and split, 1 when there is none
 * (*why), 2 when tp does not divide its classes (kept whole; *why is the
 * plan's note saying so), -1 on an error in d. */
int px_tp_split_vocab(px_graph *g, px_train_plan *plan, px_node *linear, int tp, const char **why,
                      px_diag *d);

/* A line for inspect --stage parallel (plan->tp_notes), printf-formatted;
 * the note, owned by the plan, or NULL when out of memory. */
const char *px_tp_note(px_train_plan *plan, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
