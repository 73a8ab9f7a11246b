/* The training runtime's internal interfaces: optimizer math (runtime/optim/),
 * MPI communication (runtime/comm/) and the training main
 * (runtime/program/train*.c). Generated code reaches all of this only through
 * the kernels listed at the end (ABI of px_kernel.h); the compiler lowers the
 * ai.parallax training and communication nodes to them. */
#ifndef PX_TRAIN_H
#define PX_TRAIN_H

#include "px_program.h"

#include <stddef.h>
#include <stdint.h>

#define PX_OPTIM_MAX_SLOTS 2 /* the most px_optim_kind_slots gives (Adam) */

/* ---- run-time state shared by the kernels (owned by program/train.c) ---- */
typedef struct px_train_ctx {
    const px_program_desc *prog;
    int64_t t; /* 1-based number of the optimizer step being run (Adam's bias
                  correction, Adagrad); a resumed run continues the count */
    /* Optimizer state of the variables updated on this rank (PX_SYNC_ALLREDUCE):
     * slots[v * PX_OPTIM_MAX_SLOTS + s], zero-initialised, as many slots as
     * px_optim_n_slots(kind); NULL for PS variables (their state is on the
     * shards). */
    float **slots;
    uint64_t
        dropout_seed; /* seeds Dropout masks: mask of step t is a function of (seed, t, node) */
    /* Run-time settings of the training main (--lr, --lr-schedule,
     * --clip-grad-norm, --eval-data); zero: the compiled behaviour. They live
     * here, not in the descriptor, so the program ABI stays as compiled. */
    int lr_override;      /* 1: every update of this step uses `lr`, not optim->lr */
    double lr;            /* the learning rate of the step being run */
    double clip_max_norm; /* > 0: updates are deferred until the step's global
                             gradient norm is known (optim/clip.c) */
    /* --accumulate K: a step runs the compiled step on K micro-batches
     * (accum_i = 0..K-1) and updates once with the mean of their gradients
     * (optim/accumulate.c); accum_k <= 1: every run of the step updates. */
    int64_t accum_k, accum_i;
    int eval_pass; /* 1: a validation forward pass: no update, no push,
                      no gradient AllReduce, no running statistics assigned */
    /* The optimizer settings of the variables compiled with --no-decay: the
     * program's, weight decay 0 (px_optim_setup). */
    px_optim_desc no_decay_optim;
    int eval_mode;  /* 1 (with eval_pass): the pass runs the model as PyTorch's
                       model.eval(): Dropout is the identity, BatchNormalization
                       normalizes with its running statistics */
    int local_step; /* 1: a local step of --sync-every (local SGD): the ranks
                       train apart and average later (set by
                       px_comm_step_begin; read by the loss denominators) */
} px_train_ctx;

extern px_train_ctx px_train;

/* ---- optimizer math (optim/optim.c) ----
 * One implementation of every update, used by the replica updates, the PS
 * shards and the ONNX ai.onnx.preview.training kernels. */
int px_optim_n_slots(int64_t kind);
/* Dense update of n elements: PyTorch's step for o->kind at step t. g is the
 * (already averaged) gradient. */
void px_optim_dense(const px_optim_desc *o, int64_t t, float *w, const float *g,
                    float *const slots[PX_OPTIM_MAX_SLOTS], int64_t n);
/* Row update: row rows[i] of w (and of each slot), each `dim` floats, gets
 * gradient row g[i*dim ...]. Rows are distinct. Untouched rows are not changed
 * at all (lazy semantics: their momentum / Adam moments do not decay); for SGD
 * without momentum and for Adagrad this equals the dense update. */
void px_optim_rows(const px_optim_desc *o, int64_t t, float *w,
                   float *const slots[PX_OPTIM_MAX_SLOTS], int64_t dim, const int64_t *rows,
                   const float *g, int64_t n_rows);
/* The learning rate updates use now: px_train.lr when a run-time learning
 * rate is set (--lr, --lr-schedule), else the compiled o->lr. Replicas and
 * parameter-server shards both read it through here, so every update path
 * of a step uses the same value. */
double px_optim_lr(const px_optim_desc *o);
/* Prepares px_optim_of_var for program p (before the first step). */
void px_optim_setup(const px_program_desc *p);
/* The optimizer settings of variable var of p: p->optim, or, for a
 * variable with no_decay (--no-decay), the same without weight decay. */
const px_optim_desc *px_optim_of_var(const px_program_desc *p, int64_t var);

/* ---- gradient clipping by the global norm (optim/clip.c) ----
 * With px_train.clip_max_norm > 0 the updates of a step (px_optim_dense and
 * px_optim_rows from the shards, the update kernels on the replicas) are
 * queued with a copy of their gradient instead of applied. px_clip_finish,
 * called by every rank after the step, sums the squares of every queued
 * gradient (replicated ones once, shard ones over all ranks: one small
 * collective), scales them all by min(1, max_norm / (norm + 1e-6)) as
 * torch.nn.utils.clip_grad_norm_ does and applies them. Returns the norm. */
double px_clip_finish(void);
/* Drops queued updates (a failed or aborted step). */
void px_clip_discard(void);

/* ---- gradient accumulation (optim/accumulate.c) ----
 * With px_train.accum_k > 1 every update of the step's micro-batches is
 * held back and its gradients summed (dense: per variable or partition;
 * rows: per row, the union of the rows touched). px_accum_finish, called by
 * every rank after the step's last micro-batch (before px_clip_finish),
 * submits each sum divided by accum_k: the mean gradient of the
 * micro-batches, as one batch of accum_k times the size gives it. */
void px_accum_finish(void);
/* 1 when the updates of this run of the step wait for the end of it
 * (clipping or accumulation): the parameter-server answers to the next
 * step's pulls wait too. */
static inline int px_train_updates_deferred(void) {
    return px_train.clip_max_norm > 0 || px_train.accum_k > 1;
}
/* 1 when this run of the step is the last micro-batch of an update. */
static inline int px_train_last_micro(void) {
    return px_train.accum_k <= 1 || px_train.accum_i + 1 >= px_train.accum_k;
}

/* ---- communication (comm/) ---- */
typedef struct px_comm_opts {
    int ranks_per_node;      /* 0: real nodes (MPI_Comm_split_type); k: virtual nodes of k ranks */
    int local_aggregation;   /* 1 (default): aggregate row gradients per node before pushing */
    int partitions_override; /* 0: as compiled; > 0: this many partitions for every PS variable */
    double stall_timeout_s;  /* a step that makes no progress this long ends the job */
    /* Where a shard's rows come from at setup: rows [row0, row0 + n) of
     * variable var's initial value into dst. NULL: from vars[var].data (a
     * full-size initial value in memory, as in the runtime's own tests). The
     * training main reads them from the model file, so no rank ever holds a
     * whole table. */
    void (*read_rows)(int64_t var, int64_t row0, int64_t n, float *dst);
    /* Tried before read_rows: the same rows mapped copy-on-write from the
     * model file (px_weights_map_rows: no copy, no memory until a row is
     * first updated), or NULL; the shard munmaps them. NULL: always read. */
    float *(*map_rows)(int64_t var, int64_t row0, int64_t n);
    /* Overlap of the parameter-server pulls with the step (comm/ps/prefetch.c):
     * 1: the pulls of step s+1 are requested at the pushes of step s and
     * answered as soon as the shards applied the update (the same bits as
     * pulling at step s+1); 0: every pull at its place (--no-overlap). */
    int prefetch;
    /* The next step's values of graph input i on this rank (its rows of the
     * next global batch), or NULL when the current step is the last one
     * trained; i = -1 only asks whether there is a next step. NULL: no
     * prefetching. */
    const void *(*next_input)(int64_t input);
    /* 1: a sparse variable's push is handed to the comm thread where the
     * step places it (right after its row gradients) and runs during the
     * rest of the backward pass (comm/sched/push_async.c); 0: pushes run on
     * the calling thread (--no-overlap). */
    int async_push;
    /* The variables compiled with automatic partitions (--partitions auto):
     * 0 starts them at one partition per shard and keeps that (the cost
     * model's choice: pulls and pushes go by shard, so more partitions move
     * no other byte); > 0 starts them at this count (a choice measured
     * before: the checkpoint's, a partition cache's). partitions_search 1
     * measures candidate counts during the first steps instead (the paper's
     * search, which moves rows between shards' partitions as it goes). */
    int64_t partitions_start;
    int partitions_search;
    /* Relaxed synchronization (docs/relaxed_sync.md); all zero: exact, the
     * default. */
    int wire;                /* px_wire_format: how gradient buckets and PS rows travel */
    int wire_error_feedback; /* 1: each rank adds its last rounding residual to its next
                                gradient (16-bit wire) */
    int64_t sync_every;      /* K >= 2: the AllReduce variables are trained locally and
                                averaged every K steps (local SGD); 0 or 1: exact */
    int64_t local_sgd_after; /* steps trained exactly before local SGD starts */
    int64_t staleness;       /* S > 0: a pull may read PS rows up to S pushes old */
} px_comm_opts;

/* MPI_Init (singleton runs work without mpirun); sets px_rt_rank (jobs of
 * several ranks: messages name the rank) and the hook px_rt_fail calls
 * before the rank exits with its status, which ends the job under mpirun. */
void px_comm_init(int *argc, char ***argv);
/* Builds the buckets and the PS shards (from the variables' initial data,
 * identical on every rank). Collective. */
void px_comm_setup(const px_program_desc *p, const px_comm_opts *o);
int px_comm_rank(void);
int px_comm_size(void);
/* Mean of v over the ranks (the logged loss); counted as "other" traffic. */
double px_comm_mean(double v);
/* Replaces buf (n floats, the same count on every rank) by its mean over
 * the ranks, the same bits on every rank: a ring on the main thread,
 * counted as AllReduce traffic; `what` names it for the stall watchdog.
 * Collective. */
void px_comm_mean_floats(float *buf, int64_t n, const char *what);
/* Every rank's n doubles, in rank order, to every rank: all[r*n + i] (one
 * small collective; "other" traffic). Identical on every rank, so sums over
 * it taken in rank order agree bit for bit. */
void px_comm_allgather_doubles(const double *mine, int n, double *all);
/* How many ranks give the same machine key as this one (px_machine_key,
 * runtime/program/rank_threads.h: ranks on one kernel, whatever their host
 * names); key 0 (unknown) counts as 1. Collective. */
int px_comm_ranks_sharing(uint64_t machine_key);
/* Rank 0 receives every rank's byte blob (rank order, concatenated; *out
 * malloc'd, lens[r] bytes from rank r); the other ranks get *out NULL.
 * Collective. lens must hold px_comm_size() entries. */
void px_comm_gather_bytes(const void *mine, int64_t n, char **out, int64_t *lens);
/* Replaces buf (n counters, the same n on every rank) by its sum over the
 * ranks; `what` names it for the stall watchdog. Collective. */
void px_comm_sum_u64(uint64_t *buf, int64_t n, const char *what);
/* All to all: send holds send_lens[r] bytes for each rank r in rank order;
 * *out (malloc'd) receives what every rank sent this one, in rank order,
 * recv_lens[r] bytes from rank r. Both arrays hold px_comm_size() entries.
 * Collective. */
void px_comm_exchange_bytes(const void *send, const int64_t *send_lens, char **out,
                            int64_t *recv_lens, const char *what);
/* --tp: every rank of this rank's tensor-parallel group (tp consecutive
 * ranks) gets the n floats of each, in rank order: all[t*n + i]. Collective
 * over every rank. */
void px_comm_tp_gather(const float *mine, float *all, int64_t n, int tp);
/* --pp: this rank's pipeline stage, read by the generated step (a call of
 * a stage's node runs where px_pp_stage is that stage); 0 without --pp. */
extern int64_t px_pp_stage;
/* 1 if this rank holds variable v of program p (its storage and optimizer
 * state, or as a parameter-server table, its stage's pulls and pushes):
 * --pp gives each variable to the ranks of the stage that reads it only. */
int px_var_held(const px_program_desc *p, int64_t v);
/* --pp S (with --tp K): pipelines of K * S consecutive ranks, the stage of
 * each rank set. Collective, before the first step. */
void px_comm_pp_setup(int pp, int tp);
/* Seconds this rank waited for other stages (pipeline receives and
 * broadcasts) since the start. */
double px_comm_pp_wait_seconds(void);
/* --pp: rank 0 receives into buf the n floats that buf holds on the first
 * rank of stage `stage` of the first pipeline (--save and checkpoints
 * gathering a stage's variables); every other rank, and every rank when
 * stage is 0, returns at once. Both ends must call it in the same order. */
void px_comm_pp_to_first(float *buf, int64_t n, int stage);
/* -1 when every rank passed the same value, else the lowest rank whose value
 * differs from rank 0's. Collective. */
int px_comm_first_mismatch(uint64_t v);
/* Bracket each step: watchdog heartbeat, timing for automatic partitions,
 * local steps and model averages of --sync-every. */
void px_comm_step_begin(int64_t step);
void px_comm_step_end(void);
/* Under a relaxed mode, brings every rank to one state between steps:
 * averages the replicas that local SGD let drift apart (and, for a
 * checkpoint, their optimizer state), and, for a checkpoint, drops what a
 * resumed run would not have (error-feedback residuals, the stale rows a
 * rank keeps), so that a run resumed from it continues exactly as this one
 * does. Nothing in exact mode. Collective. */
enum { PX_SYNC_POINT_VALIDATION = 0, PX_SYNC_POINT_CHECKPOINT = 1 };
void px_comm_sync_point(int kind);
/* Steps the automatic partition search takes from the first step (0: no
 * search: no automatic variable, or a single shard). */
int64_t px_comm_tuning_steps(void);
/* Checkpoint/save support (comm/ps/checkpoint.c). No call materialises a
 * whole parameter-server table anywhere.
 * A block of rows [row0, row0 + rows) of a variable, dim floats each: the
 * master rows and optimizer slots where this rank holds them (the shard that
 * owns the partition), else NULL. */
typedef struct px_row_block {
    int64_t row0, rows, dim;
    int owner; /* world rank of the shard holding the rows */
    float *w;
    float *slots[PX_OPTIM_MAX_SLOTS]; /* NULL beyond the optimizer's slots */
} px_row_block;
int px_comm_var_is_ps(int64_t var);
/* The partitions of a parameter-server variable, in row order (the layout
 * is the same on every rank). */
int64_t px_comm_var_n_parts(int64_t var);
void px_comm_var_part(int64_t var, int64_t p, px_row_block *out);
/* Collective: rank 0's sink receives the master rows of parameter-server
 * variable var in row order, chunk_bytes at most at a time (at least a row);
 * the other ranks send their partitions' rows. */
typedef void (*px_rows_sink)(void *ctx, const float *rows, int64_t n_floats);
void px_comm_var_stream(int64_t var, int64_t chunk_bytes, px_rows_sink sink, void *ctx);
/* Small collectives: rank 0's value on every rank; the minimum over ranks;
 * rank 0 receives every rank's n values, concatenated in rank order (counts[r]
 * each; malloc'ed, NULL on the other ranks). */
uint64_t px_comm_bcast_u64(uint64_t v);
int64_t px_comm_min_i64(int64_t v);
uint64_t *px_comm_gather_u64(const uint64_t *mine, int64_t n, int64_t *counts);
/* Bytes this rank holds for communication now (comm/comm.c). */
typedef struct px_comm_memory_use {
    int64_t shard_rows;        /* master rows of the partitions it owns */
    int64_t optimizer_state;   /* their optimizer slots */
    int64_t row_cache;         /* row caches + remaps the pulls of one step filled (the most) */
    int64_t allreduce_buffers; /* bucket buffers and the ring's scratch */
} px_comm_memory_use;
void px_comm_memory(px_comm_memory_use *m);
/* For tests on small tables only (comm/ps/var_gather.c), collective. gather:
 * rank 0 receives the full variable and its optimizer slots (slot pointers
 * may be NULL: not wanted); for replicated variables rank 0's own copy is
 * used. load: every rank passes the full arrays; shards keep their rows,
 * replicas copy. */
void px_comm_var_gather(int64_t var, float *w, float *const slots[PX_OPTIM_MAX_SLOTS]);
void px_comm_var_load(int64_t var, const float *w, const float *const slots[PX_OPTIM_MAX_SLOTS]);

enum px_traffic {
    PX_TRAFFIC_ALLREDUCE = 0,
    PX_TRAFFIC_PS_PULL,
    PX_TRAFFIC_PS_PUSH,
    PX_TRAFFIC_OTHER,
    PX_TRAFFIC_KINDS
};
typedef struct px_comm_stats {
    int64_t steps; /* steps counted (between stats resets) */
    int64_t sent[PX_TRAFFIC_KINDS], received[PX_TRAFFIC_KINDS]; /* bytes, this rank */
    int64_t partitions_chosen; /* auto partitions: the count kept (0 if none) */
    /* Wall time of communication (bucket allreduces on the comm thread, PS
     * pulls and pushes) and the part the compute thread waited for. */
    double comm_seconds, waited_seconds;
    /* CPU time of the whole process and of its communication thread (0
     * without one), so that the share the communication takes from the
     * compute is visible where ranks share cores. */
    double cpu_seconds, comm_thread_cpu_seconds;
} px_comm_stats;
/* The fraction of communication time overlapped with compute, from s:
 * 1 - waited / comm in [0, 1]; -1 when there was no communication. */
double px_comm_hidden_fraction(const px_comm_stats *s);
/* AllReduce algorithm of each bucket, chosen at setup by an alpha-beta
 * model (runtime/comm/collectives/allreduce_doubling.c), the same on every rank. */
enum { PX_ALLREDUCE_RING = 0, PX_ALLREDUCE_DOUBLING = 1 };
int px_comm_allreduce_algorithm(int64_t bucket); /* -1: no such bucket */
void px_comm_stats_reset(void);                  /* after warm-up steps */
void px_comm_stats_mark_cpu(void);               /* end of a counted step: CPU times */
void px_comm_get_stats(px_comm_stats *s);
void px_comm_finalize(void);

/* ---- kernels (generated code calls them; buffers and params in order) ----
 * Optimizer (optim/kernels_update.c):
 *   px_k_update          buf {W, G}                      p {var, numel}
 *   px_k_row_update      buf {W, idx, rows, count}       p {var, capacity, dim}
 *        idx int64[capacity] unique rows first, rows float[capacity, dim], count int64 scalar
 *   px_k_rows_to_dense   buf {idx, rows, count, dense, mask}  p {capacity, dim, n_rows}
 *        dense float[n_rows, dim] (zero except touched rows), mask float[n_rows] (1 touched, 0 not)
 *   px_k_masked_update   buf {W, dense, mask}            p {var, n_rows, dim}
 *        row update (px_optim_rows) of the rows whose mask is > 0
 * Communication (comm/):
 *   px_k_allreduce_start buf {g_1..g_k}                  p {bucket, k, nbytes_1..nbytes_k}
 *   px_k_allreduce_wait  buf {g_1..g_k, out_1..out_k}    p {bucket, k, nbytes_1..nbytes_k}
 *        out_i = mean over ranks of g_i (float32); identical bits on every rank
 *   px_k_pp_transfer     buf {x, y}                      p {numel, from, to, tag}
 *        --pp: stage `from` sends x (float32) to stage `to`, which receives it into y
 *   px_k_pp_broadcast    buf {x, y}                      p {numel, from}
 *        y = x of stage `from`, on every stage of the pipeline
 *   px_k_tp_allreduce    buf {x, y}                      p {numel, tp}
 *        y = sum of x over the tensor-parallel group (tp consecutive ranks), in rank
 *        order: identical bits on every rank of the group
 *   px_k_ps_pull_rows    buf {idx, cache, remap}         p {var, idx_dtype, n_idx, dim}
 *        the rows idx names (int32 or int64, any shape, duplicates allowed), fetched
 *        from their shards into cache float[n_idx, dim] (its first k rows: the k
 *        distinct rows, in an order of the runtime's choosing); remap (idx's dtype and
 *        shape) gets each index's row in the cache, so cache[remap[i]] == W[idx[i]].
 *        Out-of-range indices end the run naming the variable and the value.
 *   px_k_ps_pull         buf {W, NULL}                   p {var, 0, 0}
 *        dense PS variable: every row of W from the shards (W is its replica).
 *   px_k_ps_push         buf {NULL, idx, rows, count}    p {var, capacity, dim}
 *        pushes this rank's row set (global rows; W is not read); the owning shard applies the
 * optimizer to the mean over ranks of the pushed rows. px_k_ps_push_dense   buf {W, G} p {var,
 * numel} dense PS variable: push the whole gradient; shard applies the dense update. */

#endif
