/* Memory per rank of a training program (`inspect --ranks N`, issue #9):
 * the bytes each rank holds, by kind, predicted from the parallel-stage
 * graph, its training plan and its buffer plan. The program computes the
 * same breakdown from what it holds at run time (runtime/program/
 * memory_stats.c) and writes it next to its measured peak RSS (--stats).
 *
 * Not predicted: the process baseline (the binary, MPI, BLAS, the data set,
 * the small constants embedded in the program). */
#ifndef PX_MEMORY_MODEL_H
#define PX_MEMORY_MODEL_H

#include "cli.h"
#include "emit.h"
#include "train.h"

#include <stdio.h>

typedef struct px_rank_memory {
    int rank;
    int shard;               /* the shard this rank is (0..shards-1); -1: a worker only */
    int64_t shard_rows;      /* master rows of the parameter-server partitions placed on it */
    int64_t optimizer_state; /* their optimizer slots */
    int64_t row_cache;       /* PSPull row caches + remaps of one step (inside activations) */
    int64_t dense_replicas;  /* replicated variables, their optimizer slots, AllReduce buffers */
    int64_t frozen_weights;  /* initializers read from the model and never trained */
    int64_t activations;     /* the arena: the buffer plan's peak (--pp: its stage's) */
    int64_t total;           /* all of them, the row cache counted once (in activations) */
} px_rank_memory;

typedef struct px_memory_prediction {
    int ranks, ranks_per_node, shards;
    int n_slots;              /* optimizer slots per trained float */
    int auto_partitions;      /* some PS variable has --partitions auto: assumed one partition
                                 per shard, the run-time search's first candidate (its other
                                 counts, multiples of the shard count, keep each shard's rows
                                 to within a few: px_ps_layout.h) */
    px_rank_memory *per_rank; /* [ranks] */
} px_memory_prediction;

/* The prediction for `ranks` ranks in nodes of ranks_per_node consecutive
 * ranks (0: one node), one shard per node (its lowest rank), as the
 * program's runtime lays them out. g and plan: the parallel stage
 * (px_pipeline_train with parallel = 1); arena: its buffer plan (under
 * --pp, each stage's ranks hold their stage's arena). Returns 0, or -1
 * with an error in d. */
int px_predict_memory(const px_graph *g, const px_train_plan *plan, px_optim_kind optimizer,
                      const px_memory_report *arena, int ranks, int ranks_per_node,
                      px_memory_prediction *out, px_diag *d);
void px_memory_prediction_free(px_memory_prediction *m);

/* The buffer plan compile would make for g into *r: 0, or -1 with the
 * first line of the reason it has none (a graph the code generator cannot
 * compile) in why (cap bytes): shown, not fatal. */
int px_memory_plan_or_why(const px_graph *g, px_memory_report *r, char *why, size_t cap);

/* For inspect: the prediction for cli's flags. g and plan: the parallel
 * stage when inspect built it, else NULL (the model is loaded again and the
 * training pipeline run here). g_buffers: with g, its buffer plan when the caller
 * has made it (px_memory_plan_or_why), else NULL (made here). Returns 0
 * with *out filled; 1 when the model has no training program (no loss,
 * shapes not static, ...) or no buffer plan: why says why and inspect goes
 * on; -1 with an error in d. */
int px_inspect_memory(const px_cli *cli, const px_graph *g, const px_train_plan *plan,
                      const px_memory_report *g_buffers, px_memory_prediction *out, char *why,
                      size_t cap, px_diag *d);

/* "memory per rank (N ranks, S shards)": one line per shard rank, one for
 * the other ranks (all alike). */
void px_print_memory_text(FILE *out, const px_memory_prediction *m, const char *why);
/* The inspect JSON keys (each after ",\n "): "predicted_memory_layout"
 * (ranks, ranks_per_node, shards, optimizer_slots, auto_partitions_assumed)
 * and "predicted_memory_per_rank" (one object per rank), or only the latter,
 * null, when m is NULL. */
void px_print_memory_json(FILE *out, const px_memory_prediction *m);

#endif
