/* Static buffer plan: every runtime-fed input, intermediate and output gets
 * an offset in one arena, reusing memory of values whose live ranges (in
 * plan call order) do not overlap. Constants live in their own globals.
 * Under --pp the buffers that only one stage's ranks touch (buffer_stages.h)
 * follow the shared ones, each stage's laid out over the others': a rank
 * allocates the shared region and its own stage's only (stage_bytes). */
#ifndef PX_MEMPLAN_H
#define PX_MEMPLAN_H

#include "plan.h"

#define PX_ARENA_ALIGN 64

typedef struct px_memplan {
    int64_t arena_bytes; /* peak: the arena's size (--pp: the largest stage's) */
    int64_t naive_bytes; /* what one buffer per value would need */
    int n_values;
    int64_t *offset;      /* per value id; -1: not in the arena (constant or unused) */
    int n_stages;         /* --pp: the stages the calls run on; 0: none */
    int64_t *stage_bytes; /* [n_stages]: the arena of stage s's ranks */
} px_memplan;

int px_memplan_build(const px_graph *g, const px_plan *plan, px_memplan *mp, px_diag *d);
void px_memplan_free(px_memplan *mp);

#endif
