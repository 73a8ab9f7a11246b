/* Reverse-mode automatic differentiation of a folded forward graph.
 *
 * The pass appends the backward nodes to the graph: for every trainable
 * variable it produces either a dense gradient value (same dtype and shape as
 * the variable) or, for a sparse variable (design.md §4: every use is the
 * data input of a Gather on axis 0 with run-time indices), a row set: the
 * unique indices its batch touched and the summed gradient rows, never a
 * dense tensor. Gradients of values with several uses are summed; gradients
 * flowing into broadcast inputs are reduced back to the input's shape;
 * integer and index inputs get none. */
#ifndef PX_AUTODIFF_H
#define PX_AUTODIFF_H

#include "graph.h"
#include "var_plan.h"

typedef struct px_grad {
    px_value *var;  /* the trainable initializer */
    px_value *grad; /* dense gradient, or NULL for a row set */
    /* Row set (sparse variables): rows_index int64 [capacity] holds the unique
     * row numbers first, rows_value [capacity, row...] their summed gradient
     * rows, rows_count int64 [] how many of the capacity entries are used. */
    px_value *rows_index, *rows_value, *rows_count;
} px_grad;

typedef struct px_grads {
    px_value *loss;
    int n;
    px_grad *items; /* one per trainable variable, in g->inits order */
} px_grads;

/* Differentiates g from the loss (spec->loss) to every variable of plan
 * (px_plan_variables), giving its sparse ones row sets. The seed
 * d(loss)/d(loss) is 1. Returns 0, or -1 naming the op without a gradient
 * rule (or the loss that is not a scalar float output). */
int px_pass_autodiff_plan(px_graph *g, const px_train_spec *spec, const px_train_plan *plan,
                          px_grads *out, px_diag *d);
/* The same over the plan of g's own variables (px_plan_variables). */
int px_pass_autodiff(px_graph *g, const px_train_spec *spec, px_grads *out, px_diag *d);
void px_grads_free(px_grads *grads);
/* 1 when autodiff has a gradient rule for op (the op table's PX_F_DIFF must
 * agree: tests/unit/test_op_flags.c). */
int px_ad_has_rule(px_op op);

#endif
