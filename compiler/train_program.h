/* The per-rank training program `compile` builds, for the commands that
 * predict from it without compiling (inspect's memory, plan's layouts). */
#ifndef PX_TRAIN_PROGRAM_H
#define PX_TRAIN_PROGRAM_H

#include "model_meta.h"
#include "passes.h"
#include "train.h"

/* Loads model and builds its training graph as compile does: its metadata
 * and ties, then px_pipeline_train at bindings b with cfg (whose spec.meta
 * it points at meta; parallel: with the comm pass). Returns the graph, or
 * NULL with the error in d. The caller frees the graph, plan and meta, also
 * after an error. */
px_graph *px_train_program(const char *model, const px_bindings *b, px_train_config *cfg,
                           int parallel, px_model_meta *meta, px_train_plan *plan, px_diag *d);

#endif
