/* Bucketed AllReduce of dense gradients, overlapped with the backward pass.
 *
 * px_k_allreduce_start packs a bucket's gradients and queues it; the comm
 * thread runs the queued buckets FIFO, while the main thread goes on
 * computing. Each bucket runs one algorithm, chosen at setup by an
 * alpha-beta model (allreduce_doubling.c): a ring reduce-scatter then a
 * ring allgather (large buckets), or recursive doubling (small ones, where
 * the ring's 2(N-1) latencies dominate). px_k_allreduce_wait blocks until
 * its bucket is done and writes sum / N. Both fix the summation order of
 * every element for a given N (so runs are deterministic) and hand the same
 * bits to every rank. Every rank must start the buckets in the same order.
 *
 * The comm thread (comm_thread.c) runs the queued jobs. Without
 * MPI_THREAD_MULTIPLE the queued buckets run, still FIFO, inside the wait
 * of the bucket that needs them. */
#include "comm_internal.h"
#include "px_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PHASE_SCATTER = 0, PHASE_GATHER = 1 };

static int64_t chunk_start(int64_t n, int parts, int c) {
    return c * (n / parts) + (c < n % parts ? c : n % parts);
}

static int64_t chunk_len(int64_t n, int parts, int c) {
    return n / parts + (c < n % parts ? 1 : 0);
}

static int mod(int a, int n) {
    return ((a % n) + n) % n;
}

/* One ring step: receive `rlen` floats from the left into `rbuf` while
 * sending `slen` floats at `sbuf` to the right. */
static void ring_step(int64_t bucket, int phase, int step, float *rbuf, int64_t rlen,
                      const float *sbuf, int64_t slen, int slot) {
    int n = px_comm.size, r = px_comm.rank;
    int left = mod(r - 1, n), right = mod(r + 1, n);
    int tag = comm_tag(bucket * 2 + phase, 0);
    MPI_Request req[2];
    int peers[2] = {left, right};
    comm_irecv(rbuf, rlen, MPI_FLOAT, 4, left, tag, px_comm.ar_comm, PX_TRAFFIC_ALLREDUCE, &req[0]);
    comm_isend(sbuf, slen, MPI_FLOAT, 4, right, tag, px_comm.ar_comm, PX_TRAFFIC_ALLREDUCE,
               &req[1]);
    char what[160];
    snprintf(what, sizeof what, "allreduce of bucket %lld (%s step %d of %d)", (long long)bucket,
             phase == PHASE_SCATTER ? "reduce-scatter" : "allgather", step + 1, n - 1);
    comm_waitall(slot, 2, req, peers, what);
}

/* Replaces bucket b's buffer by its sum over the ranks. */
static void ring_allreduce(int64_t b, int slot) {
    comm_bucket *bk = &px_comm.buckets[b];
    int n = px_comm.size, r = px_comm.rank;
    if (n == 1 || bk->n == 0) return;
    float *buf = bk->buf, *tmp = px_comm.ring_scratch;
    /* Reduce-scatter: after step k, chunk r-k-1 holds the sum of k+2 ranks;
     * at the end rank r holds the full sum of chunk r+1. */
    for (int k = 0; k < n - 1; k++) {
        int sc = mod(r - k, n), rc = mod(r - k - 1, n);
        int64_t rlen = chunk_len(bk->n, n, rc);
        ring_step(b, PHASE_SCATTER, k, tmp, rlen, buf + chunk_start(bk->n, n, sc),
                  chunk_len(bk->n, n, sc), slot);
        float *acc = buf + chunk_start(bk->n, n, rc);
        for (int64_t j = 0; j < rlen; j++) acc[j] += tmp[j];
    }
    /* Allgather: pass the finished chunks around the ring. */
    for (int k = 0; k < n - 1; k++) {
        int sc = mod(r + 1 - k, n), rc = mod(r - k, n);
        ring_step(b, PHASE_GATHER, k, buf + chunk_start(bk->n, n, rc), chunk_len(bk->n, n, rc),
                  buf + chunk_start(bk->n, n, sc), chunk_len(bk->n, n, sc), slot);
    }
}

/* Runs bucket b's algorithm; the time goes to the communication total. */
void comm_allreduce_run_bucket(int64_t b, int slot) {
    double trace_t0 = px_trace_begin();
    double t0 = comm_now();
    comm_bucket *bk = &px_comm.buckets[b];
    if (bk->algorithm == PX_ALLREDUCE_DOUBLING)
        doubling_allreduce(b, bk->buf, bk->n, px_comm.ring_scratch, slot);
    else
        ring_allreduce(b, slot);
    comm_time_busy(comm_now() - t0);
    px_trace_end(PX_SPAN_ALLREDUCE, (int32_t)b, trace_t0);
}

int px_comm_allreduce_algorithm(int64_t bucket) {
    if (!px_comm.setup_done || bucket < 0 || bucket >= px_comm.n_buckets) return -1;
    return px_comm.buckets[bucket].algorithm;
}

void comm_allreduce_setup(const px_program_desc *p) {
    px_comm.n_buckets = p->n_buckets;
    if (p->n_buckets <= 0) return;
    px_comm.buckets = calloc((size_t)p->n_buckets, sizeof *px_comm.buckets);
    /* Rank 0 decides, so that an environment that differs between ranks
     * cannot make them run different algorithms. */
    int *algorithm = calloc((size_t)p->n_buckets, sizeof *algorithm);
    if (!algorithm) px_rt_fail("out of memory for the allreduce buckets");
    if (px_comm.rank == 0) comm_allreduce_choose(p->n_buckets, p->bucket_bytes, algorithm);
    MPI_Bcast(algorithm, (int)p->n_buckets, MPI_INT, 0, px_comm.coll_comm);
    int64_t max_scratch = 0;
    for (int64_t b = 0; b < p->n_buckets; b++) {
        comm_bucket *bk = &px_comm.buckets[b];
        bk->nbytes = p->bucket_bytes[b];
        if (bk->nbytes < 0 || bk->nbytes % 4)
            px_rt_fail("allreduce bucket %lld has %lld bytes: not a whole number of floats",
                       (long long)b, (long long)bk->nbytes);
        bk->n = bk->nbytes / 4;
        bk->buf = malloc((size_t)bk->nbytes + 4);
        if (!bk->buf) px_rt_fail("out of memory for allreduce bucket %lld", (long long)b);
        bk->algorithm = algorithm[b];
        int64_t c =
            bk->algorithm == PX_ALLREDUCE_DOUBLING ? bk->n : chunk_len(bk->n, px_comm.size, 0);
        if (c > max_scratch) max_scratch = c;
    }
    free(algorithm);
    px_comm.ring_scratch = malloc(sizeof(float) * (size_t)(max_scratch + 1));
    if (!px_comm.ring_scratch) px_rt_fail("out of memory for the allreduce scratch buffer");
}

void comm_allreduce_teardown(void) {
    for (int64_t b = 0; b < px_comm.n_buckets; b++) free(px_comm.buckets[b].buf);
    free(px_comm.buckets);
    free(px_comm.ring_scratch);
    px_comm.buckets = NULL;
    px_comm.ring_scratch = NULL;
    px_comm.n_buckets = 0;
}

static comm_bucket *bucket_checked(int64_t b, int k, const int64_t *nbytes, const char *op) {
    if (!px_comm.setup_done) px_rt_fail("%s: communication is not set up", op);
    if (b < 0 || b >= px_comm.n_buckets)
        px_rt_fail("%s: bucket %lld does not exist (the program has %lld)", op, (long long)b,
                   (long long)px_comm.n_buckets);
    comm_bucket *bk = &px_comm.buckets[b];
    int64_t total = 0;
    for (int i = 0; i < k; i++) {
        if (nbytes[i] < 0 || nbytes[i] % 4)
            px_rt_fail("%s: gradient %d of bucket %lld has %lld bytes: not a whole number of "
                       "floats",
                       op, i, (long long)b, (long long)nbytes[i]);
        total += nbytes[i];
    }
    if (total != bk->nbytes)
        px_rt_fail("%s: bucket %lld gets %lld bytes of gradients but holds %lld", op, (long long)b,
                   (long long)total, (long long)bk->nbytes);
    return bk;
}

void comm_allreduce_start(int64_t b, int k, void *const *g, const int64_t *nbytes) {
    comm_bucket *bk = bucket_checked(b, k, nbytes, "allreduce start");
    pthread_mutex_lock(&px_comm.mu);
    int state = bk->state;
    pthread_mutex_unlock(&px_comm.mu);
    if (state != BUCKET_IDLE)
        px_rt_fail("allreduce of bucket %lld started again before it was waited for", (long long)b);
    char *dst = (char *)bk->buf;
    for (int i = 0; i < k; i++) {
        memcpy(dst, g[i], (size_t)nbytes[i]);
        dst += nbytes[i];
    }
    pthread_mutex_lock(&px_comm.mu);
    if (px_comm.size == 1) {
        bk->state = BUCKET_DONE;
    } else {
        bk->state = BUCKET_QUEUED;
        comm_job_enqueue_locked(b);
    }
    pthread_mutex_unlock(&px_comm.mu);
}

void comm_allreduce_wait(int64_t b, int k, void *const *g, void *const *out,
                         const int64_t *nbytes) {
    (void)g;
    comm_bucket *bk = bucket_checked(b, k, nbytes, "allreduce wait");
    pthread_mutex_lock(&px_comm.mu);
    int state = bk->state;
    pthread_mutex_unlock(&px_comm.mu);
    if (state == BUCKET_IDLE)
        px_rt_fail("allreduce wait for bucket %lld, which was not started", (long long)b);
    double t0 = comm_now();
    if (px_comm.thread_running) {
        comm_activity(WATCH_MAIN, "the allreduce of bucket %lld", (long long)b);
        comm_main_waits(1);
        pthread_mutex_lock(&px_comm.mu);
        while (bk->state != BUCKET_DONE) pthread_cond_wait(&px_comm.cv, &px_comm.mu);
        pthread_mutex_unlock(&px_comm.mu);
        comm_main_waits(-1);
        comm_activity_clear(WATCH_MAIN);
    } else {
        while (bk->state != BUCKET_DONE) /* run the queue up to b, in start order */
            if (!comm_job_run_front())
                px_rt_fail("internal error: bucket %lld is queued but not in the queue",
                           (long long)b);
    }
    comm_time_waited(comm_now() - t0);
    const float *src = bk->buf;
    float n = (float)px_comm.size;
    for (int i = 0; i < k; i++) {
        int64_t m = nbytes[i] / 4;
        float *o = out[i];
        if (px_comm.size == 1)
            memmove(o, src, (size_t)nbytes[i]);
        else
            for (int64_t j = 0; j < m; j++) o[j] = src[j] / n;
        src += m;
    }
    pthread_mutex_lock(&px_comm.mu);
    bk->state = BUCKET_IDLE;
    pthread_mutex_unlock(&px_comm.mu);
    comm_progress();
}
