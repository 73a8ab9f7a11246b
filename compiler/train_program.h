/* The per-rank training program `compile` builds, for the commands that
 * predict from it without compiling (inspect's memory, plan's layouts). */
#ifndef PX_TRAIN_PROGRAM_H
#define PX_TRAIN_PROGRAM_H

#include "model_meta.h"
#include "passes.h"
#include "train.h"

#include <stddef.h>

/* A built training program: its graph, variable plan and metadata (which
 * the graph's config points at). */
typedef struct px_built_program {
    px_graph *graph;
    px_train_plan plan;
    px_model_meta meta;
} px_built_program;

/* Loads model and builds its training graph as compile does: its metadata
 * and ties, then px_pipeline_train at bindings b with cfg and the comm pass
 * (cfg->spec.meta points at out->meta). A model with no training program
 * (no loss, shapes not static, a flag it cannot take) is a reason to show,
 * not an error: returns 0, or -1 with the first line of the error in why
 * (cap bytes). *out must start zeroed; px_built_program_free after either. */
int px_train_program_or_why(const char *model, const px_bindings *b, px_train_config *cfg,
                            px_built_program *out, char *why, size_t cap);
void px_built_program_free(px_built_program *p);

#endif
