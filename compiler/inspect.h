/* `parallaxc inspect`: load a model, run the pipeline up to a stage, and
 * write the graph (plus its variables) as text, DOT, JSON or ONNX. */
#ifndef PX_INSPECT_H
#define PX_INSPECT_H

#include "cli.h"
#include "emit.h"
#include "sparsity.h"
#include "train.h"

#include <stdio.h>

/* Runs inspect as cli describes. Returns 0, or -1 with the error in d (model
 * errors, unknown --freeze names, output files that cannot be written). */
int px_inspect(const px_cli *cli, px_diag *d);

/* What the JSON document describes. */
typedef struct px_inspect_doc {
    const char *model; /* path as given */
    const char *stage; /* stage name */
    int ranks;
    const px_graph *g;
    /* The variable plan: the trained variables (frozen ones removed), their
     * classes, synchronisation, partitions, look-ups. */
    const px_train_var *vars;
    int n_vars;
    const px_memory_report *memory; /* the buffer plan; NULL when there is none */
    /* Predicted bytes and communication seconds per rank per step for
     * doc->ranks ranks; NULL when the shapes are not static (imported stage). */
    const px_traffic_prediction *predicted;
    /* Memory per rank (memory_model.h); NULL: none (written as null). */
    const struct px_memory_prediction *memory_per_rank;
} px_inspect_doc;

/* The inspect JSON object (design.md §3): model, stage, ranks, opset, values,
 * nodes, variables. Returns 0, or -1 with an error in d on a write error. */
int px_print_inspect_json(FILE *out, const px_inspect_doc *doc, px_diag *d);
/* One entry of its "variables": name, shape, bytes, class, sync,
 * partitions, rows touched per step, row cache rows, weight_decay (false:
 * excluded by --no-decay). */
void px_print_variable_json(FILE *out, const px_train_var *tv);

/* Estimated fraction of a variable's rows one step touches: 1 for dense
 * variables; lookups per step / rows (at most 1) for sparse ones; -1 unknown. */
double px_rows_touched_fraction(const px_train_var *tv);
/* numel * dtype size of the variable, or -1 if it overflows. */
int64_t px_var_bytes(const px_train_var *v);

#endif
