/* The planner's rows from the data: for each sparse variable whose look-ups
 * read graph inputs (through shape-only ops), how many distinct rows a
 * rank's batch reads per step, and how many of them it pulls under
 * --staleness S (the rest it pulled in its last S steps and kept), replayed
 * on the data folder in the runtime's order (no --shuffle: step s of rank r
 * reads samples (s mod E)·N·B + r·B .. + B, E the steps of an epoch).
 * The cost model's bound (look-ups per step, no reuse) stands in for
 * variables or folders it cannot read (computed indices, sharded data). */
#ifndef PX_PLAN_ROWS_H
#define PX_PLAN_ROWS_H

#include "diag.h"
#include "graph.h"
#include "train.h"

typedef struct px_plan_rows px_plan_rows;

/* Finds the index inputs of plan's sparse variables in g (folded as
 * planned) and maps their files in data_dir. *out is NULL when no variable
 * can be measured (the reason, for the plan's text, in why). -1 only for
 * out of memory. */
int px_plan_rows_open(const px_graph *g, const px_train_plan *plan, const char *data_dir,
                      int64_t batch, px_plan_rows **out, char *why, size_t why_cap, px_diag *d);
/* Variables measured (0 for NULL). */
int px_plan_rows_count(const px_plan_rows *r);
/* Sets data_rows and data_pulled_rows of the measured variables of plan for
 * `ranks` ranks of per-rank batch `batch` and staleness S (0: exact), means
 * over steps of whole epochs after the first S + 1 and over up to 4 ranks;
 * 0 for all when the data holds fewer samples than a global batch. */
void px_plan_rows_apply(const px_plan_rows *r, px_train_plan *plan, int ranks, int64_t staleness);
void px_plan_rows_free(px_plan_rows *r);

#endif
