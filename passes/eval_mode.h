/* Inference programs (`parallaxc compile --infer`) run the model as PyTorch's
 * model.eval() does, whatever mode it was exported in, and compute only the
 * outputs asked for (passes/eval_mode.c). */
#ifndef PX_EVAL_MODE_H
#define PX_EVAL_MODE_H

#include "graph.h"

/* BatchNormalization in training mode becomes inference mode (running
 * statistics) unless its updated statistics are read (then it was asked
 * for training mode explicitly); every Dropout runs as in inference (the
 * identity, an all-true mask). */
int px_pass_eval_mode(px_graph *g, px_diag *d);

/* Makes the named values the graph's outputs, in that order (any value of
 * the model may be named). Error naming the missing name and listing the
 * model's outputs. */
int px_pass_select_outputs(px_graph *g, int n, char *const *names, px_diag *d);

/* Drops graph inputs nothing reads any more (labels once the loss is not
 * computed): the program does not ask for their data. Returns how many. */
int px_pass_drop_unused_inputs(px_graph *g);

#endif
