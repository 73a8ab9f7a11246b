#include "hash64.h"

#include <string.h>

uint64_t px_hash64(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    size_t words = n / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t w;
        memcpy(&w, p + 8 * i, 8);
        h = px_hash64_round(h, w);
    }
    uint64_t tail = 0;
    if (n % 8) memcpy(&tail, p + 8 * words, n % 8);
    /* The length goes in too, so "ab" + "" and "a" + "b" differ. */
    return px_hash64_round(px_hash64_round(h, tail), (uint64_t)n);
}
