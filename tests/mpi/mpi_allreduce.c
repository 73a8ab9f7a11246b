/* Bucketed AllReduce (px_k_allreduce_start / px_k_allreduce_wait): the
 * mean over ranks equals a serial sum (exactly, for integer-valued
 * gradients; to float rounding for random ones), every rank gets the same
 * bits, buckets smaller than the rank count, sizes not divisible by it,
 * several gradients in one bucket, waits in another order than the starts,
 * outputs written over the inputs, and the bytes counted equal the formula
 * of the bucket's algorithm (ring or recursive doubling). Run with
 * PX_COMM_NO_THREAD=1 too (no communication thread), and with
 * PX_ALLREDUCE=ring / doubling (every bucket by one algorithm); without it
 * (auto) the 1-float bucket must use doubling and, from 3 ranks on, the
 * 80 kB one the ring (the alpha-beta model's defaults: 50 us, 1 Gbit/s). */
#include "mpi_test.h"

#include <math.h>

enum { NB = 6, MAXG = 2 };
/* Gradients of each bucket (floats); bucket 3 packs two gradients. */
static const int64_t grad_floats[NB][MAXG] = {{1, 0}, {7, 0},    {1000, 0},
                                              {3, 5}, {4099, 0}, {20000, 0}};
static int64_t bucket_bytes[NB];
static int n_grads[NB];

static float value(int rank, int b, int64_t j, int step, int integer) {
    if (integer) return (float)((rank + 1) * (int)((j + b) % 5) - 2 + step);
    uint64_t s = ((uint64_t)rank << 40) ^ ((uint64_t)b << 32) ^ ((uint64_t)j << 8) ^ (uint64_t)step;
    return mt_uniform(&s);
}

static int64_t chunk(int64_t n, int parts, int c) {
    c = ((c % parts) + parts) % parts;
    return n / parts + (c < n % parts ? 1 : 0);
}

static void run_step(int step, int integer, int in_place) {
    int rank = px_comm_rank(), size = px_comm_size();
    float *g[NB][MAXG], *out[NB][MAXG];
    int64_t params[NB][2 + MAXG];
    for (int b = 0; b < NB; b++) {
        params[b][0] = b;
        params[b][1] = n_grads[b];
        for (int i = 0; i < n_grads[b]; i++) {
            int64_t n = grad_floats[b][i];
            params[b][2 + i] = 4 * n;
            g[b][i] = malloc(sizeof(float) * (size_t)n);
            out[b][i] = in_place ? g[b][i] : malloc(sizeof(float) * (size_t)n);
            for (int64_t j = 0; j < n; j++) g[b][i][j] = value(rank, b + 10 * i, j, step, integer);
        }
    }
    px_comm_stats_reset();
    volatile double busy = 0;
    for (int b = 0; b < NB; b++) {
        px_k_allreduce_start((void *const *)g[b], params[b]);
        for (int i = 0; i < 20000; i++) busy += i * 1e-9; /* "backward" while it runs */
    }
    (void)busy;
    for (int b = NB - 1; b >= 0; b--) { /* waits in the other order */
        void *buf[2 * MAXG];
        for (int i = 0; i < n_grads[b]; i++) {
            buf[i] = g[b][i];
            buf[n_grads[b] + i] = out[b][i];
        }
        px_k_allreduce_wait(buf, params[b]);
    }
    px_comm_stats st;
    px_comm_get_stats(&st);

    uint64_t h = 0;
    int bad = 0;
    for (int b = 0; b < NB; b++) {
        for (int i = 0; i < n_grads[b]; i++) {
            for (int64_t j = 0; j < grad_floats[b][i]; j++) {
                double sum = 0;
                float fsum = 0;
                for (int r = 0; r < size; r++) {
                    sum += value(r, b + 10 * i, j, step, integer);
                    fsum += value(r, b + 10 * i, j, step, integer);
                }
                float got = out[b][i][j];
                if (integer) {
                    if (got != fsum / (float)size && bad++ < 5)
                        CHECK(0, "step %d bucket %d grad %d [%lld]: %g, expected %g", step, b, i,
                              (long long)j, got, fsum / (float)size);
                } else if (fabs(got - sum / size) > 1e-6 * (1 + fabs(sum)) && bad++ < 5) {
                    CHECK(0, "step %d bucket %d grad %d [%lld]: %.9g, expected %.9g", step, b, i,
                          (long long)j, got, sum / size);
                }
            }
            h ^= mt_hash(out[b][i], sizeof(float) * (size_t)grad_floats[b][i]) * (uint64_t)(b + 1);
        }
    }
    CHECK(bad == 0, "step %d: %d wrong values (integer %d, in place %d)", step, bad, integer,
          in_place);

    /* Bytes: the ring sends all chunks but c_{r+1} (reduce-scatter) and
     * c_{r+2} (allgather); receives all but c_r and c_{r+1}. Doubling: the
     * whole bucket each round (log2 p rounds, p the largest power of two
     * <= N), once more each way for ranks r < N - p, and once each way for
     * ranks r >= p (they only fold in and get the result). */
    int64_t want_sent = 0, want_recv = 0;
    int p = 1, rounds = 0;
    while (p * 2 <= size) p *= 2, rounds++;
    for (int b = 0; b < NB && size > 1; b++) {
        int64_t n = bucket_bytes[b] / 4;
        if (px_comm_allreduce_algorithm(b) == PX_ALLREDUCE_DOUBLING) {
            int64_t times = rank >= p ? 1 : rounds + (rank < size - p ? 1 : 0);
            want_sent += 4 * n * times;
            want_recv += 4 * n * times;
        } else {
            want_sent += 4 * (2 * n - chunk(n, size, rank + 1) - chunk(n, size, rank + 2));
            want_recv += 4 * (2 * n - chunk(n, size, rank) - chunk(n, size, rank + 1));
        }
    }
    CHECK(st.sent[PX_TRAFFIC_ALLREDUCE] == want_sent, "allreduce bytes sent %lld, formula %lld",
          (long long)st.sent[PX_TRAFFIC_ALLREDUCE], (long long)want_sent);
    CHECK(st.received[PX_TRAFFIC_ALLREDUCE] == want_recv,
          "allreduce bytes received %lld, formula %lld",
          (long long)st.received[PX_TRAFFIC_ALLREDUCE], (long long)want_recv);
    for (int k = PX_TRAFFIC_PS_PULL; k < PX_TRAFFIC_KINDS; k++)
        CHECK(st.sent[k] == 0 && st.received[k] == 0, "kind %d: %lld / %lld bytes, expected 0", k,
              (long long)st.sent[k], (long long)st.received[k]);
    if (step == 0 && rank == 0)
        printf("allreduce bytes per step, rank 0: sent %lld (formula %lld), received %lld "
               "(formula %lld)\n",
               (long long)st.sent[PX_TRAFFIC_ALLREDUCE], (long long)want_sent,
               (long long)st.received[PX_TRAFFIC_ALLREDUCE], (long long)want_recv);
    int mismatch = px_comm_first_mismatch(h);
    CHECK(mismatch == -1, "step %d: rank %d got other bits than rank 0", step, mismatch);

    for (int b = 0; b < NB; b++)
        for (int i = 0; i < n_grads[b]; i++) {
            if (!in_place) free(out[b][i]);
            free(g[b][i]);
        }
}

/* The algorithm of each bucket: as forced, or the model's choice at the
 * extremes (a 1-float bucket: doubling; 80 kB on 3+ ranks: the ring). */
static void check_algorithms(void) {
    const char *forced = getenv("PX_ALLREDUCE");
    if (forced && !forced[0]) forced = NULL;
    int size = px_comm_size();
    for (int b = 0; b < NB; b++) {
        int a = px_comm_allreduce_algorithm(b);
        CHECK(a == PX_ALLREDUCE_RING || a == PX_ALLREDUCE_DOUBLING, "bucket %d: algorithm %d", b,
              a);
        if (forced && strcmp(forced, "ring") == 0)
            CHECK(a == PX_ALLREDUCE_RING, "PX_ALLREDUCE=ring, bucket %d runs %d", b, a);
        else if (forced && strcmp(forced, "doubling") == 0)
            CHECK(a == PX_ALLREDUCE_DOUBLING, "PX_ALLREDUCE=doubling, bucket %d runs %d", b, a);
    }
    if (!forced && size >= 2) {
        CHECK(px_comm_allreduce_algorithm(0) == PX_ALLREDUCE_DOUBLING,
              "auto: the 1-float bucket runs the ring");
        if (size >= 3)
            CHECK(px_comm_allreduce_algorithm(5) == PX_ALLREDUCE_RING,
                  "auto: the 80 kB bucket on %d ranks runs recursive doubling", size);
    }
    if (px_comm_rank() == 0) {
        printf("algorithms (0 ring, 1 doubling):");
        for (int b = 0; b < NB; b++) printf(" %d", px_comm_allreduce_algorithm(b));
        printf("\n");
    }
}

int main(int argc, char **argv) {
    px_comm_init(&argc, &argv);
    for (int b = 0; b < NB; b++) {
        n_grads[b] = grad_floats[b][1] ? 2 : 1;
        bucket_bytes[b] = 4 * (grad_floats[b][0] + grad_floats[b][1]);
    }
    static px_optim_desc optim = {.kind = PX_OPTIM_SGD, .lr = 0.1};
    static px_program_desc prog;
    prog.abi = PX_PROGRAM_ABI;
    prog.kind = PX_PROGRAM_TRAIN;
    prog.optim = &optim;
    prog.n_buckets = NB;
    prog.bucket_bytes = bucket_bytes;
    px_comm_opts opts = {.local_aggregation = 1, .stall_timeout_s = 30};
    px_comm_setup(&prog, &opts);
    check_algorithms();
    for (int step = 0; step < 4; step++) {
        px_comm_step_begin(step);
        run_step(step, step % 2 == 0, step >= 2);
        px_comm_step_end();
    }
    /* A second setup (fresh buckets) works the same. */
    px_comm_setup(&prog, &opts);
    px_comm_step_begin(4);
    run_step(4, 0, 0);
    px_comm_step_end();
    return mt_finish("mpi_allreduce");
}
