/* The training pipeline after folding (design.md §1):
 *
 *   autodiff ──▶ optimizer (Update / RowUpdate nodes: the "trained" stage)
 *            ──▶ comm (AllReduce buckets, PS pull/push: the "parallel" stage)
 *
 * px_train_plan describes the result for the code generator (the program's
 * variable table, buckets) and for `inspect` (classes, sync, bytes). */
#ifndef PX_TRAIN_PASSES_H
#define PX_TRAIN_PASSES_H

#include "autodiff.h"
#include "passes.h"
#include "sparsity.h"

typedef enum px_optim {
    PX_OPTIM_KIND_SGD = 0,
    PX_OPTIM_KIND_MOMENTUM,
    PX_OPTIM_KIND_ADAM,
    PX_OPTIM_KIND_ADAGRAD
} px_optim;
/* AUTO: hybrid, except sparse variables for which densified AllReduce is
 * predicted to move fewer bytes than the parameter servers. */
typedef enum px_comm_kind {
    PX_COMM_KIND_HYBRID = 0,
    PX_COMM_KIND_ALLREDUCE,
    PX_COMM_KIND_PS,
    PX_COMM_KIND_AUTO
} px_comm_kind;
typedef enum px_sync {
    PX_SYNC_KIND_NONE = 0,
    PX_SYNC_KIND_ALLREDUCE = 1,
    PX_SYNC_KIND_PS = 2
} px_sync;

typedef struct px_train_config {
    px_train_spec spec; /* loss and frozen initializers */
    px_optim optimizer;
    double lr, momentum, beta1, beta2, epsilon, weight_decay;
    int nesterov;
    px_comm_kind comm;
    int partitions;       /* PS partitions; 0 = chosen at run time */
    int64_t bucket_bytes; /* AllReduce bucket capacity */
} px_train_config;

typedef struct px_train_var {
    px_value *value; /* the initializer */
    px_var_class cls;
    px_sync sync;             /* set by the comm pass (NONE before) */
    int partitions;           /* PS variables: as configured (0 = auto); else 1 */
    int64_t lookups_per_step; /* sparse: indices read per step (sum over Gathers) */
    const char *dense_reason; /* why dense (static string) or NULL */
    int has_grad;             /* 0: the loss does not depend on it (never updated) */
    int row_cache_only;       /* 1: the step reads the variable only through PSPull's row
                                 caches, never its full storage (sparse PS variables) */
} px_train_var;

typedef struct px_train_plan {
    px_value *loss;
    int n_vars; /* trainable variables, g->inits order; index = `var` attribute */
    px_train_var *vars;
    int n_buckets;
    int64_t *bucket_bytes;
} px_train_plan;

const char *px_optim_name(px_optim o);
const char *px_comm_kind_name(px_comm_kind c);
const char *px_sync_name(px_sync s);

/* Autodiff + update nodes: every trainable variable with a gradient gets an
 * ai.parallax Update(W, G) or RowUpdate(W, idx, rows, count) node at the end
 * of the graph (attributes: var, optimizer, hyper-parameters), and its value
 * is marked is_variable. Fills plan (vars, loss). */
int px_pass_optimizer(px_graph *g, const px_train_config *cfg, px_train_plan *plan, px_diag *d);

/* Communication insertion for cfg->comm (see comm.c): sets vars[].sync and
 * the buckets. */
int px_pass_comm(px_graph *g, const px_train_config *cfg, px_train_plan *plan, px_diag *d);

/* Fold (px_pipeline_fold), then the optimizer pass, then (parallel != 0) the
 * comm pass; re-verifies the graph. */
int px_pipeline_train(px_graph *g, const px_bindings *b, const px_train_config *cfg, int parallel,
                      px_train_plan *plan, px_diag *d);

/* Predicted bytes per rank per step (sent + received) of each mode for
 * `ranks` ranks, from the plan's variables (sparse traffic estimated from
 * lookups_per_step as an upper bound of unique rows). */
typedef struct px_traffic_prediction {
    int64_t hybrid, allreduce, ps;
} px_traffic_prediction;
void px_predict_traffic(const px_train_plan *plan, int ranks, px_traffic_prediction *out);

/* The synchronisation --comm gives a variable (the comm pass's rule). */
px_sync px_choose_sync(px_comm_kind comm, const px_train_var *tv);

/* Indices read per step by the Gathers of v (static shapes). */
int64_t px_var_lookups_per_step(const px_value *v);
/* 1 if a sparse variable is predicted to move fewer bytes as a densified
 * AllReduce than through the parameter servers (--comm auto). */
int px_sparse_prefers_allreduce(const px_train_var *tv);

void px_train_plan_free(px_train_plan *plan);

#endif
