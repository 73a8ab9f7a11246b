/* The rank's thread pool (runtime/kernels/thread_pool.c): px_parallel_for
 * covers every index exactly once, in ranges aligned to the grain, over
 * many back-to-back loops (the threads claim pieces as they come, so a
 * piece taken twice or dropped would show here); the workers really take
 * pieces; a loop inside a range runs on the thread of that range. */
#include "kernels/thread_pool.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

enum { MAX_N = 400, LOOPS = 20000, THREADS = 3 };

typedef struct cover_job {
    int64_t n, grain;
    int epoch;
    int seen[MAX_N];
    atomic_int ranges, bad_alignment, bad_count;
} cover_job;

static void cover_range(void *ctx, int64_t lo, int64_t hi) {
    cover_job *j = ctx;
    atomic_fetch_add(&j->ranges, 1);
    if (lo % j->grain != 0 || (hi != j->n && (hi - lo) % j->grain != 0))
        atomic_fetch_add(&j->bad_alignment, 1);
    for (volatile int spin = 0; spin < 1000; spin++) /* a few us: the workers take part */
        ;
    for (int64_t i = lo; i < hi; i++) {
        if (j->seen[i] != j->epoch - 1) atomic_fetch_add(&j->bad_count, 1);
        j->seen[i] = j->epoch;
    }
}

Test(thread_pool, every_index_once_over_many_loops) {
    static cover_job j;
    cr_assert_eq(px_pool_start(THREADS), THREADS);
    for (int loop = 0; loop < LOOPS; loop++) {
        j.n = 1 + (loop * 7919) % MAX_N;
        j.grain = 1 + loop % 7;
        j.epoch = loop + 1;
        atomic_store(&j.ranges, 0);
        for (int64_t i = 0; i < MAX_N; i++)
            if (i >= j.n) j.seen[i] = loop + 1; /* not in this loop */
        px_parallel_for(j.n, j.grain, cover_range, &j);
        for (int64_t i = 0; i < j.n; i++) /* done when px_parallel_for returns */
            cr_assert_eq(j.seen[i], j.epoch, "loop %d (n %lld, grain %lld): index %lld not done",
                         loop, (long long)j.n, (long long)j.grain, (long long)i);
        cr_assert_eq(atomic_load(&j.bad_count), 0,
                     "loop %d (n %lld, grain %lld): an index was "
                     "missed or run twice",
                     loop, (long long)j.n, (long long)j.grain);
        cr_assert_eq(atomic_load(&j.bad_alignment), 0, "loop %d: a range off the grain", loop);
        int ranges = atomic_load(&j.ranges);
        cr_assert(ranges >= 1 && ranges <= 4 * THREADS, "loop %d: %d ranges", loop, ranges);
    }
    px_pool_stop();
}

typedef struct who_job {
    pthread_t caller;
    atomic_int off_caller;
} who_job;

static void busy_range(void *ctx, int64_t lo, int64_t hi) {
    who_job *j = ctx;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do /* about 200 us per index: long enough for a sleeping worker to wake */
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) < 200000LL * (hi - lo));
    if (!pthread_equal(pthread_self(), j->caller)) atomic_fetch_add(&j->off_caller, 1);
}

/* On a busy machine a worker may get no CPU during one loop: try for up to
 * 10 s before concluding that the workers never take part. */
Test(thread_pool, workers_take_pieces) {
    who_job j = {.caller = pthread_self()};
    px_pool_start(2);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        px_parallel_for(16, 1, busy_range, &j);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (atomic_load(&j.off_caller) == 0 && t.tv_sec - t0.tv_sec < 10);
    px_pool_stop();
    cr_assert_gt(atomic_load(&j.off_caller), 0, "no piece ran on a worker in 10 s");
}

typedef struct nested_job {
    atomic_int inner_off_thread;
} nested_job;

typedef struct inner_ctx {
    nested_job *j;
    pthread_t self;
} inner_ctx;

static void inner_range(void *ctx, int64_t lo, int64_t hi) {
    inner_ctx *c = ctx;
    (void)lo;
    (void)hi;
    if (!pthread_equal(pthread_self(), c->self)) atomic_fetch_add(&c->j->inner_off_thread, 1);
}

static void outer_range(void *ctx, int64_t lo, int64_t hi) {
    inner_ctx c = {ctx, pthread_self()};
    for (int64_t i = lo; i < hi; i++) px_parallel_for(64, 1, inner_range, &c);
}

Test(thread_pool, nested_loop_runs_on_its_range_thread) {
    static nested_job j;
    px_pool_start(THREADS);
    for (int k = 0; k < 200; k++) px_parallel_for(12, 1, outer_range, &j);
    px_pool_stop();
    cr_assert_eq(atomic_load(&j.inner_off_thread), 0, "an inner loop left its range's thread");
}
