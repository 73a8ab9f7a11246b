/* The planner's layouts (parallaxc plan --layouts): data parallelism,
 * tensor parallelism (--tp K) and pipeline parallelism (--pp S
 * --micro-batches M) on the same N ranks at the same global batch, each
 * predicted from the cost model, so that the plan can say which one wins.
 *
 * Each layout's per-rank program is built as compile builds it (the tensor-
 * parallel and pipeline passes, autodiff, the optimizer) at the batch of
 * its group, tp x pp x the per-rank batch B, so every layout trains on N x B
 * samples a step and gives the same numbers. A step of a rank is
 *   compute  the data-parallel step's measured compute, scaled by the
 *            layout's predicted FLOPs over data parallelism's
 *            (px_node_flops over every node of the step: forward, backward,
 *            update; not the data-parallel exchange's). Under --pp, a stage's work per micro-batch
 * (the nodes of its forward and backward passes) takes the 1F1B critical path: sum over stages + (M
 * - 1) x the largest, which is the bubble (S-1)/(M+S-1) when the stages are even; plus what runs
 *            once a step;
 *   + the data-parallel AllReduce over all N ranks (px_predict_traffic:
 *            the split weights' slabs over N / tp);
 *   + the group sums (tp): each an MPI_Allgather of its values in the
 *            group, ceil(log2 K) latencies + (K-1) x its bytes;
 *   + the stage transfers (pp): every activation sent on and its gradient
 *            back, a latency each plus the larger direction's bytes of the
 *            busiest stage.
 * Nothing is hidden behind compute, as in the rest of the plan. Exchanges
 * among ranks of one host (a group or a pipeline within --ranks-per-host)
 * are not charged to the link. */
#ifndef PX_PLAN_LAYOUTS_H
#define PX_PLAN_LAYOUTS_H

#include "cli.h"
#include "diag.h"

#include <stdio.h>

enum { PX_MAX_LAYOUTS = 16 };

typedef struct px_layout_net {
    int ranks;          /* N: all the hosts' ranks */
    int ranks_per_host; /* consecutive ranks on one host */
    double alpha;       /* seconds a message */
    double beta;        /* seconds a byte on a rank's share of its host's link */
    double compute;     /* seconds of compute of a data-parallel step of a rank */
    int micro_batches;  /* --micro-batches of every --pp layout; 0: the default */
} px_layout_net;

typedef struct px_layout {
    int tp, pp, micro_batches;
    char name[64];  /* "data parallel", "--tp 2", "--pp 2 --micro-batches 8", ... */
    char why[512];  /* not predicted: why (the passes' error); empty when predicted */
    double work;    /* predicted FLOPs of a step on a rank's critical path */
    double compute; /* seconds */
    double dp_seconds, group_seconds, stage_seconds; /* communication, seconds per step */
    double dp_bytes, group_bytes, stage_bytes;       /* sent + received per step by the
                                                        busiest rank (its stage's) */
    double bubble;                                   /* (S-1)/(M+S-1) */
    double step, samples_per_second;
} px_layout;

/* The default micro-batches of --pp S at pipeline batch b: the largest
 * divisor of b not above 4 S (a bubble under 20%). */
int px_layout_default_micro_batches(int stages, int64_t batch);

/* Predicts data parallelism and every tp x pp > 1 that divides net->ranks
 * (at most PX_MAX_LAYOUTS in all, data parallelism first), for the model
 * and flags of cli (its per-rank batch B). A layout the model cannot take
 * gets its reason in why. Returns the count, or -1 with the error in d
 * (out of memory; the data-parallel layout fails). */
int px_plan_layouts(const px_cli *cli, const px_layout_net *net, px_layout *out, px_diag *d);

/* The fastest predicted layout of out[0 .. n) (out[0] when none is
 * predicted faster). */
const px_layout *px_best_layout(const px_layout *out, int n);

/* The layouts as a table and the fastest one with its compile flags; as
 * the plan JSON's "layouts" array and "fastest_layout" (appended to an
 * object being written). batch: the per-rank batch. */
void px_print_layouts_text(FILE *f, const px_layout *l, int n, int hosts, int ranks, int64_t batch,
                           const char *comm);
void px_print_layouts_json(FILE *f, const px_layout *l, int n, int64_t batch);

#endif
