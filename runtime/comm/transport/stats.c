/* Traffic counters and communication time (px_comm_get_stats).
 *
 * What is counted: the payload bytes this rank hands to MPI, by kind, when
 * the operation is posted (every posted operation completes or the job
 * ends). Messages to oneself never go through MPI and are not counted;
 * nor are MPI's own headers, nor the collectives of px_comm_setup.
 *
 * allreduce  ring reduce-scatter + allgather of a bucket of n floats split
 *            into N chunks (chunk c: n/N floats, one more when c < n%N):
 *            rank r sends 4*(2n - |c_{r+1}| - |c_{r+2}|) bytes and receives
 *            4*(2n - |c_r| - |c_{r+1}|) (indices mod N); N = 1: nothing.
 *            Recursive doubling (p = 2^floor(log2 N)): every rank r < p
 *            sends and receives 4n log2(p), plus 4n more each way when
 *            r < N - p; ranks r >= p send 4n and receive 4n.
 * ps_pull    sparse pull of the distinct rows U (D floats each): to every
 *            shard s != r an 8-byte count k_s, then, when k_s > 0, k_s int64
 *            indices (8 k_s); the shard answers with 4 D k_s bytes of rows.
 *            A shard receives an 8-byte count from every other rank.
 *            Pull of every row (idx NULL): each shard sends its rows
 *            (4 D rows_s) to every other rank, no counts, no indices.
 * ps_push    row set pushed by a sender to each shard s != sender: an 8-byte
 *            count k_s, then when k_s > 0 the indices (8 k_s) and the rows
 *            (4 D k_s). Senders: every rank (local aggregation off) or the
 *            node leaders after a first round inside each node in which
 *            every other rank sends its whole set to its leader the same
 *            way (count, indices, rows). Dense push: the gradient slices,
 *            4 bytes a float: non-leaders send the whole gradient to their
 *            leader (aggregation on), senders send each shard s != sender
 *            the rows of its partitions.
 *            A prefetched pull (ps/prefetch.c) moves the same counts,
 *            indices and rows as a pull of the union of the rows the
 *            step's pulls of the variable read; it is posted in the step
 *            before and counted in the step it serves.
 * other      px_comm_mean: 8 bytes sent and received; px_comm_first_mismatch:
 *            4 sent and received (+8 sent by rank 0, +8 received by the
 *            others); automatic partitions: 8 bytes each way per timed
 *            step and the rows and optimizer state moved between shards
 *            when re-partitioning; checkpoints (comm/ps/checkpoint.c,
 *            comm/collectives/agree.c): each rank's block hashes gathered to rank 0 (8 bytes each,
 * plus a 4-byte count), the 8-byte nonce broadcast by rank 0 and two 8-byte agreements; --save: the
 * rows of PS variables sent to rank 0, 4 bytes a float; the test helper px_comm_var_gather: rows
 * and slots sent to rank 0 plus a 4-byte broadcast mask.
 *
 * Time: the comm thread adds the wall time of each bucket's allreduce,
 * the PS kernels (sched/kernels.c) the time of each pull and push; the main
 * thread adds the time it was blocked (allreduce waits, pulls and pushes,
 * which are synchronous). comm_hidden_fraction = 1 - waited / busy.
 *
 * CPU: the process's CPU time and the comm thread's (pthread_getcpuclockid)
 * from the last reset to the last px_comm_stats_mark_cpu (the training loop
 * marks each counted step, as it times counted_seconds), main thread only.
 *
 * Counters are updated by the main and comm threads: atomic adds. */
#include "transport.h"

#include <string.h>
#include <time.h>

static int64_t sent[PX_TRAFFIC_KINDS], received[PX_TRAFFIC_KINDS];
static int64_t steps, partitions_chosen;
/* Nanoseconds, so that both threads can add atomically. */
static int64_t busy_ns, waited_ns;

void comm_time_busy(double seconds) {
    __atomic_fetch_add(&busy_ns, (int64_t)(seconds * 1e9), __ATOMIC_RELAXED);
}

void comm_time_waited(double seconds) {
    __atomic_fetch_add(&waited_ns, (int64_t)(seconds * 1e9), __ATOMIC_RELAXED);
}

double px_comm_hidden_fraction(const px_comm_stats *s) {
    if (!(s->comm_seconds > 0)) return -1;
    double f = 1 - s->waited_seconds / s->comm_seconds;
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

/* Traffic of a step not begun yet (a prefetch for step s+1 posted in step
 * s), counted when that step begins. The comm thread may give the answers
 * of step s+1's rows before or after the main thread begins step s+1: the
 * lock makes "not begun yet" and the flush at its beginning one decision. */
static int64_t next_sent[PX_TRAFFIC_KINDS], next_received[PX_TRAFFIC_KINDS];
static int64_t begun = -1; /* the step comm_stats_step_begin began last */
static pthread_mutex_t next_mu = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int64_t traffic_step = -1;

void comm_set_traffic_step(int64_t step) {
    traffic_step = step;
}

static void count(int64_t *now, int64_t *later, int kind, int64_t bytes) {
    if (!(kind & COMM_NEXT_STEP)) {
        __atomic_fetch_add(&now[kind], bytes, __ATOMIC_RELAXED);
        return;
    }
    kind &= ~COMM_NEXT_STEP;
    int64_t step = traffic_step >= 0 ? traffic_step : comm_step() + 1;
    pthread_mutex_lock(&next_mu);
    if (step > begun)
        later[kind] += bytes;
    else
        __atomic_fetch_add(&now[kind], bytes, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&next_mu);
}

void comm_count_sent(int kind, int64_t bytes) {
    count(sent, next_sent, kind, bytes);
}

void comm_count_received(int kind, int64_t bytes) {
    count(received, next_received, kind, bytes);
}

void comm_stats_step_begin(void) {
    pthread_mutex_lock(&next_mu);
    begun = comm_step();
    for (int k = 0; k < PX_TRAFFIC_KINDS; k++) {
        __atomic_fetch_add(&sent[k], next_sent[k], __ATOMIC_RELAXED);
        __atomic_fetch_add(&received[k], next_received[k], __ATOMIC_RELAXED);
        next_sent[k] = next_received[k] = 0;
    }
    pthread_mutex_unlock(&next_mu);
}

void comm_stats_step(void) {
    __atomic_fetch_add(&steps, 1, __ATOMIC_RELAXED);
}

void comm_stats_set_partitions(int64_t p) {
    partitions_chosen = p;
}

static double clock_seconds(clockid_t c) {
    struct timespec ts;
    if (clock_gettime(c, &ts) != 0) return 0;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double comm_thread_cpu(void) {
    clockid_t c;
    if (!comm_thread_cpu_clock(&c)) return 0;
    return clock_seconds(c);
}

/* main thread only; the marks end the span as counted_seconds does */
static double cpu_at_reset, comm_cpu_at_reset, cpu_at_mark = -1, comm_cpu_at_mark;

void px_comm_stats_mark_cpu(void) {
    cpu_at_mark = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    comm_cpu_at_mark = comm_thread_cpu();
}

void px_comm_stats_reset(void) {
    cpu_at_reset = clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    comm_cpu_at_reset = comm_thread_cpu();
    cpu_at_mark = -1;
    for (int k = 0; k < PX_TRAFFIC_KINDS; k++) {
        __atomic_store_n(&sent[k], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&received[k], 0, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&steps, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&busy_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&waited_ns, 0, __ATOMIC_RELAXED);
}

void px_comm_get_stats(px_comm_stats *s) {
    memset(s, 0, sizeof *s);
    for (int k = 0; k < PX_TRAFFIC_KINDS; k++) {
        s->sent[k] = __atomic_load_n(&sent[k], __ATOMIC_RELAXED);
        s->received[k] = __atomic_load_n(&received[k], __ATOMIC_RELAXED);
    }
    s->steps = __atomic_load_n(&steps, __ATOMIC_RELAXED);
    s->partitions_chosen = partitions_chosen;
    s->comm_seconds = 1e-9 * (double)__atomic_load_n(&busy_ns, __ATOMIC_RELAXED);
    s->waited_seconds = 1e-9 * (double)__atomic_load_n(&waited_ns, __ATOMIC_RELAXED);
    int marked = cpu_at_mark >= 0;
    double cpu = marked ? cpu_at_mark : clock_seconds(CLOCK_PROCESS_CPUTIME_ID),
           comm = marked ? comm_cpu_at_mark : comm_thread_cpu();
    s->cpu_seconds = cpu - cpu_at_reset;
    s->comm_thread_cpu_seconds = comm > 0 ? comm - comm_cpu_at_reset : 0;
}

/* Row-cache bytes of the pulls of the current step and the most of any
 * step (the memory prediction --stats writes: px_comm_memory). */
static int64_t cache_step = -2, cache_now, cache_most;

void comm_note_row_cache(int64_t bytes) {
    int64_t step = comm_step();
    if (step != cache_step) {
        cache_step = step;
        cache_now = 0;
    }
    cache_now += bytes;
    if (cache_now > cache_most) cache_most = cache_now;
}

int64_t comm_row_cache_most(void) {
    return cache_most;
}
