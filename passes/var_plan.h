/* The variable plan: what the training pipeline knows about each trainable
 * variable, decided once and read by every later stage.
 *
 *   px_plan_variables   sparsity analysis (sparsity.h), once: which
 *                       initializers are trained (not frozen), each one's
 *                       class and why, its look-ups per step
 *   px_pass_optimizer   reads the plan (autodiff differentiates exactly its
 *                       variables, sparse ones to row sets); sets has_grad
 *   px_plan_sync        the synchronisation --comm gives each variable
 *   px_pass_comm        inserts the communication the plan says
 *
 * inspect, compile, the code generator (the program's variable table) and
 * the cost and memory models read the same plan; none re-derives it. */
#ifndef PX_VAR_PLAN_H
#define PX_VAR_PLAN_H

#include "graph.h"
#include "model_meta.h"
#include "px_enums.h"
#include "weight_sparsity.h"

typedef struct px_train_spec {
    const char *loss; /* output name; NULL: the only scalar float output */
    int n_freeze;     /* initializers that are not trained */
    const char *const *freeze;
    /* The model's parallax.* metadata (model_meta.h), or NULL: its trainable
     * set, tied copies (never variables) and padding_idx rows. */
    const px_model_meta *meta;
} px_train_spec;

/* 1 if spec lists name among the frozen initializers (spec may be NULL). */
int px_train_spec_is_frozen(const px_train_spec *spec, const char *name);

typedef struct px_train_var {
    px_value *value; /* the initializer */
    /* ---- px_plan_variables (sparsity analysis) ---- */
    px_var_class cls;
    int n_gathers;             /* uses that are row look-ups (all of them when sparse) */
    const char *dense_reason;  /* why dense (static string) or NULL */
    const px_node *dense_node; /* the use that made it dense, or NULL */
    int64_t lookups_per_step;  /* sparse: indices read per step (sum over Gathers) */
    /* ---- px_pass_optimizer (1 until it runs) ---- */
    int has_grad; /* 0: the loss does not depend on it (never updated) */
    /* ---- px_plan_sync ---- */
    px_var_sync sync;      /* NONE: not synchronised (no gradient), or not chosen yet */
    int partitions;        /* PS variables: as configured (0 = auto); else 1 */
    px_var_sync auto_sync; /* --comm auto's choice (px_auto_choose); NONE: not made */
    /* ---- px_pass_comm ---- */
    int row_cache_only; /* 1: the step reads the variable only through PSPull's row
                           caches, never its full storage (sparse PS variables) */
    /* ---- px_plan_variables ---- */
    int no_decay; /* 1: excluded from weight decay (--no-decay) */
    /* ---- px_plan_weight_sparsity ---- */
    px_masked_plan *masked; /* NULL: not masked */
    /* ---- parallaxc plan --data (compiler/plan_rows.c), per rank and step for
     * the ranks and staleness being predicted; 0 when unknown (the cost model
     * then takes lookups_per_step as the rows, and no reuse) ---- */
    double data_rows;        /* distinct rows a rank's batch reads */
    double data_pulled_rows; /* of those, the rows it pulls (the rest it kept) */
    /* ---- px_pass_tensor_parallel ---- */
    int tp_split; /* px_tp_split: how the compute of --tp splits it */
    /* Stored split (tp_full.rank > 0, px_tp_stored): each rank of a group
     * holds slab t of --tp along tp_axis, and its optimizer state (value's
     * shape is the slab's; tp_full, the whole variable's); its gradient, a
     * slab too, is averaged only over the ranks holding the same slab (a
     * slab bucket, bucket_slab). A variable of tp_sections > 1 equal
     * sections along tp_axis (the packed Q/K/V weight of an attention
     * block) has slab t made of part t of each section, side by side. */
    int tp_axis;
    int tp_sections; /* 0 or 1: one section */
    px_shape tp_full;
    /* ---- px_pass_pipeline_split (--pp) ---- */
    int pp_stage; /* the pipeline stage whose nodes read it (0 without --pp): only
                     that stage's ranks hold it, its optimizer state and update it */
} px_train_var;

/* --pp: one stage of the pipeline (pipeline_parallel.c), for inspect. */
typedef struct px_pp_stage_info {
    char first[128], last[128]; /* its first and last forward nodes */
    int n_layers;               /* forward nodes that read a trained variable */
    double flops;               /* predicted forward FLOPs of one micro-batch */
    int64_t send_bytes;         /* activation bytes of one micro-batch it sends on */
    int64_t var_bytes;          /* bytes of the variables it trains */
} px_pp_stage_info;

/* A tied copy (parallax.ties) of a trained variable: an initializer that is
 * no variable of its own (its uses read the variable, px_pass_apply_ties)
 * and that --save writes from the variable. */
typedef struct px_train_tie {
    px_value *copy;
    int var;    /* index into vars */
    int n_perm; /* 0: no transpose */
    int64_t perm[PX_MAX_RANK];
} px_train_tie;

/* How --tp splits a weight's compute over a group (tensor_parallel.c). */
typedef enum px_tp_split {
    PX_TP_REPLICATED = 0, /* every rank of the group computes with all of it */
    PX_TP_COLUMNS,        /* its output features (a pair's first weight, its bias) */
    PX_TP_ROWS,           /* its input features (a pair's second weight) */
} px_tp_split;

static inline int px_tp_stored(const px_train_var *v) {
    return v->tp_full.rank > 0;
}

typedef struct px_train_plan {
    px_value *loss; /* set by px_pass_optimizer */
    int n_vars;     /* trainable variables, g->inits order; index = `var` attribute */
    px_train_var *vars;
    int n_tied; /* the tied copies of vars (px_plan_variables) */
    px_train_tie *tied;
    int n_buckets; /* set by px_pass_comm */
    int64_t *bucket_bytes;
    /* --tp: 1 where the bucket holds slabs of variables stored split,
     * reduced over the ranks at the same position of every group (rank mod
     * tp: N / tp of them) instead of over all ranks */
    int64_t *bucket_slab;
    /* --pp: the stage whose ranks reduce each bucket (its variables' stage,
     * px_train_var.pp_stage), over that stage's ranks only; NULL without --pp */
    int64_t *bucket_stage;
    int n_masked;                /* set by px_plan_weight_sparsity: the masked weights, in the */
    px_masked_plan *masked;      /* order of the program's masked table */
    void *var_index;             /* private: value -> index into vars (px_plan_var_of) */
    int tp;                      /* --tp: ranks per tensor-parallel group (0, 1: none) */
    int pp;                      /* --pp: pipeline stages (0, 1: none) */
    int micro_batches;           /* --micro-batches (with --pp) */
    px_pp_stage_info *pp_stages; /* pp entries (px_pass_pipeline_split) */
    /* LossDenominator nodes averaging over the ranks (loss_denominator.c):
     * each one more 8-byte MPI_Allreduce per step */
    int loss_means_over_ranks;
    /* --tp: what the pass chose beyond the split variables, one line each
     * for inspect --stage parallel (a projection kept whole, a tied weight
     * read through TPSlice); px_tp_note adds one */
    int n_tp_notes;
    char **tp_notes;
} px_train_plan;

/* Fills plan (which it clears first) with the trainable variables of g:
 * every float initializer that spec does not freeze (with metadata: those of
 * its trainable set, plus the running statistics a training-mode
 * BatchNormalization updates; never a tied copy), classified by
 * px_classify_variables. Every --freeze name must be a float initializer of
 * g. Returns 0, or -1 with the error in d. Free with px_train_plan_free,
 * also after an error. */
int px_plan_variables(const px_graph *g, const px_train_spec *spec, px_train_plan *plan,
                      px_diag *d);
void px_train_plan_free(px_train_plan *plan);

/* The synchronisation --comm hybrid, allreduce or ps (not auto: see
 * px_auto_sync in train.h) gives a variable with a gradient: hybrid puts
 * sparse variables on the parameter servers and AllReduces the rest. */
px_var_sync px_mode_sync(px_comm_mode comm, const px_train_var *tv);

/* Estimated fraction of a variable's rows one step touches: 1 for dense
 * variables; lookups per step / rows (at most 1) for sparse ones; -1 unknown. */
double px_rows_touched_fraction(const px_train_var *tv);
/* numel * dtype size of the variable, or -1 if it overflows. */
int64_t px_var_bytes(const px_train_var *v);
/* The index into plan->vars of the variable whose initializer is v, or -1.
 * O(1) through the index px_plan_variables builds. Pass the plan itself
 * around, never a copy assembled from its vars: such a copy has no index
 * and every look-up scans (a listing of n initializers became O(n^2)). */
int px_plan_var_of(const px_train_plan *plan, const px_value *v);
/* 1 if v is a running statistic (input 3 or 4) of a training-mode
 * BatchNormalization: updated by the step (Assign), never trained. */
int px_is_running_statistic(const px_value *v);
/* Why the float initializer v is not trained under plan and spec (a static
 * string: "--freeze", "a tied copy (parallax.ties)", ...), or NULL when it is. */
const char *px_not_trained_reason(const px_train_plan *plan, const px_train_spec *spec,
                                  const px_value *v);
/* Where the trained set comes from, for listings: the metadata, or the
 * default (every float initializer not frozen). */
const char *px_trained_set_source(const px_train_spec *spec);

/* Indices read per step by the Gathers of v (static shapes). */
int64_t px_var_lookups_per_step(const px_value *v);

#endif
