/* Bucketed AllReduce of dense gradients, overlapped with the backward pass.
 *
 * px_k_allreduce_start packs a bucket's gradients and queues it; the comm
 * thread runs the queued buckets FIFO, while the main thread goes on
 * computing (sched/allreduce_jobs.c). Each bucket runs one algorithm, chosen at setup by an
 * alpha-beta model (allreduce_doubling.c): a ring reduce-scatter then a
 * ring allgather (large buckets), or recursive doubling (small ones, where
 * the ring's 2(N-1) latencies dominate). px_k_allreduce_wait blocks until
 * its bucket is done and writes sum / N. Both fix the summation order of
 * every element for a given N (so runs are deterministic) and hand the same
 * bits to every rank. Every rank must start the buckets in the same order.
 *
 * With --wire bf16|fp16 (transport/wire_format.c) every chunk travels in
 * 16 bits and is added in float32; the finished sum of each chunk is
 * rounded to 16 bits on the rank that made it before the allgather sends
 * it, so every rank still ends with the same bits. With
 * --wire-error-feedback each rank rounds its own gradients when it packs
 * them and carries the rounding residual to the bucket's next step.
 *
 * This file holds the buckets and runs the sum of one; the queue, the
 * comm thread and the waits are sched/'s. */
#include "collectives.h"
#include "px_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PHASE_SCATTER = 0, PHASE_GATHER = 1 };

typedef struct comm_bucket {
    int64_t nbytes;  /* px_program.bucket_bytes[i] */
    int64_t n;       /* floats */
    float *buf;      /* packed gradients; after the ring: the sum over ranks */
    float *residual; /* --wire-error-feedback: this rank's rounding residual, else NULL */
    int algorithm;   /* PX_ALLREDUCE_RING or PX_ALLREDUCE_DOUBLING, the same on every rank */
    const comm_ar_group *group; /* the ranks it is summed over */
    int elsewhere;              /* --pp: another stage's bucket, never run here */
} comm_bucket;

static struct {
    int ready; /* set up */
    int64_t n_buckets;
    comm_bucket *buckets;
    float *ring_scratch;  /* a ring chunk or a doubling bucket, the largest */
    uint16_t *wire_stage; /* as many 16-bit values (a 16-bit --wire), else NULL */
    comm_ar_group all;    /* every rank, on ar_comm */
    comm_ar_group slab;   /* --tp: the ranks at this rank's position of every group */
    comm_ar_group stage;  /* --pp: the ranks of this rank's stage and --tp position */
} coll;

static int64_t chunk_start(int64_t n, int parts, int c) {
    return c * (n / parts) + (c < n % parts ? c : n % parts);
}

static int64_t chunk_len(int64_t n, int parts, int c) {
    return n / parts + (c < n % parts ? 1 : 0);
}

static int mod(int a, int n) {
    return ((a % n) + n) % n;
}

/* A ring over the ranks of `grp`: tags from id (one per phase), `label`
 * for the watchdog's report; chunks in wire format `wire`, a 16-bit one
 * packed into `stage` (a chunk's floats). */
typedef struct ring {
    const comm_ar_group *grp;
    int64_t id;
    const char *label;
    int slot;
    int wire;
    uint16_t *stage;
} ring;

/* One ring step: receive `rlen` floats from the left into `rbuf` while
 * sending `slen` floats at `sbuf` to the right. */
static void ring_step(const ring *rg, int phase, int step, float *rbuf, int64_t rlen,
                      const float *sbuf, int64_t slen) {
    const comm_ar_group *g = rg->grp;
    int n = g->size, r = g->rank;
    int left = mod(r - 1, n), right = mod(r + 1, n);
    int tag = comm_tag(rg->id * 2 + phase, 0);
    MPI_Request req[2];
    int peers[2] = {g->offset + left * g->stride, g->offset + right * g->stride};
    int w = rg->wire;
    comm_irecv_wire(w, rbuf, rlen, left, tag, g->comm, PX_TRAFFIC_ALLREDUCE, &req[0]);
    comm_isend_wire(w, comm_wire_pack(w, sbuf, slen, rg->stage), slen, right, tag, g->comm,
                    PX_TRAFFIC_ALLREDUCE, &req[1]);
    char what[200];
    snprintf(what, sizeof what, "allreduce of %s (%s step %d of %d)", rg->label,
             phase == PHASE_SCATTER ? "reduce-scatter" : "allgather", step + 1, n - 1);
    comm_waitall(rg->slot, 2, req, peers, what);
    comm_wire_arrived(w, rbuf, rlen);
}

/* Replaces buf (n floats) by its sum over the ranks; tmp holds a chunk. */
static void ring_sum(const ring *rg, float *buf, int64_t n_floats, float *tmp) {
    int n = rg->grp->size, r = rg->grp->rank;
    if (n == 1 || n_floats == 0) return;
    /* Reduce-scatter: after step k, chunk r-k-1 holds the sum of k+2 ranks;
     * at the end rank r holds the full sum of chunk r+1. */
    for (int k = 0; k < n - 1; k++) {
        int sc = mod(r - k, n), rc = mod(r - k - 1, n);
        int64_t rlen = chunk_len(n_floats, n, rc);
        ring_step(rg, PHASE_SCATTER, k, tmp, rlen, buf + chunk_start(n_floats, n, sc),
                  chunk_len(n_floats, n, sc));
        float *acc = buf + chunk_start(n_floats, n, rc);
        for (int64_t j = 0; j < rlen; j++) acc[j] += tmp[j];
    }
    /* Allgather: pass the finished chunks around the ring (each rounded to
     * the wire's precision by the rank that summed it, as the others will
     * receive it). */
    int mine = mod(r + 1, n);
    comm_wire_round(rg->wire, buf + chunk_start(n_floats, n, mine), chunk_len(n_floats, n, mine));
    for (int k = 0; k < n - 1; k++) {
        int sc = mod(r + 1 - k, n), rc = mod(r - k, n);
        ring_step(rg, PHASE_GATHER, k, buf + chunk_start(n_floats, n, rc),
                  chunk_len(n_floats, n, rc), buf + chunk_start(n_floats, n, sc),
                  chunk_len(n_floats, n, sc));
    }
}

/* Replaces bucket b's buffer by its sum over the ranks. */
static void ring_allreduce(int64_t b, int slot) {
    comm_bucket *bk = &coll.buckets[b];
    char label[64];
    snprintf(label, sizeof label, "bucket %lld", (long long)b);
    ring rg = {bk->group, b, label, slot, comm_wire_format(), coll.wire_stage};
    ring_sum(&rg, bk->buf, bk->n, coll.ring_scratch);
}

void px_comm_mean_floats(float *buf, int64_t n, const char *what) {
    int size = px_world.size;
    if (size <= 1 || n <= 0) return;
    float *tmp = malloc(sizeof(float) * (size_t)(chunk_len(n, size, 0) + 1));
    if (!tmp) px_rt_fail("out of memory averaging %s over the ranks", what);
    /* the main thread's collectives' communicator: no bucket runs on it */
    comm_ar_group all = {px_world.coll_comm, size, px_world.rank, 0, 1};
    ring rg = {&all, 0, what, WATCH_MAIN, PX_WIRE_FP32, NULL};
    double t0 = comm_now();
    ring_sum(&rg, buf, n, tmp);
    comm_time_busy(comm_now() - t0);
    comm_time_waited(comm_now() - t0);
    float fn = (float)size;
    for (int64_t j = 0; j < n; j++) buf[j] /= fn;
    free(tmp);
}

/* Runs bucket b's algorithm; the time goes to the communication total. */
void comm_allreduce_run_bucket(int64_t b, int slot) {
    double trace_t0 = px_trace_begin();
    double t0 = comm_now();
    comm_bucket *bk = &coll.buckets[b];
    if (bk->algorithm == PX_ALLREDUCE_DOUBLING)
        doubling_allreduce(bk->group, b, bk->buf, bk->n, coll.ring_scratch, coll.wire_stage, slot);
    else
        ring_allreduce(b, slot);
    comm_time_busy(comm_now() - t0);
    px_trace_end(PX_SPAN_ALLREDUCE, (int32_t)b, trace_t0);
}

int px_comm_allreduce_algorithm(int64_t bucket) {
    if (!coll.ready || bucket < 0 || bucket >= coll.n_buckets) return -1;
    return coll.buckets[bucket].algorithm;
}

int64_t comm_allreduce_n_buckets(void) {
    return coll.n_buckets;
}

/* --tp's slab buckets go over the ranks at this rank's position t of every
 * group (t, t + tp, t + 2 tp, ...: N / tp of them); a split of ar_comm,
 * collective, made when the program has slab buckets. Under --pp every
 * bucket belongs to a stage and goes over the ranks of that stage at this
 * rank's position t, one per pipeline (s * tp + t, plus tp * pp, ...):
 * the other ranks of a tensor-parallel group hold the same replicated
 * gradients, or other slabs. */
static void setup_groups(const px_program_desc *p) {
    coll.all = (comm_ar_group){px_world.ar_comm, px_world.size, px_world.rank, 0, 1};
    coll.slab = coll.stage = coll.all;
    int tp = p->tp > 1 ? (int)p->tp : 1, pp = p->pp > 1 ? (int)p->pp : 1;
    if (px_world.size % (tp * pp))
        px_rt_fail("--tp %d --pp %d: the program runs on %d ranks, not a multiple of %d", tp, pp,
                   px_world.size, tp * pp);
    if (pp > 1 && p->bucket_pp_stage) {
        int k = tp * pp, at = px_world.rank % k;
        MPI_Comm_split(px_world.ar_comm, at, px_world.rank, &coll.stage.comm);
        coll.stage = (comm_ar_group){coll.stage.comm, px_world.size / k, px_world.rank / k, at, k};
        return;
    }
    int any = 0;
    for (int64_t b = 0; p->bucket_slab && b < p->n_buckets; b++) any |= p->bucket_slab[b] != 0;
    if (!any) return;
    int t = px_world.rank % tp;
    MPI_Comm_split(px_world.ar_comm, t, px_world.rank, &coll.slab.comm);
    coll.slab = (comm_ar_group){coll.slab.comm, px_world.size / tp, px_world.rank / tp, t, tp};
}

void comm_allreduce_setup(const px_program_desc *p, int error_feedback) {
    coll.n_buckets = p->n_buckets;
    coll.ready = 1;
    error_feedback = error_feedback && comm_wire_format() != PX_WIRE_FP32 && px_world.size > 1;
    if (p->n_buckets <= 0) return;
    setup_groups(p);
    coll.buckets = calloc((size_t)p->n_buckets, sizeof *coll.buckets);
    /* Rank 0 decides, so that an environment that differs between ranks
     * cannot make them run different algorithms. */
    int *algorithm = calloc((size_t)p->n_buckets, sizeof *algorithm);
    int *ranks = calloc((size_t)p->n_buckets, sizeof *ranks);
    if (!algorithm || !ranks || !coll.buckets)
        px_rt_fail("out of memory for the allreduce buckets");
    for (int64_t b = 0; b < p->n_buckets; b++) {
        comm_bucket *bk = &coll.buckets[b];
        bk->group = p->bucket_slab && p->bucket_slab[b] ? &coll.slab : &coll.all;
        if (p->pp > 1 && p->bucket_pp_stage) {
            bk->group = &coll.stage;
            bk->elsewhere = p->bucket_pp_stage[b] != px_pp_stage;
        }
        ranks[b] = bk->group->size;
    }
    if (px_world.rank == 0) comm_allreduce_choose(p->n_buckets, p->bucket_bytes, ranks, algorithm);
    free(ranks);
    MPI_Bcast(algorithm, (int)p->n_buckets, MPI_INT, 0, px_world.coll_comm);
    int64_t max_scratch = 0;
    for (int64_t b = 0; b < p->n_buckets; b++) {
        comm_bucket *bk = &coll.buckets[b];
        bk->nbytes = p->bucket_bytes[b];
        if (bk->nbytes < 0 || bk->nbytes % 4)
            px_rt_fail("allreduce bucket %lld has %lld bytes: not a whole number of floats",
                       (long long)b, (long long)bk->nbytes);
        bk->n = bk->nbytes / 4;
        bk->algorithm = algorithm[b];
        if (error_feedback && !bk->elsewhere &&
            !(bk->residual = calloc((size_t)bk->n + 1, sizeof(float))))
            px_rt_fail("out of memory for the error feedback of allreduce bucket %lld",
                       (long long)b);
        /* A bucket that passes through (one rank: 1 rank, or a --tp slab
         * held by a single group) leaves the gradients where they are: it
         * needs neither a buffer nor scratch. */
        if (comm_allreduce_passes_through(b) || bk->elsewhere) continue;
        bk->buf = malloc((size_t)bk->nbytes + 4);
        if (!bk->buf) px_rt_fail("out of memory for allreduce bucket %lld", (long long)b);
        int64_t c =
            bk->algorithm == PX_ALLREDUCE_DOUBLING ? bk->n : chunk_len(bk->n, bk->group->size, 0);
        if (c > max_scratch) max_scratch = c;
    }
    free(algorithm);
    coll.ring_scratch = malloc(sizeof(float) * (size_t)(max_scratch + 1));
    if (!coll.ring_scratch) px_rt_fail("out of memory for the allreduce scratch buffer");
    if (comm_wire_format() != PX_WIRE_FP32 &&
        !(coll.wire_stage = malloc(sizeof(uint16_t) * (size_t)(max_scratch + 1))))
        px_rt_fail("out of memory for the allreduce scratch buffer");
}

void comm_allreduce_teardown(void) {
    for (int64_t b = 0; b < coll.n_buckets; b++) {
        free(coll.buckets[b].buf);
        free(coll.buckets[b].residual);
    }
    free(coll.buckets);
    free(coll.ring_scratch);
    free(coll.wire_stage);
    if (coll.slab.comm != coll.all.comm && coll.slab.comm != MPI_COMM_NULL)
        MPI_Comm_free(&coll.slab.comm);
    if (coll.stage.comm != coll.all.comm && coll.stage.comm != MPI_COMM_NULL)
        MPI_Comm_free(&coll.stage.comm);
    coll.slab = coll.stage = coll.all = (comm_ar_group){MPI_COMM_NULL, 0, 0, 0, 1};
    coll.buckets = NULL;
    coll.ring_scratch = NULL;
    coll.wire_stage = NULL;
    coll.n_buckets = 0;
    coll.ready = 0;
}

void comm_allreduce_check(int64_t b, int k, const int64_t *nbytes, const char *op) {
    if (!coll.ready) px_rt_fail("%s: communication is not set up", op);
    if (b < 0 || b >= coll.n_buckets)
        px_rt_fail("%s: bucket %lld does not exist (the program has %lld)", op, (long long)b,
                   (long long)coll.n_buckets);
    comm_bucket *bk = &coll.buckets[b];
    if (bk->elsewhere)
        px_rt_fail("%s: internal error: bucket %lld belongs to another pipeline stage (--pp)", op,
                   (long long)b);
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
}

int comm_allreduce_ranks(int64_t b) {
    return coll.buckets[b].group->size;
}

int comm_allreduce_passes_through(int64_t b) {
    return coll.buckets[b].group->size == 1 && !coll.buckets[b].residual;
}

void comm_allreduce_pack(int64_t b, int k, void *const *g, const int64_t *nbytes) {
    comm_bucket *bk = &coll.buckets[b];
    char *dst = (char *)bk->buf;
    for (int i = 0; i < k; i++) {
        memcpy(dst, g[i], (size_t)nbytes[i]);
        dst += nbytes[i];
    }
    if (!bk->residual) return;
    /* Error feedback: this rank sends its gradient plus the residual it
     * kept, rounded to the wire's precision here, and keeps what the
     * rounding dropped for the next step. */
    float *x = bk->buf, *e = bk->residual;
    for (int64_t j = 0; j < bk->n; j++) x[j] += e[j];
    for (int64_t j = 0; j < bk->n; j++) e[j] = x[j];
    comm_wire_round(comm_wire_format(), x, bk->n);
    for (int64_t j = 0; j < bk->n; j++) e[j] -= x[j];
}

void comm_allreduce_forget_residuals(void) {
    for (int64_t b = 0; b < coll.n_buckets; b++)
        if (coll.buckets[b].residual)
            memset(coll.buckets[b].residual, 0, sizeof(float) * (size_t)coll.buckets[b].n);
}

void comm_allreduce_unpack(int64_t b, int k, void *const *out, const int64_t *nbytes) {
    const float *src = coll.buckets[b].buf;
    int size = coll.buckets[b].group->size;
    float n = (float)size;
    for (int i = 0; i < k; i++) {
        int64_t m = nbytes[i] / 4;
        float *o = out[i];
        if (size == 1)
            memmove(o, src, (size_t)nbytes[i]);
        else
            for (int64_t j = 0; j < m; j++) o[j] = src[j] / n;
        src += m;
    }
}

/* One buffer per bucket that does not pass through (and its residual with
 * error feedback), and the ring's scratch of one chunk of the largest such
 * bucket (and its 16-bit staging). */
int64_t comm_allreduce_buffer_bytes(void) {
    int64_t bytes = 0, max_chunk = 0;
    for (int64_t b = 0; b < coll.n_buckets; b++) {
        /* no buffer: passes through, or another stage's (--pp) */
        if (comm_allreduce_passes_through(b) || coll.buckets[b].elsewhere) continue;
        int64_t n = coll.buckets[b].n, size = coll.buckets[b].group->size;
        int64_t chunk = (n + size - 1) / size;
        bytes += coll.buckets[b].nbytes * (coll.buckets[b].residual ? 2 : 1);
        if (chunk > max_chunk) max_chunk = chunk;
    }
    return bytes + (int64_t)(sizeof(float) + (coll.wire_stage ? sizeof(uint16_t) : 0)) * max_chunk;
}
