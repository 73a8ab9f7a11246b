#include "data_order.h"

#include <stdlib.h>

/* splitmix64 (Steele, Lea, Flood 2014): the finaliser and the generator. */
uint64_t px_splitmix64_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t splitmix64_next(uint64_t *state) {
    *state += 0x9e3779b97f4a7c15ULL;
    return px_splitmix64_mix(*state);
}

/* Uniform in [0, n) without modulo bias: redraw the 2^64 mod n lowest values. */
uint64_t px_uniform_below(uint64_t *state, uint64_t n) {
    uint64_t threshold = (0 - n) % n;
    for (;;) {
        uint64_t x = splitmix64_next(state);
        if (x >= threshold) return x % n;
    }
}

void px_order_permutation(uint64_t seed, int64_t epoch, int64_t n, int64_t *perm) {
    uint64_t state = px_splitmix64_mix(seed ^ px_splitmix64_mix((uint64_t)epoch + 1));
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)px_uniform_below(&state, (uint64_t)i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

int px_order_init(px_order *o, int64_t samples, int64_t global_batch, int shuffle, uint64_t seed) {
    o->samples = samples;
    o->global_batch = global_batch;
    o->steps_per_epoch = global_batch > 0 ? samples / global_batch : 0;
    o->shuffle = shuffle;
    o->seed = seed;
    o->perm_epoch = -1;
    o->perm = NULL;
    if (o->steps_per_epoch < 1) return -1;
    if (shuffle) {
        o->perm = malloc(sizeof *o->perm * (size_t)samples);
        if (!o->perm) return -1;
    }
    return 0;
}

int64_t px_order_epoch(const px_order *o, int64_t step) {
    return step / o->steps_per_epoch;
}

int64_t px_order_sample(px_order *o, int64_t step, int64_t k) {
    int64_t position = (step % o->steps_per_epoch) * o->global_batch + k;
    if (!o->shuffle) return position;
    int64_t e = px_order_epoch(o, step);
    if (e != o->perm_epoch) {
        px_order_permutation(o->seed, e, o->samples, o->perm);
        o->perm_epoch = e;
    }
    return o->perm[position];
}

int px_order_contiguous(const px_order *o) {
    return !o->shuffle;
}

void px_order_free(px_order *o) {
    free(o->perm);
    o->perm = NULL;
}
