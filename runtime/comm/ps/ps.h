/* Layer 3 of the communication runtime: the parameter server. Sparse
 * variables partitioned by rows over the shards (the node leaders): their
 * layout and placement (px_ps_layout.h), re-partitioning, pulls into a
 * rank's row cache, pushes of row gradients with local aggregation and the
 * shards' update, the prefetched pulls of the next step, and the shards'
 * part of checkpoints. Includes transport/ and collectives/ only. Which
 * thread runs a push, and when: sched/. */
#ifndef PX_COMM_PS_H
#define PX_COMM_PS_H

#include "comm/collectives/collectives.h"
#include "px_ps_layout.h"

/* ---- parameter-server variables ---- */
typedef struct ps_part {
    int64_t row0, rows;               /* the partition's rows [row0, row0 + rows) */
    int owner;                        /* world rank of the shard holding it */
    float *w;                         /* master rows, rows * dim floats (owner only) */
    float *slots[PX_OPTIM_MAX_SLOTS]; /* optimizer state (owner only) */
    int64_t unmapped;                 /* bytes at the start of each array already given back (rows
                                         that left in a re-partitioning; a multiple of the page) */
} ps_part;

typedef struct ps_var {
    int64_t var; /* index into prog->vars */
    const char *name;
    int64_t rows, dim; /* dims[0] and the product of the others */
    int auto_parts;    /* partitions chosen at run time */
    int shard_offset;  /* of its placement, fixed at setup (px_ps_layout.h) */
    int64_t n_parts;
    ps_part *parts;
    struct ps_prefetch *pf; /* overlap state (prefetch.c); NULL until the first pull */
    struct ps_stale *stale; /* rows kept for --staleness (stale.c); NULL until used */
} ps_var;

/* The parameter-server layer's state (vars.c; filled by setup.c). */
typedef struct ps_state {
    int ready; /* set up */
    const px_program_desc *prog;
    px_comm_opts opts;
    int n_slots;        /* optimizer slots per row */
    ps_var **ps_of_var; /* [n_vars]: NULL unless sync == PX_SYNC_PS */
    int n_ps;
    ps_var *ps; /* the n_ps PS variables */
} ps_state;

extern ps_state px_ps;

/* Message kinds of the parameter server (the `op` of comm_tag). */
enum {
    TAG_PULL_COUNT = 0,
    TAG_PULL_IDX,
    TAG_PULL_ROWS,
    TAG_PULL_ALL,
    TAG_PUSH_COUNT,
    TAG_PUSH_IDX,
    TAG_PUSH_ROWS,
    TAG_AGG_COUNT,
    TAG_AGG_IDX,
    TAG_AGG_ROWS,
    TAG_DENSE_AGG,
    TAG_DENSE,
    TAG_REPART,
    TAG_GATHER,
    TAG_PULL_FIX,
    TAG_PUSH_MORE, /* the 16th: comm_tag has 16 ops per id */
};

/* ---- partition.c ---- */
/* Partition row ranges and their shards: px_ps_layout.h. */
/* The shard (world rank) of every partition of every PS variable when
 * px_ps.ps[i] has parts[i] partitions: owners[i][p], by
 * px_ps_part_shard (shard-contiguous, the variable's shard_offset); the
 * same on every rank. Free with ps_place_free. */
int **ps_place(const int64_t *parts);
void ps_place_free(int **owners);
/* Lays pv out in `parts` partitions on `owners` and allocates the owned
 * ones, their rows read through px_ps.opts.read_rows (or copied from the
 * variable's data), optimizer state zero. */
void ps_layout_init(ps_var *pv, int64_t parts, const int *owners);
/* Moves pv to `parts` partitions on `owners`: master rows and optimizer
 * state go to their new owners bit for bit, in bounded chunks, the pages
 * of the rows that left given back at once. Collective. */
void ps_repartition(ps_var *pv, int64_t parts, const int *owners);
void ps_layout_free(ps_var *pv);

/* ---- setup.c ---- */
/* The PS variables of p, their first layout (opts: partitions, row source,
 * aggregation, prefetch), the shards' rows. Collective. */
void comm_ps_setup(const px_program_desc *p, const px_comm_opts *opts);
void comm_ps_teardown(void);

/* ---- vars.c ---- */
ps_var *comm_ps_var(int64_t var, const char *op); /* fails unless var is PS */
/* Whether a sparse variable's push goes to the comm thread (which then
 * runs the shard's update too): the thread runs, async pushes are on,
 * no gradient clipping. */
int comm_push_queued_on(void);

/* ---- rowset.c ---- */
/* Checks idx (int32 when dtype == 6, else int64) against [0, rows) and
 * writes its distinct values ascending to out; returns how many. which
 * (may be NULL): which[i] = the position in out of idx[i]. */
int64_t ps_unique_indices(const void *idx, int dtype, int64_t n, int64_t rows, const char *op,
                          const char *var, int64_t *out, int64_t *which);
/* A set of rows: idx[i] names row i of rows (dim floats each). */
typedef struct rowset {
    int64_t n;
    const int64_t *idx;
    const float *rows;
} rowset;
/* Sums contributions in[0..n_in) row by row: out_idx ascending distinct,
 * out_rows[i] = in order, the sum of every contribution to out_idx[i]
 * (the first copied, the others added one after the other, so the bits
 * depend only on the order of `in`). Returns the number of rows. out
 * buffers must hold sum of in[i].n rows. */
int64_t ps_rowset_sum(const rowset *in, int n_in, int64_t dim, int64_t *out_idx, float *out_rows);
/* Frees the calling thread's working arrays of these helpers (they are
 * kept from call to call); at the end of each thread that used them. */
void ps_rowset_scratch_free(void);
/* Groups sorted distinct rows by owner rank: counts[rank] rows each,
 * out holds them grouped by rank (ascending rank, rows ascending within),
 * offs[rank] where each group starts. perm (may be NULL) receives for each
 * out position the position in `rows`. Returns 1 when the rows were in
 * that order already (perm is the identity), else 0. */
int ps_group_by_owner(const ps_var *pv, const int64_t *rows, int64_t n, int64_t *counts,
                      int64_t *offs, int64_t *out, int64_t *perm);

/* ---- push_inbox.c: the shards' receives, posted one push ahead ---- */
/* Rows per fixed-size push message of pv: the same on every rank. */
int64_t ps_push_inbox_cap(const ps_var *pv, int n_senders);
/* A sender's groups to the shards `to` (counts[r] rows from offs[r]); the
 * requests go to q, which must complete before the next push. */
void ps_push_inbox_send(ps_var *pv, int64_t cap, const int *to, int n_to, const int64_t *counts,
                        const int64_t *offs, const int64_t *idx, const float *rows, comm_reqs *q);
/* A shard's receipt from the senders `from` (the same every push): got[i]
 * is from[i]'s row set, valid until ps_push_inbox_repost. */
void ps_push_inbox_receive(ps_var *pv, int64_t cap, const int *from, int n_from, rowset *got);
/* Posts the receives of the variable's next push (its buffers are free). */
void ps_push_inbox_repost(ps_var *pv);
void ps_push_inbox_teardown(void); /* cancels what is posted; no push may run */

/* ---- pull.c / push.c ---- */
/* The rows idx names into cache (grouped by owner), remap[i]: idx[i]'s cache row. */
void comm_ps_pull_rows(int64_t var, const void *idx, int dtype, int64_t n_idx, float *cache,
                       void *remap);
void comm_ps_pull_all(int64_t var, float *w); /* every row into w (dense PS variable) */
void comm_ps_push(int64_t var, const int64_t *idx, const float *rows, int64_t count, int64_t dim);
void comm_ps_push_dense(int64_t var, const float *g, int64_t numel);
/* Applies the averaged row gradient (rows ascending, distinct) to the owned
 * partitions. */
void ps_apply_rows(ps_var *pv, const int64_t *rows, float *g, int64_t n);
/* The pushing ranks (node leaders with local aggregation, else all), ascending. */
int ps_senders(int *out);
void ps_scale_by_ranks(float *g, int64_t n); /* g /= N (--pp: N / pp) */
/* --pp: 1 when the variable lives on another stage than this rank's: the
 * rank takes part in its pulls and pushes (every rank serves and sends to
 * the shards) with no rows of its own. */
int ps_var_elsewhere(const ps_var *pv);
const px_optim_desc *ps_optim(const ps_var *pv);

/* The cache layout of a sparse pull (pull.c): the k distinct rows of idx
 * grouped by owner (*grouped, scratch of pull.c valid until the next
 * call), counts[r] of them owned by rank r from offs[r] (n entries each, n
 * = world size), and remap (idx's dtype) filled with each index's cache row.
 * uniq_out, slot_out (may be NULL): the k distinct rows ascending and the
 * cache row of each. Returns k. */
int64_t ps_pull_plan(ps_var *pv, const void *idx, int dtype, int64_t n_idx, void *remap,
                     int64_t *counts, int64_t *offs, const int64_t **grouped_out,
                     const int64_t **uniq_out, const int64_t **slot_out);
/* Row `row` of pv from the partition this rank holds (fails otherwise). */
const float *ps_master_row(const ps_var *pv, int64_t row);

/* ---- prefetch.c: the next step's pulls overlapped with this step ----
 * At the push of a variable in step s every rank also requests the rows its
 * pulls of step s+1 will read (the union over the variable's pulls: their
 * indices are graph inputs, loaded ahead through opts.next_input); each
 * shard answers right after it applied the step's update (after
 * px_clip_finish with clipping: px_comm_step_end), so the rows are exactly
 * what a pull in step s+1 would fetch. Step s+1's pulls then only wait for
 * rows already in flight. Every decision depends only on the program, the
 * step and the flags: the same on every rank. */
/* A pull kernel's call in a training step (idx NULL: every row of a dense
 * PS variable): records whether its indices are a graph input. */
void comm_prefetch_note_pull(ps_var *pv, const void *idx, int dtype, int64_t n_idx);
/* Fills the pull from the prefetched rows when this step's were requested;
 * returns 0 (nothing done) otherwise. */
int comm_prefetch_take_rows(ps_var *pv, const void *idx, int dtype, int64_t n_idx, float *cache,
                            void *remap);
int comm_prefetch_take_all(ps_var *pv, float *w);
/* Around the push of pv (w: the replica of a dense PS variable, else NULL):
 * requests the next step's rows, then serves the requests (or leaves them
 * for comm_prefetch_step_end when updates wait for clipping). */
void comm_prefetch_before_push(ps_var *pv, float *w);
void comm_prefetch_after_push(ps_var *pv);
void comm_prefetch_step_end(void);
/* Comm thread, comm_lock held (released while it works): answers the
 * ready request the next step reads first (only: that variable's, if
 * ready); 0 if none is ready. */
int comm_prefetch_serve_one_locked(ps_var *only);
/* Main thread: waits until pv's answers (NULL: every variable's) are given,
 * before anything rewrites the rows or buffers they read. */
void comm_prefetch_drain(ps_var *pv);
void comm_prefetch_poll(void);       /* notes the time prefetches completed */
void comm_prefetch_step_begin(void); /* asks for the next step's rows of the tables */
/* prefetch_serve.c. The comm thread, while it waits or idles, answers the
 * requests that arrived (before the update when it comes later: the rows it
 * changes follow as a fix-up). */
void comm_prefetch_early_serve(void);
/* The shard applied pv's update of this step to these rows (ascending). */
void comm_prefetch_note_update(ps_var *pv, const int64_t *rows, int64_t n);
void comm_prefetch_teardown(void); /* completes what is in flight, frees */
/* --staleness, with ps_stale_forget: the next step requests nothing at its
 * start and pulls synchronously, as the first step of a resumed run. */
void comm_prefetch_forget(void);

/* ---- stale.c: rows read again under --staleness S ----
 * A rank keeps the rows it pulled; a pull in step t may read a row it
 * pulled in step t' >= t - S instead of pulling it (it misses at most S
 * pushes). Not in validation passes, which read the latest rows. */
int ps_stale_on(void); /* S > 0 and a training step */
/* Row `row` of pv as this rank pulled it in a step >= step - S, or NULL. */
const float *ps_stale_row(ps_var *pv, int64_t row, int64_t step);
/* Keeps n rows (dim floats each) pulled in `step`. */
void ps_stale_keep(ps_var *pv, const int64_t *rows, const float *data, int64_t n, int64_t step);
/* A dense PS variable: whether the pull of `step` must fetch every row
 * (its replica is older than S steps), and that it did. */
int ps_stale_full_due(ps_var *pv, int64_t step);
void ps_stale_full_pulled(ps_var *pv, int64_t step);
/* Empties every store (a checkpoint); prefetch.c resets its request
 * timing with it (comm_prefetch_forget). */
void ps_stale_forget(void);
int64_t ps_stale_bytes(void); /* held by the stores */
void ps_stale_teardown(void);

/* Bytes of master rows this rank's shard holds now (px_comm_memory). */
int64_t ps_shard_bytes(void);

#endif
