/* LSD radix sort of row indices (row_sort.h). */
#include "row_sort.h"

#include <stdlib.h>
#include <string.h>

/* Digits of at most 11 bits: the 2,048 counters stay in L1. */
enum { MAX_DIGIT_BITS = 11 };

static int bits_for(int64_t limit) {
    int b = 0;
    while (b < 63 && ((int64_t)1 << b) < limit) b++;
    return b;
}

int px_row_sort(const int64_t *rows, int64_t n, int64_t limit, int64_t *order) {
    for (int64_t i = 0; i < n; i++) order[i] = i;
    int bits = bits_for(limit);
    if (n < 2 || bits == 0) return 0;
    int passes = (bits + MAX_DIGIT_BITS - 1) / MAX_DIGIT_BITS;
    int digit = (bits + passes - 1) / passes; /* even digits: fewer counters */
    size_t buckets = (size_t)1 << digit;
    int64_t *tmp = malloc(sizeof *tmp * (size_t)n);
    int64_t *count = malloc(sizeof *count * buckets);
    if (!tmp || !count) {
        free(tmp);
        free(count);
        return -1;
    }
    int64_t *src = order, *dst = tmp, mask = (int64_t)buckets - 1;
    for (int pass = 0; pass < passes; pass++) {
        int shift = pass * digit;
        memset(count, 0, sizeof *count * buckets);
        for (int64_t i = 0; i < n; i++) count[(rows[src[i]] >> shift) & mask]++;
        int64_t at = 0;
        for (size_t b = 0; b < buckets; b++) {
            int64_t c = count[b];
            count[b] = at;
            at += c;
        }
        /* a stable scatter: within a bucket the previous pass's order stays */
        for (int64_t i = 0; i < n; i++) dst[count[(rows[src[i]] >> shift) & mask]++] = src[i];
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != order) memcpy(order, src, sizeof *order * (size_t)n);
    free(tmp);
    free(count);
    return 0;
}
