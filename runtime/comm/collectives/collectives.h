/* Layer 2 of the communication runtime: collectives. The bucketed
 * AllReduce of dense gradients (ring or recursive doubling, one per bucket,
 * chosen at setup), and the small collectives of the training main (loss
 * mean, consistency check, partial sums, trace gathering, checkpoint
 * agreements, the exchanges of the validation AUC: their public functions are in px_train.h).
 * Includes only transport/. Who runs a bucket, and when: sched/. */
#ifndef PX_COMM_COLLECTIVES_H
#define PX_COMM_COLLECTIVES_H

#include "comm/transport/transport.h"

/* ---- allreduce.c: the buckets and the ring ---- */
/* The ranks one bucket is summed over: all of them, or under --tp for a
 * slab bucket (px_program.bucket_slab) those at the same position of every
 * group. comm holds exactly them; member i is world rank offset + i *
 * stride, and this rank is member `rank` of `size`. */
typedef struct comm_ar_group {
    MPI_Comm comm;
    int size, rank, offset, stride;
} comm_ar_group;
/* The buckets of p (px_program.bucket_bytes), their algorithms (rank 0's
 * choice, broadcast). Collective. */
void comm_allreduce_setup(const px_program_desc *p, int error_feedback);
void comm_allreduce_teardown(void);
int64_t comm_allreduce_n_buckets(void);
/* Fails (naming op) unless bucket b exists and the k gradients' nbytes
 * add up to its size. */
void comm_allreduce_check(int64_t b, int k, const int64_t *nbytes, const char *op);
/* Whether bucket b's AllReduce is its input unchanged: one rank and no
 * --wire-error-feedback residual (whose rounding would change it). */
int comm_allreduce_passes_through(int64_t b);
/* The ranks bucket b is summed over (1: none but this one). */
int comm_allreduce_ranks(int64_t b);
/* Copies the k gradients into bucket b's buffer (with error feedback:
 * plus the bucket's residual, rounded to the wire's precision, the new
 * residual kept). */
void comm_allreduce_pack(int64_t b, int k, void *const *g, const int64_t *nbytes);
/* Zeroes the error-feedback residuals (a checkpoint: a resumed run starts
 * with none). */
void comm_allreduce_forget_residuals(void);
/* Replaces bucket b's buffer by its sum over the ranks (on the thread of
 * `slot`); the time goes to the communication total. */
void comm_allreduce_run_bucket(int64_t b, int slot);
/* Writes the buffer's sum / N into the k outputs. */
void comm_allreduce_unpack(int64_t b, int k, void *const *out, const int64_t *nbytes);
/* The buffers' bytes: one per bucket, and the scratch (px_comm_memory). */
int64_t comm_allreduce_buffer_bytes(void);

/* ---- average.c: model averaging (local SGD, --sync-every) ---- */
/* Replaces every replicated variable of p (sync ALLREDUCE, a replica on
 * every rank) by its mean over the ranks and, slots non-NULL, its n_slots
 * optimizer slots too (slots[v * PX_OPTIM_MAX_SLOTS + s]): float32 through
 * the ring of px_comm_mean_floats, on the calling thread. Collective,
 * between steps. Returns the floats averaged. */
int64_t comm_average_replicas(const px_program_desc *p, float *const *slots, int n_slots);

/* ---- allreduce_doubling.c ---- */
/* PX_ALLREDUCE forced algorithm, or -1 (auto). */
int comm_allreduce_forced_algorithm(void);
/* Alpha-beta time of one bucket of `bytes` on n ranks. */
double comm_allreduce_seconds(int algorithm, double bytes, int n, double alpha, double beta);
/* The algorithm of each bucket from the model and PX_* settings (rank 0),
 * bucket b being summed over ranks[b] ranks. */
void comm_allreduce_choose(int64_t n_buckets, const int64_t *bucket_bytes, const int *ranks,
                           int *algorithm);
/* Replaces buf (n floats) by its sum over the ranks of grp; tmp holds n
 * floats, stage n 16-bit values (a 16-bit --wire; NULL otherwise). */
void doubling_allreduce(const comm_ar_group *grp, int64_t bucket, float *buf, int64_t n, float *tmp,
                        uint16_t *stage, int slot);

/* ---- tp_group.c: tensor parallelism (--tp) ---- */
/* y = the sum of x (n floats) over this rank's group of tp consecutive
 * ranks, added in rank order: the same bits on every rank of the group.
 * Collective over the group; y may be x. */
void comm_tp_group_sum(const float *x, float *y, int64_t n, int tp);
/* Makes the group communicator (collective over every rank); later calls
 * check tp is the same. */
void comm_tp_group_setup(int tp);

/* ---- pp_group.c: pipeline parallelism (--pp) ---- */
/* px_comm_pp_setup (px_train.h) makes the pipelines and sets px_pp_stage. */
/* Sends n floats to the rank of stage `to` at this rank's place in its
 * tensor-parallel group, without waiting (x is copied). */
void comm_pp_send(const float *x, int64_t n, int to, int tag);
/* How many of this rank's sends are not known complete yet (any thread). */
int comm_pp_sends_pending(void);
/* Tests the pending sends, which moves their bytes where the receiver
 * cannot pull them alone, and frees those done; returns how many remain.
 * Called by the communication thread while any is pending. */
int comm_pp_drive_sends(void);
/* Receives n floats from stage `from` (as comm_pp_send). */
void comm_pp_recv(float *y, int64_t n, int from, int tag);
/* y = x of stage `from`, on every stage of the pipeline. Collective over
 * the pipeline. */
void comm_pp_broadcast(const float *x, float *y, int64_t n, int from);

#endif
