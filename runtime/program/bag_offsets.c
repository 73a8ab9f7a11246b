#include "bag_offsets.h"

#include <stdio.h>
#include <string.h>

static int64_t value_at(const void *v, int dtype, int64_t i) {
    if (dtype == 6) {
        int32_t x;
        memcpy(&x, (const char *)v + 4 * i, 4);
        return x;
    }
    int64_t x;
    memcpy(&x, (const char *)v + 8 * i, 8);
    return x;
}

int64_t px_bag_offsets_bad(const void *v, int dtype, int64_t count, int64_t n_indices,
                           const char **why) {
    int64_t prev = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t x = value_at(v, dtype, i);
        const char *bad = i == 0 && x != 0 ? "the first offset must be 0"
                          : x < 0          ? "an offset may not be negative"
                          : x < prev       ? "offsets may not decrease"
                          : x > n_indices  ? "an offset may not pass the count of indices"
                                           : NULL;
        if (bad) {
            if (why) *why = bad;
            return i;
        }
        prev = x;
    }
    return -1;
}

void px_index_check_target(const px_index_check *k, char *buf, size_t cap) {
    if (k->kind == PX_CHECK_BAG_OFFSETS)
        snprintf(buf, cap, "the offsets of EmbeddingBag '%s' of '%s'", k->node, k->table);
    else
        snprintf(buf, cap, "Gather '%s' of '%s'", k->node, k->table);
}
