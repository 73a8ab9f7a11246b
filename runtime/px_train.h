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

#define PX_OPTIM_MAX_SLOTS 2

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
    int eval_pass;        /* 1: a validation forward pass: no update, no push,
                             no gradient AllReduce */
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

/* ---- communication (comm/) ---- */
typedef struct px_comm_opts {
    int ranks_per_node;      /* 0: real nodes (MPI_Comm_split_type); k: virtual nodes of k ranks */
    int local_aggregation;   /* 1 (default): aggregate row gradients per node before pushing */
    int partitions_override; /* 0: as compiled; > 0: this many partitions for every PS variable */
    double stall_timeout_s;  /* a step that makes no progress this long ends the job */
} px_comm_opts;

/* MPI_Init (singleton runs work without mpirun); sets px_rt_rank and the
 * abort hook so px_rt_fail takes the whole job down. */
void px_comm_init(int *argc, char ***argv);
/* Builds the buckets and the PS shards (from the variables' initial data,
 * identical on every rank). Collective. */
void px_comm_setup(const px_program_desc *p, const px_comm_opts *o);
int px_comm_rank(void);
int px_comm_size(void);
/* Mean of v over the ranks (the logged loss); counted as "other" traffic. */
double px_comm_mean(double v);
/* Every rank's n doubles, in rank order, to every rank: all[r*n + i] (one
 * small collective; "other" traffic). Identical on every rank, so sums over
 * it taken in rank order agree bit for bit. */
void px_comm_allgather_doubles(const double *mine, int n, double *all);
/* Rank 0 receives every rank's byte blob (rank order, concatenated; *out
 * malloc'd, lens[r] bytes from rank r); the other ranks get *out NULL.
 * Collective. lens must hold px_comm_size() entries. */
void px_comm_gather_bytes(const void *mine, int64_t n, char **out, int64_t *lens);
/* -1 when every rank passed the same value, else the lowest rank whose value
 * differs from rank 0's. Collective. */
int px_comm_first_mismatch(uint64_t v);
/* Bracket each step: watchdog heartbeat, timing for automatic partitions. */
void px_comm_step_begin(int64_t step);
void px_comm_step_end(void);
/* Checkpoint/save support, collective. gather: rank 0 receives the full
 * variable and its optimizer slots (slot pointers may be NULL: not wanted);
 * for replicated variables rank 0's own copy is used. load: every rank passes
 * the full arrays; shards keep their rows, replicas copy. */
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
} px_comm_stats;
void px_comm_stats_reset(void); /* after warm-up steps */
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
 *   px_k_ps_pull         buf {W, idx}                    p {var, idx_dtype, n_idx}
 *        refreshes the rows of W named by idx (int32 or int64, any shape, duplicates
 *        allowed) from their shards; idx NULL and n_idx 0: every row (dense PS variable).
 *        Out-of-range indices end the run naming the variable and the value.
 *   px_k_ps_push         buf {W, idx, rows, count}       p {var, capacity, dim}
 *        pushes this rank's row set; the owning shard applies the optimizer to the
 *        mean over ranks of the pushed rows.
 *   px_k_ps_push_dense   buf {W, G}                      p {var, numel}
 *        dense PS variable: push the whole gradient; shard applies the dense update. */

#endif
