/* Static buffer plan: every runtime-fed input, intermediate and output gets
 * an offset in one arena, reusing memory of values whose live ranges (in
 * plan call order) do not overlap. Constants live in their own globals. */
#ifndef PX_MEMPLAN_H
#define PX_MEMPLAN_H

#include "plan.h"

#define PX_ARENA_ALIGN 64

typedef struct px_memplan {
    int64_t arena_bytes; /* peak: the arena's size */
    int64_t naive_bytes; /* what one buffer per value would need */
    int n_values;
    int64_t *offset; /* per value id; -1: not in the arena (constant or unused) */
} px_memplan;

int px_memplan_build(const px_graph *g, const px_plan *plan, px_memplan *mp, px_diag *d);
void px_memplan_free(px_memplan *mp);

#endif
