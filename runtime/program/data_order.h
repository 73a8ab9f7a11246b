/* Which samples a training step reads (design.md §3).
 *
 * With N ranks and per-rank batch b, the global batch is B = N*b and an epoch
 * is E = floor(len/B) steps (a partial last batch is dropped). Step s (0-based)
 * reads the B samples at positions (s mod E)*B ... +B-1 of epoch e = s / E;
 * rank r takes positions [r*b, (r+1)*b) of them. Without shuffling position p
 * is sample p. With --shuffle SEED position p is sample perm_e[p], where
 * perm_e is a permutation of all len samples that depends only on (SEED, e):
 *
 *     state = splitmix64_mix(SEED ^ splitmix64_mix(e + 1))   (see data_order.c)
 *     for i = len-1 down to 1: j = uniform(i + 1); swap(perm[i], perm[j])
 *
 * where uniform(n) draws splitmix64 numbers x and returns x mod n, redrawing
 * x < 2^64 mod n (no modulo bias). Every rank computes the same permutation. */
#ifndef PX_DATA_ORDER_H
#define PX_DATA_ORDER_H

#include <stdint.h>

typedef struct px_order {
    int64_t samples;         /* len */
    int64_t global_batch;    /* B */
    int64_t steps_per_epoch; /* E */
    int shuffle;
    uint64_t seed;
    int64_t perm_epoch; /* epoch whose permutation perm holds (-1: none) */
    int64_t *perm;
} px_order;

/* 0, or -1 when samples < global_batch or the permutation cannot be allocated. */
int px_order_init(px_order *o, int64_t samples, int64_t global_batch, int shuffle, uint64_t seed);
/* Sample index read at position k (0 <= k < B) of step s's global batch. */
int64_t px_order_sample(px_order *o, int64_t step, int64_t k);
/* Whether positions [k, k+n) of step s are n consecutive samples (no shuffle). */
int px_order_contiguous(const px_order *o);
int64_t px_order_epoch(const px_order *o, int64_t step);
void px_order_free(px_order *o);

/* splitmix64's finaliser, and a uniform draw in [0, n) from the generator
 * whose state is *state (redrawing the 2^64 mod n lowest values). */
uint64_t px_splitmix64_mix(uint64_t z);
uint64_t px_uniform_below(uint64_t *state, uint64_t n);

/* The permutation of epoch e, exposed for tests and tools. */
void px_order_permutation(uint64_t seed, int64_t epoch, int64_t n, int64_t *perm);

#endif
