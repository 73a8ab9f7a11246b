/* The training-mode Dropout rewrite (dropout_rewrite.c), a pass of the
 * training pipeline run before autodiff. */
#ifndef PX_DROPOUT_REWRITE_H
#define PX_DROPOUT_REWRITE_H

#include "graph.h"

/* Turns every training-mode Dropout with ratio > 0 into
 * ai.parallax::DropoutTrain (same outputs, attributes ratio and seed_key).
 * Idempotent. Returns 0, or -1 with an error naming the node when its
 * training_mode or ratio is not a compile-time constant. */
int px_pass_dropout_rewrite(px_graph *g, px_diag *d);

/* 1: n (a Dropout) is training-mode with ratio > 0 (*ratio set); 0: it is
 * the identity; -1: undecidable at compile time (error recorded). */
int px_dropout_draws(const px_graph *g, const px_node *n, double *ratio, px_diag *d);

#endif
