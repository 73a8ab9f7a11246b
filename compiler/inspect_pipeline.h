/* inspect's pipeline section (--pp): see inspect_pipeline.c. */
#ifndef PX_INSPECT_PIPELINE_H
#define PX_INSPECT_PIPELINE_H

#include "print_json.h"
#include "var_plan.h"

#include <stdio.h>

/* The fraction of a step each stage idles in 1F1B: (S-1)/(M+S-1). */
double px_pp_bubble(const px_train_plan *plan);
/* The micro-batches whose activations stage s keeps at once in 1F1B (its
 * forwards before its first backward, and that one): min(S - s, M). */
int px_pp_in_flight(const px_train_plan *plan, int s);
/* Nothing without --pp. mem: the buffer plan (each stage's arena), or NULL
 * when there is none. */
void px_print_pipeline_text(FILE *out, const px_train_plan *plan, const px_memory_report *mem);
/* A "pipeline" member (with its leading comma), nothing without --pp. */
void px_print_pipeline_json(FILE *out, const px_train_plan *plan, const px_memory_report *mem);

#endif
