/* Private state and helpers of the MPI communication runtime (runtime/comm/).
 *
 * Threads and communicators:
 *   main thread      PS pull/push, collectives (mean, mismatch, checkpoint,
 *                    auto partitions): ps_comm and coll_comm
 *   comm thread      queued jobs, FIFO (comm_thread.c): the AllReduce (ring or
 *                    recursive doubling) of started buckets on ar_comm, and
 *                    the pushes of sparse PS variables (ps_push_async.c) on
 *                    ps_comm with the answers to prefetches on pf_comm; and
 *                    MPI progress while prefetched rows are in flight
 *   watchdog thread  when a step stalls: the stall reports (own dup of
 *                    MPI_COMM_WORLD, watchdog.c), then MPI_Abort
 * Each communicator is a dup of MPI_COMM_WORLD, so the two threads never
 * match each other's messages. Every rank must call the collective kernels
 * (allreduce start/wait, pull, push) in the same order: messages between a
 * pair of ranks match by (communicator, tag, order). */
#ifndef PX_COMM_INTERNAL_H
#define PX_COMM_INTERNAL_H

#include "px_kernel.h"
#include "px_ps_layout.h"
#include "px_train.h"

#include <mpi.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Defined in runtime/rt_fail.c (no header declares them). */
extern void (*px_rt_abort_hook)(int code);
extern int px_rt_rank;

/* ---- allreduce buckets ---- */
enum bucket_state { BUCKET_IDLE = 0, BUCKET_QUEUED, BUCKET_DONE };

typedef struct comm_bucket {
    int64_t nbytes; /* px_program.bucket_bytes[i] */
    int64_t n;      /* floats */
    float *buf;     /* packed gradients; after the ring: the sum over ranks */
    int state;      /* enum bucket_state, guarded by px_comm.mu */
    int algorithm;  /* PX_ALLREDUCE_RING or PX_ALLREDUCE_DOUBLING, the same on every rank */
} comm_bucket;

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
    struct ps_prefetch *pf; /* overlap state (ps_prefetch.c); NULL until the first pull */
} ps_var;

/* Growable scratch buffer. */
typedef struct comm_buf {
    void *p;
    size_t cap;
} comm_buf;
void *comm_buf_reserve(comm_buf *b, size_t bytes);
void comm_buf_free(comm_buf *b);

typedef struct comm_state {
    int initialized, setup_done;
    int rank, size;
    int threaded; /* the comm thread runs the ring (MPI_THREAD_MULTIPLE) */
    int tag_ub;
    MPI_Comm ar_comm, ps_comm, coll_comm;
    MPI_Comm pf_comm; /* prefetched pulls (ps_prefetch.c): requests and rows in flight
                         across kernel calls never match a synchronous pull's */

    /* nodes: shards are the node leaders (lowest world rank of a node) */
    MPI_Comm node_comm;
    int node_size, leader, is_leader;
    int *node_members; /* world ranks of my node, ascending */
    int n_shards;
    int *shard_ranks; /* world rank of shard s, ascending */

    const px_program_desc *prog;
    px_comm_opts opts;
    int n_slots;

    /* allreduce */
    int64_t n_buckets;
    comm_bucket *buckets;
    float *ring_scratch; /* a ring chunk or a doubling bucket, the largest */
    pthread_t thread;
    int thread_running, thread_stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;

    /* parameter server */
    ps_var **ps_of_var; /* [n_vars]: NULL unless sync == PX_SYNC_PS */
    int n_ps;
    ps_var *ps; /* the n_ps PS variables */

    /* steps */
    int64_t step;
    int in_step;
    double step_t0;
} comm_state;

extern comm_state px_comm;

/* ---- comm.c ---- */
double comm_now(void); /* monotonic seconds */

/* ---- comm_thread.c: the comm thread's FIFO of jobs ---- */
/* A job: bucket b (>= 0) or the push of px_comm.ps[i] (-(i + 1)). */
void comm_thread_setup(void);              /* after the buckets and PS variables */
void comm_thread_teardown(void);           /* runs what is queued, then stops */
void comm_job_enqueue_locked(int64_t job); /* px_comm.mu held */
/* Without the thread: runs the oldest queued job on this thread; 0 if none. */
int comm_job_run_front(void);

/* ---- ps_push_async.c: pushes run by the comm thread ---- */
void comm_push_setup(void);
void comm_push_teardown(void);
int comm_push_queued_on(void); /* this push goes to the comm thread */
void comm_push_enqueue(ps_var *pv, const int64_t *idx, const float *rows, int64_t count,
                       int64_t capacity, int64_t dim);
void comm_push_run(int i);       /* on the comm thread */
void comm_push_mark_done(int i); /* px_comm.mu held */
void comm_push_wait_all(void);   /* every queued push done (main thread) */

/* ---- memory.c ---- */
/* A pull filled `bytes` of row cache and remap in the current step. */
void comm_note_row_cache(int64_t bytes);

/* ---- stats.c ---- */
/* A kind ORed with COMM_NEXT_STEP: traffic that belongs to the next step
 * (a prefetch posted in step s for step s+1), counted when it begins, so
 * that the steps --stats counts hold their own pulls. */
#define COMM_NEXT_STEP 0x100
/* The step the calling thread's COMM_NEXT_STEP traffic is for (-1: the
 * step after the current one). */
void comm_set_traffic_step(int64_t step);
void comm_count_sent(int kind, int64_t bytes);
void comm_count_received(int kind, int64_t bytes);
void comm_stats_step(void);
void comm_stats_step_begin(void); /* counts the traffic deferred to this step */
void comm_stats_set_partitions(int64_t p);
/* Communication time (any thread), and the part of it the main thread
 * spent blocked on it: comm_hidden_fraction = 1 - waited / busy. */
void comm_time_busy(double seconds);
void comm_time_waited(double seconds);

/* ---- p2p.c: counted point-to-point, watched waits ---- */
/* Post a nonblocking send / receive of n elements of type t (elem bytes
 * each), counting n * elem bytes as traffic of `kind`. */
void comm_isend(const void *buf, int64_t n, MPI_Datatype t, int elem, int peer, int tag, MPI_Comm c,
                int kind, MPI_Request *req);
void comm_irecv(void *buf, int64_t n, MPI_Datatype t, int elem, int peer, int tag, MPI_Comm c,
                int kind, MPI_Request *req);
/* Waits for n requests (MPI_REQUEST_NULL allowed); while it waits the
 * watchdog reports "<what> from rank <peer of the first pending request>".
 * slot: WATCH_MAIN or WATCH_COMM. */
void comm_waitall(int slot, int n, MPI_Request *reqs, const int *peers, const char *what);
/* +1 / -1 around the main thread's waits for the comm thread (AllReduce,
 * queued pushes, answers): meanwhile the comm thread's waits poll
 * without sleeping. */
void comm_main_waits(int delta);
/* A tag for (op, id) on a communicator whose ids differ per variable or
 * bucket: mismatched call orders then stall (and the watchdog names them)
 * instead of mixing data. */
int comm_tag(int64_t id, int op);
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
/* A list of pending requests with the peer of each (for the watchdog). */
typedef struct comm_reqs {
    int n, cap;
    MPI_Request *r;
    int *peer;
} comm_reqs;
MPI_Request *comm_reqs_add(comm_reqs *q, int peer);
void comm_reqs_wait(comm_reqs *q, int slot, const char *what); /* all; then empty */
void comm_reqs_free(comm_reqs *q);

/* ---- watchdog.c ---- */
enum { WATCH_MAIN = 0, WATCH_COMM = 1 };
/* The watchdog slot of the calling thread (WATCH_MAIN unless set). */
int comm_self_slot(void);
void comm_set_self_slot(int slot);
void comm_progress(void);
void comm_activity(int slot, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void comm_activity_clear(int slot);
void comm_watchdog_start(double timeout_s);
void comm_watchdog_stop(void);

/* ---- allreduce.c ---- */
void comm_allreduce_setup(const px_program_desc *p);
void comm_allreduce_teardown(void);
void comm_allreduce_run_bucket(int64_t b, int slot); /* the sum over the ranks */
void comm_allreduce_start(int64_t bucket, int k, void *const *g, const int64_t *nbytes);
void comm_allreduce_wait(int64_t bucket, int k, void *const *g, void *const *out,
                         const int64_t *nbytes);

/* ---- allreduce_doubling.c ---- */
/* PX_ALLREDUCE forced algorithm, or -1 (auto). */
int comm_allreduce_forced_algorithm(void);
/* Alpha-beta time of one bucket of `bytes` on n ranks. */
double comm_allreduce_seconds(int algorithm, double bytes, int n, double alpha, double beta);
/* The algorithm of each bucket from the model and PX_* settings (rank 0). */
void comm_allreduce_choose(int64_t n_buckets, const int64_t *bucket_bytes, int *algorithm);
/* Replaces buf (n floats) by its sum over the ranks; tmp holds n floats. */
void doubling_allreduce(int64_t bucket, float *buf, int64_t n, float *tmp, int slot);

/* ---- partition.c ---- */
/* Partition row ranges and their shards: px_ps_layout.h. */
/* The shard (world rank) of every partition of every PS variable when
 * px_comm.ps[i] has parts[i] partitions: owners[i][p], by
 * px_ps_part_shard (shard-contiguous, the variable's shard_offset); the
 * same on every rank. Free with ps_place_free. */
int **ps_place(const int64_t *parts);
void ps_place_free(int **owners);
/* Lays pv out in `parts` partitions on `owners` and allocates the owned
 * ones, their rows read through px_comm.opts.read_rows (or copied from the
 * variable's data), optimizer state zero. */
void ps_layout_init(ps_var *pv, int64_t parts, const int *owners);
/* Moves pv to `parts` partitions on `owners`: master rows and optimizer
 * state go to their new owners bit for bit, in bounded chunks, the pages
 * of the rows that left given back at once. Collective. */
void ps_repartition(ps_var *pv, int64_t parts, const int *owners);
void ps_layout_free(ps_var *pv);

/* ---- ps_setup.c ---- */
void comm_ps_setup(const px_program_desc *p);
void comm_ps_teardown(void);
ps_var *comm_ps_var(int64_t var, const char *op); /* fails unless var is PS */

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

/* ---- ps_push_inbox.c: the shards' receives, posted one push ahead ---- */
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

/* ---- ps_pull.c / ps_push.c ---- */
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
void ps_scale_by_ranks(float *g, int64_t n); /* g /= N */
const px_optim_desc *ps_optim(const ps_var *pv);

/* The cache layout of a sparse pull (ps_pull.c): the k distinct rows of idx
 * grouped by owner (*grouped, scratch of ps_pull.c valid until the next
 * call), counts[r] of them owned by rank r from offs[r] (n entries each, n
 * = world size), and remap (idx's dtype) filled with each index's cache row.
 * uniq_out, slot_out (may be NULL): the k distinct rows ascending and the
 * cache row of each. Returns k. */
int64_t ps_pull_plan(ps_var *pv, const void *idx, int dtype, int64_t n_idx, void *remap,
                     int64_t *counts, int64_t *offs, const int64_t **grouped_out,
                     const int64_t **uniq_out, const int64_t **slot_out);
/* Row `row` of pv from the partition this rank holds (fails otherwise). */
const float *ps_master_row(const ps_var *pv, int64_t row);

/* ---- ps_prefetch.c: the next step's pulls overlapped with this step ----
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
/* Comm thread, px_comm.mu held (released while it works): answers the
 * ready request the next step reads first (only: that variable's, if
 * ready); 0 if none is ready. */
int comm_prefetch_serve_one_locked(ps_var *only);
/* Main thread: waits until pv's answers (NULL: every variable's) are given,
 * before anything rewrites the rows or buffers they read. */
void comm_prefetch_drain(ps_var *pv);
void comm_prefetch_poll(void);       /* notes the time prefetches completed */
void comm_prefetch_step_begin(void); /* asks for the next step's rows of the tables */
/* ps_prefetch_serve.c. The comm thread, while it waits or idles, answers the
 * requests that arrived (before the update when it comes later: the rows it
 * changes follow as a fix-up). */
void comm_prefetch_early_serve(void);
/* The shard applied pv's update of this step to these rows (ascending). */
void comm_prefetch_note_update(ps_var *pv, const int64_t *rows, int64_t n);
void comm_prefetch_teardown(void); /* completes what is in flight, frees */

/* ---- autotune.c ---- */
void comm_autotune_setup(void);
void comm_autotune_step_end(double step_seconds);

#endif
