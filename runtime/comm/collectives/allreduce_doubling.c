/* Latency-aware AllReduce: recursive doubling for small buckets, and the
 * alpha-beta model that picks it or the ring per bucket.
 *
 * Cost of one bucket of S bytes on N ranks, a message costing
 * alpha + bytes * beta (full-duplex links, concurrent pairs):
 *   ring      2 (N-1) (alpha + S/N beta)   bandwidth-optimal, 2(N-1) latencies
 *   doubling  (log2 p + 2 [N > p]) (alpha + S beta),  p = 2^floor(log2 N)
 * so the ring wins on large buckets and doubling on small ones (at 1 Gbit/s
 * and 50 us, 4 ranks: below about 50 kB). passes/traffic.c predicts with
 * the same formulas and the same defaults.
 *
 * Recursive doubling, N not a power of two: the first r = N - p ranks of
 * the upper block ("extras", ranks p..N-1) first send their vector to rank
 * (extra - p), which adds it; the p lower ranks then run log2 p exchange
 * rounds (round k: partner rank ^ 2^k, both sides add the lower rank's
 * vector to the higher's in that order); at the end rank i < r sends the
 * result back to extra p + i. Both partners of a round compute the same sum
 * from the same operands, so after round k every aligned block of 2^(k+1)
 * ranks holds the same bits, and at the end every rank does: the ring's
 * guarantee, with a summation order fixed for a given N.
 *
 * Settings (environment, read at setup; rank 0's values decide, broadcast):
 *   PX_ALLREDUCE        auto (default) | ring | doubling
 *   PX_NET_LATENCY      alpha, seconds per message (default 50e-6)
 *   PX_NET_BANDWIDTH    1/beta, bytes per second (default 125e6: 1 Gbit/s) */
#include "collectives.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_LATENCY_S 50e-6
#define DEFAULT_BANDWIDTH_BPS 125e6

static double env_positive(const char *name, double fallback) {
    const char *s = getenv(name);
    if (!s || !s[0]) return fallback;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0) || !isfinite(v))
        px_rt_fail("%s='%s': expected a positive number", name, s);
    return v;
}

int comm_allreduce_forced_algorithm(void) {
    const char *s = getenv("PX_ALLREDUCE");
    if (!s || !s[0] || strcmp(s, "auto") == 0) return -1;
    if (strcmp(s, "ring") == 0) return PX_ALLREDUCE_RING;
    if (strcmp(s, "doubling") == 0) return PX_ALLREDUCE_DOUBLING;
    px_rt_fail("PX_ALLREDUCE='%s': expected auto, ring or doubling", s);
    return -1;
}

static int floor_pow2(int n) {
    int p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
}

double comm_allreduce_seconds(int algorithm, double bytes, int n, double alpha, double beta) {
    if (n <= 1 || bytes <= 0) return 0;
    if (algorithm == PX_ALLREDUCE_RING) return 2.0 * (n - 1) * (alpha + bytes / n * beta);
    int p = floor_pow2(n), rounds = 0;
    while ((1 << rounds) < p) rounds++;
    return (rounds + (n > p ? 2 : 0)) * (alpha + bytes * beta);
}

void comm_allreduce_choose(int64_t n_buckets, const int64_t *bucket_bytes, const int *ranks,
                           int *algorithm) {
    int forced = comm_allreduce_forced_algorithm();
    double alpha = env_positive("PX_NET_LATENCY", DEFAULT_LATENCY_S);
    double beta = 1.0 / env_positive("PX_NET_BANDWIDTH", DEFAULT_BANDWIDTH_BPS);
    for (int64_t b = 0; b < n_buckets; b++) {
        /* the bytes that travel: a 16-bit --wire halves them */
        double s = (double)bucket_bytes[b] / 4 * px_wire_format_bytes(comm_wire_format());
        double ring = comm_allreduce_seconds(PX_ALLREDUCE_RING, s, ranks[b], alpha, beta);
        double dbl = comm_allreduce_seconds(PX_ALLREDUCE_DOUBLING, s, ranks[b], alpha, beta);
        algorithm[b] = forced >= 0  ? forced
                       : dbl < ring ? PX_ALLREDUCE_DOUBLING
                                    : PX_ALLREDUCE_RING;
    }
}

/* Exchange buf with peer (n floats each way, in the wire format) into tmp. */
static void exchange(const comm_ar_group *grp, int64_t bucket, int phase, int peer, float *tmp,
                     const float *buf, int64_t n, uint16_t *stage, int slot) {
    MPI_Request req[2];
    int world = grp->offset + peer * grp->stride, peers[2] = {world, world};
    int tag = comm_tag(bucket * 2 + phase, 0);
    int w = comm_wire_format();
    comm_irecv_wire(w, tmp, n, peer, tag, grp->comm, PX_TRAFFIC_ALLREDUCE, &req[0]);
    comm_isend_wire(w, comm_wire_pack(w, buf, n, stage), n, peer, tag, grp->comm,
                    PX_TRAFFIC_ALLREDUCE, &req[1]);
    char what[160];
    snprintf(what, sizeof what, "allreduce of bucket %lld (recursive doubling)", (long long)bucket);
    comm_waitall(slot, 2, req, peers, what);
    comm_wire_arrived(w, tmp, n);
}

/* One direction only: send (to >= 0) or receive (from >= 0) n floats. */
static void one_way(const comm_ar_group *grp, int64_t bucket, int phase, int to, const float *sbuf,
                    int from, float *rbuf, int64_t n, uint16_t *stage, int slot) {
    MPI_Request req;
    int peer = grp->offset + (to >= 0 ? to : from) * grp->stride;
    int tag = comm_tag(bucket * 2 + phase, 0), w = comm_wire_format();
    if (to >= 0)
        comm_isend_wire(w, comm_wire_pack(w, sbuf, n, stage), n, to, tag, grp->comm,
                        PX_TRAFFIC_ALLREDUCE, &req);
    else
        comm_irecv_wire(w, rbuf, n, from, tag, grp->comm, PX_TRAFFIC_ALLREDUCE, &req);
    char what[160];
    snprintf(what, sizeof what, "allreduce of bucket %lld (recursive doubling, %s)",
             (long long)bucket, to >= 0 ? "fold" : "unfold");
    comm_waitall(slot, 1, &req, &peer, what);
    if (to < 0) comm_wire_arrived(w, rbuf, n);
}

/* With a 16-bit --wire, each partner of a round rounds its vector before
 * sending it, so both add the same two rounded operands; the result is
 * rounded before it goes back to the folded ranks, on every rank. */
void doubling_allreduce(const comm_ar_group *grp, int64_t b, float *buf, int64_t n, float *tmp,
                        uint16_t *stage, int slot) {
    int size = grp->size, r = grp->rank;
    if (size == 1 || n == 0) return;
    int p = floor_pow2(size), extras = size - p;
    if (r >= p) { /* fold into r - p, then wait for the result */
        one_way(grp, b, 0, r - p, buf, -1, NULL, n, stage, slot);
        one_way(grp, b, 1, -1, NULL, r - p, buf, n, stage, slot);
        return;
    }
    if (r < extras) {
        one_way(grp, b, 0, -1, NULL, r + p, tmp, n, stage, slot);
        for (int64_t j = 0; j < n; j++) buf[j] = buf[j] + tmp[j];
    }
    for (int bit = 1; bit < p; bit <<= 1) {
        /* Both partners compute the same sum of the same two operands, and
         * IEEE-754 addition is commutative: the same bits on both sides. */
        comm_wire_round(comm_wire_format(), buf, n);
        exchange(grp, b, 0, r ^ bit, tmp, buf, n, stage, slot);
        for (int64_t j = 0; j < n; j++) buf[j] += tmp[j];
    }
    comm_wire_round(comm_wire_format(), buf, n);
    if (r < extras) one_way(grp, b, 1, r + p, buf, -1, NULL, n, stage, slot);
}
