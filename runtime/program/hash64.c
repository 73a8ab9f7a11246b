#include "hash64.h"

#include <string.h>

static inline uint64_t rotl(uint64_t x, int r) {
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t round_word(uint64_t h, uint64_t w) {
    h ^= w * 0x9e3779b97f4a7c15ULL;
    return rotl(h, 27) * 0xff51afd7ed558ccdULL + 0x52dce729ULL;
}

uint64_t px_hash64(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    size_t words = n / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t w;
        memcpy(&w, p + 8 * i, 8);
        h = round_word(h, w);
    }
    uint64_t tail = 0;
    if (n % 8) memcpy(&tail, p + 8 * words, n % 8);
    /* The length goes in too, so "ab" + "" and "a" + "b" differ. */
    return round_word(round_word(h, tail), (uint64_t)n);
}

uint64_t px_hash64_u64(uint64_t h, uint64_t v) {
    return round_word(h, v);
}
