/* The JSON document of `parallaxc inspect --format json` (print_json.c):
 * inspect fills a px_inspect_doc and hands it over; the printer reads only
 * the document. */
#ifndef PX_PRINT_JSON_H
#define PX_PRINT_JSON_H

#include "memory_model.h"
#include "train.h"

#include <stdio.h>

/* What the JSON document describes. */
typedef struct px_inspect_doc {
    const char *model; /* path as given */
    const char *stage; /* stage name */
    int ranks;
    const px_graph *g;
    /* The variable plan (px_plan_variables', with its look-up index): the
     * trained variables (frozen ones removed), their classes,
     * synchronisation, partitions, look-ups; NULL: none. */
    const px_train_plan *plan;
    const px_memory_report *memory; /* the buffer plan; NULL when there is none */
    /* Predicted bytes and communication seconds per rank per step for
     * doc->ranks ranks; NULL when the shapes are not static (imported stage). */
    const px_traffic_prediction *predicted;
    /* Under --pp S (plan->pp > 1): predicted[] of a rank of each stage,
     * S of them (predicted is the slowest stage's); NULL: none. */
    const px_traffic_prediction *predicted_by_stage;
    /* Under --tp or --pp at the parallel stage: the layout's prediction
     * (layout_traffic.h: the data-parallel bytes with the group sums and the
     * stage transfers), the mean over the ranks, and (--pp) a rank of each
     * stage's, S of them; NULL: none. */
    const px_traffic_prediction *predicted_layout;
    const px_traffic_prediction *predicted_layout_by_stage;
    /* Memory per rank (memory_model.h); NULL: none (written as null). */
    const struct px_memory_prediction *memory_per_rank;
    /* What decides the trained set (frozen names, the model's metadata):
     * the "trained" entry; NULL: none. */
    const px_train_spec *spec;
} px_inspect_doc;

/* The inspect JSON object (design.md §3): model, stage, ranks, opset, values,
 * nodes, variables. Returns 0, or -1 with an error in d on a write error. */
int px_print_inspect_json(FILE *out, const px_inspect_doc *doc, px_diag *d);
/* One entry of its "variables": name, shape, bytes, class, sync,
 * partitions, rows touched per step, row cache rows, weight_decay (false:
 * excluded by --no-decay). */
void px_print_variable_json(FILE *out, const px_train_var *tv);
/* The bytes of each --comm mode, as the fields of an object: "hybrid": N,
 * "allreduce": N, "ps": N, "auto": N. */
void px_print_bytes_fields(FILE *out, const px_traffic_prediction *p);

#endif
