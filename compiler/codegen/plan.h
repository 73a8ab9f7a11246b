/* The execution plan of a folded graph: its nodes lowered, in order, to
 * runtime kernel calls. */
#ifndef PX_PLAN_H
#define PX_PLAN_H

#include "lower.h"

typedef struct px_plan {
    int n_calls;
    px_kcall *calls;
} px_plan;

/* Lowers every live node; on failure reports every node that cannot be
 * lowered (not just the first) and returns -1. */
int px_plan_build(const px_graph *g, px_plan *plan, px_diag *d);
void px_plan_free(px_plan *plan);

#endif
