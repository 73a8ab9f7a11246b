/* Mask choices (runtime/sparse/mask_select.c, pattern.c) against naive
 * references: the top-k against a sort by (key descending, index
 * ascending), with many ties and eligibility; n:m groups; block items. */
#include "sparse/mask_select.h"
#include "sparse/pattern.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct ranked {
    uint32_t key;
    int64_t i;
} ranked;

static int by_key_then_index(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

Test(sparse_masks, top_k_is_the_sorted_prefix_with_ties_to_the_lower_index) {
    const int64_t ns[] = {1, 7, 300, 5000};
    const uint32_t spreads[] = {1, 3, 1000, 0xFFFFFFFFu};
    for (size_t a = 0; a < 4; a++)
        for (size_t b = 0; b < 4; b++)
            for (int with_eligible = 0; with_eligible < 2; with_eligible++) {
                int64_t n = ns[a];
                uint32_t *key = malloc(sizeof *key * (size_t)n);
                uint8_t *el = malloc((size_t)n), *got = malloc((size_t)n);
                ranked *r = malloc(sizeof *r * (size_t)n);
                int64_t m = 0;
                for (int64_t i = 0; i < n; i++) {
                    key[i] =
                        spreads[b] == 0xFFFFFFFFu ? (uint32_t)rng ^ rnd(1000) : rnd(spreads[b]);
                    el[i] = with_eligible ? rnd(3) != 0 : 1;
                    if (el[i]) r[m++] = (ranked){key[i], i};
                }
                qsort(r, (size_t)m, sizeof *r, by_key_then_index);
                const int64_t ks[] = {0, 1, m / 2, m - 1, m, m + 3};
                for (size_t c = 0; c < 6; c++) {
                    int64_t k = ks[c] < 0 ? 0 : ks[c];
                    px_mask_select_top(key, with_eligible ? el : NULL, n, k, got);
                    uint8_t *want = calloc((size_t)n, 1);
                    for (int64_t j = 0; j < k && j < m; j++) want[r[j].i] = 1;
                    cr_assert(memcmp(got, want, (size_t)n) == 0, "n %lld spread %u k %lld",
                              (long long)n, spreads[b], (long long)k);
                    free(want);
                }
                free(key);
                free(el);
                free(got);
                free(r);
            }
}

Test(sparse_masks, magnitude_keys_order_like_the_magnitudes) {
    const float v[] = {0.0f, -0.0f, 1e-30f, -2.5f, 2.5f, 3.0f, -1e30f, 7.0f};
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            float a = v[i] < 0 ? -v[i] : v[i], b = v[j] < 0 ? -v[j] : v[j];
            cr_assert_eq(px_mask_key_abs(v[i]) < px_mask_key_abs(v[j]), a < b);
        }
    cr_assert_eq(px_mask_key_abs(0.0f / 0.0f), 0u);
}

Test(sparse_masks, n_m_keeps_the_n_largest_of_each_group) {
    /* 2:4 on a [3, 8] weight stored [in, out] */
    px_pattern pt = {.kind = PX_PATTERN_NM, .out = 3, .in = 8, .w_in_major = 1, .a = 2, .b = 4};
    uint32_t key[24];
    uint8_t chosen[24];
    for (int k = 0; k < 24; k++) key[k] = rnd(4); /* ties on purpose */
    px_pattern_select_nm(&pt, key, chosen);
    for (int o = 0; o < 3; o++)
        for (int g = 0; g < 8; g += 4) {
            ranked r[4];
            for (int t = 0; t < 4; t++) r[t] = (ranked){key[(g + t) * 3 + o], g + t};
            qsort(r, 4, sizeof *r, by_key_then_index);
            for (int t = 0; t < 4; t++)
                cr_assert_eq(chosen[r[t].i * 3 + o], t < 2, "output %d input %lld", o,
                             (long long)r[t].i);
        }
}

Test(sparse_masks, blocks_map_to_their_entries_and_back) {
    /* 2x3 blocks of a [4, 6] weight stored [out, in]: 2 x 2 blocks */
    px_pattern pt = {.kind = PX_PATTERN_BLOCK, .out = 4, .in = 6, .w_in_major = 0, .a = 2, .b = 3};
    cr_assert_eq(px_pattern_items(&pt), 4);
    cr_assert_eq(px_pattern_live_items(&pt, 12), 2);
    float w[24];
    for (int k = 0; k < 24; k++) w[k] = (float)(k % 7) - 3.0f;
    uint32_t key[4];
    px_pattern_keys_abs(&pt, w, key);
    for (int ob = 0; ob < 2; ob++)
        for (int ib = 0; ib < 2; ib++) {
            double sum = 0;
            for (int o = ob * 2; o < ob * 2 + 2; o++)
                for (int i = ib * 3; i < ib * 3 + 3; i++)
                    sum += w[o * 6 + i] < 0 ? -w[o * 6 + i] : w[o * 6 + i];
            cr_assert_eq(key[ob * 2 + ib], px_mask_key_abs((float)sum));
        }
    uint8_t items[4] = {0, 1, 1, 0}, entries[24], back[4];
    px_pattern_items_to_entries(&pt, items, entries);
    for (int o = 0; o < 4; o++)
        for (int i = 0; i < 6; i++) cr_assert_eq(entries[o * 6 + i], items[(o / 2) * 2 + i / 3]);
    px_pattern_entries_to_items(&pt, entries, back);
    cr_assert(memcmp(items, back, 4) == 0);
}

/* Values computed apart (Python integers): the high 32 bits of
 * splitmix64(splitmix64(splitmix64(seed ^ hash) + step) + item). */
Test(sparse_masks, random_keys_are_splitmix64_draws) {
    cr_assert_eq(px_mask_name_hash("a"), 0xaf63dc4c8601ec8cull); /* FNV-1a 64 */
    cr_assert_eq(px_mask_random_key(1, 2, 3, 4), 0x1a40d6e7u);
    cr_assert_eq(px_mask_random_key(7, px_mask_name_hash("a"), 0, 123456), 0x1d3bd1cfu);
}
