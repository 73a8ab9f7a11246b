/* Which ranks touch each buffer of a --pp program (docs/parallelism.md,
 * "What each rank stores"): a call of a node with pp_stage runs on that
 * stage's ranks only, a PPTransfer reads its input on stage `from` and
 * writes its output on stage `to`, a PPBroadcast reads its input on stage
 * `from` and writes its output on every stage; every other call, the graph
 * inputs (the loader writes them) and outputs (every rank reports them) are
 * touched by every rank. The buffer plan (memplan.c) lays each stage's
 * buffers out over one another, so each rank's arena holds only its own
 * stage's values and the shared ones. */
#ifndef PX_BUFFER_STAGES_H
#define PX_BUFFER_STAGES_H

#include "plan.h"

#define PX_BUFFER_UNUSED (-2) /* no call touches it */
#define PX_BUFFER_SHARED (-1) /* every rank touches it */

/* stage[v] for every value id v whose buffer is root[v]'s (view groups,
 * memplan.c): the one stage whose ranks alone touch the group, or
 * PX_BUFFER_SHARED / PX_BUFFER_UNUSED, the same for every member. Returns
 * the number of stages (1 + the largest pp_stage a call has), 0 for a
 * program without stages (every buffer then PX_BUFFER_SHARED or unused). */
int px_buffer_stages(const px_graph *g, const px_plan *plan, const int *root, int *stage);

#endif
