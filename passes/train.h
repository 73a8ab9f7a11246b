/* The training pipeline after folding (design.md §1):
 *
 *   variable plan (var_plan.h) ──▶ autodiff + optimizer (Update / RowUpdate
 *   nodes: the "trained" stage) ──▶ sync choice ──▶ comm (AllReduce buckets,
 *   PS pull/push: the "parallel" stage)
 *
 * The px_train_plan they fill describes the result for the code generator
 * (the program's variable table, buckets) and for `inspect` (classes, sync,
 * bytes). */
#ifndef PX_TRAIN_PASSES_H
#define PX_TRAIN_PASSES_H

#include "autodiff.h"
#include "passes.h"
#include "sparsity.h"
#include "var_plan.h"

#include "px_enums.h"

/* The optimizer, comm mode and sync kinds are px_enums.h's (shared with the
 * runtime's program descriptor). */

typedef struct px_train_config {
    px_train_spec spec; /* loss and frozen initializers */
    px_optim_kind optimizer;
    double lr, momentum, beta1, beta2, epsilon, weight_decay;
    double alpha; /* RMSprop's smoothing constant */
    /* --no-decay: shell patterns (fnmatch) of the variables without weight decay */
    int n_no_decay;
    const char *const *no_decay;
    int nesterov;
    px_comm_mode comm;
    int partitions;       /* PS partitions; 0 = chosen at run time */
    int64_t bucket_bytes; /* AllReduce bucket capacity */
    /* The cost model of --comm auto (traffic.c): ranks it optimizes for
     * (<= 1: 4), seconds per message and per byte (0: 50 us, 1 Gbit/s). */
    int model_ranks;
    double net_alpha, net_beta;
    px_sparsity_config sparsity; /* --sparsity and friends (weight_sparsity.h) */
    /* Predictions only (inspect, plan; docs/relaxed_sync.md): the run's
     * --wire (px_wire_format; rows and buckets in its bytes) and
     * --sync-every K (AllReduce variables averaged every K steps, float32).
     * --staleness S (rows a rank pulled in the last S steps not pulled
     * again: px_train_var's data_pulled_rows; a dense parameter-server
     * variable pulled every S + 1 steps).
     * --comm auto chooses for exact training whatever they say. */
    int wire;
    int64_t sync_every;
    int64_t staleness;
    int tp;            /* --tp K: ranks per tensor-parallel group (0, 1: none) */
    int pp;            /* --pp S: pipeline stages (0, 1: none) */
    int micro_batches; /* --micro-batches M (with --pp) */
} px_train_config;

/* Autodiff + update nodes over the variables of plan (px_plan_variables):
 * every one with a gradient gets an ai.parallax Update(W, G) (dense) or
 * RowUpdate(W, idx, rows, count) (sparse) node at the end of the graph
 * (attributes: var, optimizer, hyper-parameters), and its value is marked
 * is_variable. Sets plan->loss and vars[].has_grad. */
int px_pass_optimizer(px_graph *g, const px_train_config *cfg, px_train_plan *plan, px_diag *d);

/* The masked weights' products as SparseMatMul nodes (sparsify.c), after
 * px_plan_weight_sparsity and before px_pass_optimizer. */
int px_pass_sparsify(px_graph *g, const px_train_plan *plan, px_diag *d);

/* Gives every SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss /
 * TPSoftmaxCrossEntropy whose mean may differ between ranks (reduction
 * mean with ignore_index or class weights) a LossDenominator input: the
 * kept weight averaged over the ranks (loss_denominator.c). After
 * tensor_parallel and pipeline_split, before the optimizer pass. Sets
 * plan->loss_means_over_ranks. */
int px_pass_loss_denominators(px_graph *g, const px_train_config *cfg, px_train_plan *plan,
                              px_diag *d);
/* The LossDenominator nodes that px_pass_loss_denominators gives (or gave)
 * g that average over the ranks: one 8-byte MPI_Allreduce each per step. */
int px_loss_means_over_ranks(const px_graph *g, const px_train_config *cfg);

/* The synchronisation of each variable of plan for cfg->comm (--comm auto:
 * px_auto_choose first): vars[].sync (NONE without a gradient), partitions. */
void px_plan_sync(px_train_plan *plan, const px_train_config *cfg);

/* Communication insertion (see comm.c) as plan's vars[].sync says (after
 * px_plan_sync): sets row_cache_only and the buckets. */
int px_pass_comm(px_graph *g, const px_train_config *cfg, px_train_plan *plan, px_diag *d);
/* Moves every PSPush, with the nodes it depends on, as early as they can go
 * (push_early.c); part of px_pass_comm. */
int px_hoist_pushes(px_graph *g, px_diag *d);

/* Fold (px_pipeline_fold), the variable plan, the optimizer pass, the
 * sync choice, then (parallel != 0) the comm pass; re-verifies the graph. */
int px_pipeline_train(px_graph *g, const px_bindings *b, const px_train_config *cfg, int parallel,
                      px_train_plan *plan, px_diag *d);

/* The cost model (traffic.c): predicted bytes per rank per step (sent +
 * received) and communication seconds per step (alpha-beta, no overlap) of
 * each mode for `ranks` ranks, from the plan's variables (sparse traffic
 * estimated from lookups_per_step as an upper bound of unique rows). auto:
 * the vars' auto_sync (px_auto_choose), hybrid where not set. cfg may be
 * NULL (default network, buckets). */
typedef struct px_traffic_prediction {
    int64_t hybrid, allreduce, ps, auto_;
    double seconds_hybrid, seconds_allreduce, seconds_ps, seconds_auto;
} px_traffic_prediction;
void px_predict_traffic(const px_train_plan *plan, int ranks, const px_train_config *cfg,
                        px_traffic_prediction *out);
/* Under --pp S: the figures of a rank of stage `stage` (each stage's ranks
 * AllReduce their own variables; px_predict_traffic gives the stage whose
 * AllReduce takes longest). Without --pp, px_predict_traffic's. */
void px_predict_stage_traffic(const px_train_plan *plan, int ranks, const px_train_config *cfg,
                              int stage, px_traffic_prediction *out);
/* The bytes and the seconds of p under --comm mode. */
int64_t px_traffic_bytes(const px_traffic_prediction *p, px_comm_mode mode);
double px_traffic_seconds(const px_traffic_prediction *p, px_comm_mode mode);
/* out[r - lo] for every rank count r in [lo, hi]: the figures of
 * px_predict_traffic, with one pass over the variables per 64 counts. */
void px_predict_traffic_range(const px_train_plan *plan, int lo, int hi, const px_train_config *cfg,
                              px_traffic_prediction *out);
/* The same for a rank of stage `stage` (px_predict_stage_traffic). */
void px_predict_stage_traffic_range(const px_train_plan *plan, int lo, int hi,
                                    const px_train_config *cfg, int stage,
                                    px_traffic_prediction *out);
/* Sets vars[].auto_sync: each sparse variable, and the dense variables as a
 * group, by the smaller predicted time at px_auto_model_ranks(cfg) ranks. */
void px_auto_choose(px_train_plan *plan, const px_train_config *cfg);
int px_auto_model_ranks(const px_train_config *cfg);
/* Alpha-beta seconds of one AllReduce of `bytes` on n ranks: the ring
 * (doubling 0) or recursive doubling (1), as runtime/comm runs them. */
double px_allreduce_seconds(int doubling, double bytes, int n, double alpha, double beta);

/* The synchronisation --comm auto gives a variable with a gradient: its
 * auto_sync, else (px_auto_choose has not run) PS for a sparse variable
 * unless a densified AllReduce is predicted faster with the default network
 * at the default ranks, AllReduce for a dense one. */
px_var_sync px_auto_sync(const px_train_var *tv);

#endif
