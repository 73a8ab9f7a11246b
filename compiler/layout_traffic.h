/* The bytes per rank and step of a layout's own exchanges, besides the
 * data-parallel ones (passes/traffic.c): the --tp group sums and the --pp
 * stage transfers, read off the training program's graph. Added to each
 * stage's data-parallel bytes they make the layout's prediction: the one
 * inspect prints for --tp and --pp, compile.json records (and `parallaxc
 * report` compares with --stats), and plan --layouts ranks layouts by. The
 * runtime counts these exchanges as "other" traffic. */
#ifndef PX_LAYOUT_TRAFFIC_H
#define PX_LAYOUT_TRAFFIC_H

#include "graph.h"
#include "train.h"

#include <stdint.h>

typedef struct px_stage_bytes {
    int64_t group;    /* --tp: the group sums of its nodes (px_tp_group_sum_bytes) */
    int64_t out, in;  /* --pp: activations and gradients sent to and received from other
                         stages, and the loss broadcast from the last stage */
    int64_t messages; /* the stage transfers' messages, sends and receives */
} px_stage_bytes;

/* Adds node n's layout exchange to st[its stage] (pp entries), or to *all
 * for a node of no stage (every rank runs it). A stage transfer counts only
 * with `transfers` set (plan --layouts leaves out those within a host).
 * Returns 1 when n is a stage transfer or the loss broadcast (no compute). */
int px_stage_bytes_add(const px_node *n, int pp, int transfers, px_stage_bytes *st,
                       px_stage_bytes *all);

/* The layout's prediction per rank and step at every rank count in [lo, hi]
 * for training program g: the data-parallel bytes of a rank of each stage
 * plus its layout's own exchanges (its stage's group sums and transfers and
 * the group sums of the nodes every rank runs). by_stage[s * (hi - lo + 1) + r - lo] (pp entries
 * a count; NULL: not wanted) and mean[r - lo], the mean over the ranks (each
 * stage has as many). Seconds are the data-parallel ones (the mean's:
 * px_predict_traffic's). -1 when out of memory. */
int px_predict_layout_traffic(const px_graph *g, const px_train_plan *plan, int lo, int hi,
                              const px_train_config *cfg, px_traffic_prediction *by_stage,
                              px_traffic_prediction *mean);

#endif
