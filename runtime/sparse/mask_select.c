/* Top-k choices of mask_select.h: a radix select over the 32-bit keys (four
 * histogram passes of 8 bits find the k-th largest key), then one pass that
 * takes every key above it and the lowest indices among the keys equal to
 * it. Linear in n, no sort. */
#include "mask_select.h"

#include <math.h>
#include <string.h>

uint32_t px_mask_key_abs(float x) {
    if (isnan(x)) return 0;
    float a = fabsf(x);
    uint32_t bits;
    memcpy(&bits, &a, sizeof bits);
    return bits;
}

uint64_t px_mask_name_hash(const char *name) {
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
        h ^= *c;
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t splitmix64(uint64_t x) {
    uint64_t z = x + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint32_t px_mask_random_key(uint64_t seed, uint64_t name_hash, uint64_t step, uint64_t item) {
    return (uint32_t)(splitmix64(splitmix64(splitmix64(seed ^ name_hash) + step) + item) >> 32);
}

void px_mask_select_top(const uint32_t *key, const uint8_t *eligible, int64_t n, int64_t k,
                        uint8_t *chosen) {
    if (n <= 0) return;
    uint32_t prefix = 0, mask = 0;
    int64_t need = k, eligible_count = 0;
    for (int64_t i = 0; i < n; i++) eligible_count += !eligible || eligible[i];
    if (k >= eligible_count) {
        for (int64_t i = 0; i < n; i++) chosen[i] = !eligible || eligible[i];
        return;
    }
    memset(chosen, 0, (size_t)n);
    if (k <= 0) return;
    /* the k-th largest key T, and how many items with key T to take */
    for (int shift = 24; shift >= 0; shift -= 8) {
        int64_t hist[256] = {0};
        for (int64_t i = 0; i < n; i++)
            if ((!eligible || eligible[i]) && (key[i] & mask) == prefix)
                hist[(key[i] >> shift) & 255]++;
        int64_t above = 0;
        int b = 255;
        for (; b > 0 && above + hist[b] < need; b--) above += hist[b];
        prefix |= (uint32_t)b << shift;
        mask |= (uint32_t)255 << shift;
        need -= above;
    }
    for (int64_t i = 0; i < n; i++) {
        if (eligible && !eligible[i]) continue;
        if (key[i] > prefix)
            chosen[i] = 1;
        else if (key[i] == prefix && need > 0) {
            chosen[i] = 1;
            need--;
        }
    }
}
