/* Layer 2 of the communication runtime: collectives. The bucketed
 * AllReduce of dense gradients (ring or recursive doubling, one per bucket,
 * chosen at setup), and the small collectives of the training main (loss
 * mean, consistency check, partial sums, trace gathering, checkpoint
 * agreements: their public functions are in px_train.h). Includes only
 * transport/. Who runs a bucket, and when: sched/. */
#ifndef PX_COMM_COLLECTIVES_H
#define PX_COMM_COLLECTIVES_H

#include "comm/transport/transport.h"

/* ---- allreduce.c: the buckets and the ring ---- */
/* The buckets of p (px_program.bucket_bytes), their algorithms (rank 0's
 * choice, broadcast). Collective. */
void comm_allreduce_setup(const px_program_desc *p);
void comm_allreduce_teardown(void);
int64_t comm_allreduce_n_buckets(void);
/* Fails (naming op) unless bucket b exists and the k gradients' nbytes
 * add up to its size. */
void comm_allreduce_check(int64_t b, int k, const int64_t *nbytes, const char *op);
/* Copies the k gradients into bucket b's buffer. */
void comm_allreduce_pack(int64_t b, int k, void *const *g, const int64_t *nbytes);
/* Replaces bucket b's buffer by its sum over the ranks (on the thread of
 * `slot`); the time goes to the communication total. */
void comm_allreduce_run_bucket(int64_t b, int slot);
/* Writes the buffer's sum / N into the k outputs. */
void comm_allreduce_unpack(int64_t b, int k, void *const *out, const int64_t *nbytes);
/* The buffers' bytes: one per bucket, and the scratch (px_comm_memory). */
int64_t comm_allreduce_buffer_bytes(void);

/* ---- allreduce_doubling.c ---- */
/* PX_ALLREDUCE forced algorithm, or -1 (auto). */
int comm_allreduce_forced_algorithm(void);
/* Alpha-beta time of one bucket of `bytes` on n ranks. */
double comm_allreduce_seconds(int algorithm, double bytes, int n, double alpha, double beta);
/* The algorithm of each bucket from the model and PX_* settings (rank 0). */
void comm_allreduce_choose(int64_t n_buckets, const int64_t *bucket_bytes, int *algorithm);
/* Replaces buf (n floats) by its sum over the ranks; tmp holds n floats. */
void doubling_allreduce(int64_t bucket, float *buf, int64_t n, float *tmp, int slot);

#endif
