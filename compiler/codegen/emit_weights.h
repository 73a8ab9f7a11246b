/* The weights a generated program loads from its model at start
 * (runtime/px_weights.h) rather than embeds. */
#ifndef PX_EMIT_WEIGHTS_H
#define PX_EMIT_WEIGHTS_H

#include "emit.h"

typedef struct px_weight_choice {
    int n_weights;
    const px_value **weights; /* weight index -> value */
    int *weight_of;           /* value id -> weight index, -1: embedded or in the arena */
} px_weight_choice;

/* Chooses among the values plan and o->train use; none without
 * o->weights_src. */
int px_choose_weights(const px_graph *g, const px_plan *plan, const px_codegen_opts *o,
                      px_weight_choice *c, px_diag *d);
void px_weight_choice_free(px_weight_choice *c);

#endif
