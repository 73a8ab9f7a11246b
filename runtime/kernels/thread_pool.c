/* The rank's compute thread pool (thread_pool.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "thread_pool.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_THREADS = 256 };

/* How long a thread polls before it sleeps: about 10-50 us, enough to catch
 * the next parallel loop of a step without a futex round trip, short enough
 * that a pool between steps (or while BLAS runs) does not hold the cores. */
enum { SPIN_ROUNDS = 4000 };

/* Pieces per thread of a loop with enough blocks: the threads take pieces
 * one at a time, so a thread that starts late (woken from its sleep, or
 * descheduled on a busy machine) takes fewer instead of holding up the
 * others. */
enum { PIECES_PER_THREAD = 4 };

typedef struct job {
    px_range_fn fn;
    void *ctx;
    int64_t n, grain, blocks;
    int pieces;
} job;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    atomic_uint_fast64_t generation; /* bumped for every job handed out */
    /* The current job's next unclaimed piece (low 32 bits) and its
     * generation (high 32 bits), claimed by compare-and-swap: a thread
     * that read an older job can never claim a piece of a newer one. */
    atomic_uint_fast64_t next;
    atomic_int finished; /* pieces of the current job done, by any thread */
    atomic_int sleeping; /* workers waiting on work_cv */
    job cur;
    int threads, stopping;
    atomic_llong splits; /* loops offered to more than one thread */
    pthread_t tid[MAX_THREADS];
    pthread_t owner; /* the thread that started the pool: the only one that hands out work */
    /* The generation when the workers were started: a pool started again
     * after px_pool_stop must not take the last job of the previous one
     * (whose context is gone) for new work. */
    uint_fast64_t start_generation;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER,
          .work_cv = PTHREAD_COND_INITIALIZER,
          .done_cv = PTHREAD_COND_INITIALIZER,
          .threads = 1};

/* Set while a thread runs a range: a parallel loop inside one runs serially. */
static _Thread_local int in_range;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Piece k of j: whole blocks of `grain` indices, spread as evenly as the
 * block count allows; the ranges depend only on n, grain and the piece
 * count, never on which thread runs them or when. */
static void run_piece(const job *j, int k) {
    int64_t base = j->blocks / j->pieces, extra = j->blocks % j->pieces;
    int64_t b0 = k * base + (k < extra ? k : extra);
    int64_t b1 = b0 + base + (k < extra ? 1 : 0);
    int64_t lo = b0 * j->grain, hi = b1 * j->grain;
    if (hi > j->n) hi = j->n;
    if (lo >= hi) return;
    in_range = 1;
    j->fn(j->ctx, lo, hi);
    in_range = 0;
}

static inline uint_fast64_t claim_word(uint_fast64_t generation, uint_fast64_t piece) {
    return (generation << 32) | piece;
}

/* Claims the next piece of job j (of generation `generation`): its index,
 * or -1 when every piece is taken or a newer job replaced j. */
static int claim_piece(const job *j, uint_fast64_t generation) {
    uint_fast64_t w = atomic_load_explicit(&pool.next, memory_order_acquire);
    for (;;) {
        if ((w >> 32) != (generation & 0xffffffffu)) return -1;
        uint_fast64_t k = w & 0xffffffffu;
        if (k >= (uint_fast64_t)j->pieces) return -1;
        if (atomic_compare_exchange_weak_explicit(&pool.next, &w, w + 1, memory_order_acq_rel,
                                                  memory_order_acquire))
            return (int)k;
    }
}

/* Runs pieces of j until none is left; returns how many this thread ran. */
static int run_pieces(const job *j, uint_fast64_t generation) {
    int ran = 0;
    for (int k; (k = claim_piece(j, generation)) >= 0; ran++) run_piece(j, k);
    return ran;
}

static void *worker_main(void *arg) {
    (void)arg;
    uint_fast64_t seen = pool.start_generation; /* written before pthread_create */
    for (;;) {
        for (int s = 0; s < SPIN_ROUNDS &&
                        atomic_load_explicit(&pool.generation, memory_order_acquire) == seen;
             s++)
            cpu_relax();
        pthread_mutex_lock(&pool.mu);
        while (atomic_load(&pool.generation) == seen && !pool.stopping) {
            atomic_fetch_add(&pool.sleeping, 1);
            pthread_cond_wait(&pool.work_cv, &pool.mu);
            atomic_fetch_sub(&pool.sleeping, 1);
        }
        if (pool.stopping) {
            pthread_mutex_unlock(&pool.mu);
            return NULL;
        }
        seen = atomic_load(&pool.generation);
        job j = pool.cur; /* read under the lock: the caller cannot be writing the next one */
        pthread_mutex_unlock(&pool.mu);
        int ran = run_pieces(&j, seen);
        if (ran > 0 && atomic_fetch_add_explicit(&pool.finished, ran, memory_order_acq_rel) + ran ==
                           j.pieces) {
            pthread_mutex_lock(&pool.mu);
            pthread_cond_signal(&pool.done_cv);
            pthread_mutex_unlock(&pool.mu);
        }
    }
}

int px_pool_start(int threads) {
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if (threads <= 1 || pool.threads > 1) return pool.threads;
    pool.stopping = 0;
    pool.owner = pthread_self();
    pool.start_generation = atomic_load(&pool.generation);
    int started = 1;
    for (int k = 1; k < threads; k++) {
        if (pthread_create(&pool.tid[k], NULL, worker_main, NULL) != 0) break;
        started++;
    }
    pool.threads = started;
    return started;
}

long long px_pool_splits(void) {
    return atomic_load(&pool.splits);
}

int px_pool_threads(void) {
    return pool.threads;
}

void px_pool_stop(void) {
    if (pool.threads <= 1) return;
    pthread_mutex_lock(&pool.mu);
    pool.stopping = 1;
    pthread_cond_broadcast(&pool.work_cv);
    pthread_mutex_unlock(&pool.mu);
    for (int k = 1; k < pool.threads; k++) pthread_join(pool.tid[k], NULL);
    pool.threads = 1;
}

void px_parallel_for(int64_t n, int64_t grain, px_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    /* Another thread (the communication thread, a shard applying updates)
     * runs its loops itself: one job at a time, handed out by the owner. */
    if (pool.threads <= 1 || n < 2 * grain || in_range ||
        !pthread_equal(pthread_self(), pool.owner)) {
        fn(ctx, 0, n);
        return;
    }
    job j = {fn, ctx, n, grain, (n + grain - 1) / grain, pool.threads * PIECES_PER_THREAD};
    if (j.blocks < j.pieces) j.pieces = (int)j.blocks;
    atomic_fetch_add_explicit(&pool.splits, 1, memory_order_relaxed);
    pthread_mutex_lock(&pool.mu);
    pool.cur = j;
    atomic_store(&pool.finished, 0);
    uint_fast64_t generation = atomic_load(&pool.generation) + 1;
    atomic_store(&pool.next, claim_word(generation, 0));
    atomic_store_explicit(&pool.generation, generation, memory_order_release);
    /* a sleeping worker costs a futex wake; a spinning one sees the new
     * generation by itself */
    if (atomic_load(&pool.sleeping) > 0) pthread_cond_broadcast(&pool.work_cv);
    pthread_mutex_unlock(&pool.mu);
    /* The caller takes pieces too, and every piece no worker claimed: it
     * waits only for pieces already running on another thread. */
    int ran = run_pieces(&j, generation);
    if (atomic_fetch_add_explicit(&pool.finished, ran, memory_order_acq_rel) + ran == j.pieces)
        return;
    for (int s = 0;
         s < SPIN_ROUNDS && atomic_load_explicit(&pool.finished, memory_order_acquire) < j.pieces;
         s++)
        cpu_relax();
    if (atomic_load(&pool.finished) < j.pieces) {
        pthread_mutex_lock(&pool.mu);
        while (atomic_load(&pool.finished) < j.pieces) pthread_cond_wait(&pool.done_cv, &pool.mu);
        pthread_mutex_unlock(&pool.mu);
    }
}

int px_pool_cpus(void) {
    long cpus = 0;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
    if (cpus < 1) cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1 : (int)cpus;
}

int px_pool_sharing_ranks(int ranks_here) {
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    long ranks = local ? strtol(local, NULL, 10) : 1;
    if (ranks < ranks_here) ranks = ranks_here;
    if (ranks < 1) ranks = 1;
    return ranks > INT32_MAX ? INT32_MAX : (int)ranks;
}

int px_pool_default_threads(int ranks_here) {
    long t = px_pool_cpus() / px_pool_sharing_ranks(ranks_here);
    if (t < 1) t = 1;
    if (t > MAX_THREADS) t = MAX_THREADS;
    return (int)t;
}
