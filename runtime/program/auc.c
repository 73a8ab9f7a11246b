#include "auc.h"

#include "px_kernel.h"
#include "px_train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Samples of one score on one rank (several runs when a count would pass
 * 2^32 - 1). */
typedef struct auc_run {
    uint32_t key, pos, neg;
} auc_run;

/* Order-preserving unsigned key of a float (NaN excluded). */
static uint32_t float_key(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if (f == 0) u = 0; /* -0 and +0 are one score */
    return u & 0x80000000u ? ~u : u | 0x80000000u;
}

static void *alloc_or_fail(size_t bytes) {
    void *p = malloc(bytes + 1);
    if (!p) px_rt_fail("validation AUC: out of memory for %zu bytes", bytes);
    return p;
}

/* This rank's samples sorted by key (an LSD radix sort), equal keys merged.
 * Returns the run count. */
static int64_t sorted_runs(const float *scores, const float *labels, int64_t n, auc_run **out) {
    uint64_t *a = alloc_or_fail(sizeof *a * (size_t)n), *b = alloc_or_fail(sizeof *b * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        a[i] = (uint64_t)float_key(scores[i]) << 32 | (uint64_t)(labels[i] >= 0.5f);
    for (int shift = 32; shift < 64; shift += 8) {
        int64_t count[257] = {0};
        for (int64_t i = 0; i < n; i++) count[((a[i] >> shift) & 255) + 1]++;
        for (int d = 0; d < 256; d++) count[d + 1] += count[d];
        for (int64_t i = 0; i < n; i++) b[count[(a[i] >> shift) & 255]++] = a[i];
        uint64_t *t = a;
        a = b;
        b = t;
    }
    free(b);
    auc_run *runs = alloc_or_fail(sizeof *runs * (size_t)n);
    int64_t nr = 0;
    for (int64_t i = 0; i < n;) {
        auc_run r = {(uint32_t)(a[i] >> 32), 0, 0};
        for (; i < n && a[i] >> 32 == r.key && r.pos < UINT32_MAX && r.neg < UINT32_MAX; i++)
            *(a[i] & 1 ? &r.pos : &r.neg) += 1;
        runs[nr++] = r;
    }
    free(a);
    *out = runs;
    return nr;
}

/* split[0..ranks]: rank r owns the keys in [split[r], split[r+1]); split[r]
 * is the key of the sample at global sorted position floor(r * total /
 * ranks), found digit by digit (11, 11, 10 bits) from summed histograms of
 * the prefixes that hold a splitter. total > 0. Collective. */
static void choose_splitters(const auc_run *runs, int64_t nr, int ranks, uint64_t total,
                             uint64_t *split) {
    static const int widths[3] = {11, 11, 10};
    int64_t k = ranks - 1; /* splitters 1 .. ranks-1 */
    uint64_t *prefix = calloc((size_t)k + 1, sizeof *prefix),
             *offset = calloc((size_t)k + 1, sizeof *offset),
             *uniq = calloc((size_t)k + 1, sizeof *uniq);
    int64_t *which = calloc((size_t)k + 1, sizeof *which);
    if (!prefix || !offset || !uniq || !which) px_rt_fail("validation AUC: out of memory");
    for (int64_t s = 0; s < k; s++)
        offset[s] = (uint64_t)((unsigned __int128)total * (uint64_t)(s + 1) / (uint64_t)ranks);
    int shift = 32;
    for (int level = 0; level < 3 && k > 0; level++) {
        int w = widths[level];
        shift -= w;
        /* The distinct prefixes (ascending: the positions ascend). */
        int64_t m = 0;
        for (int64_t s = 0; s < k; s++) {
            if (!m || uniq[m - 1] != prefix[s]) uniq[m++] = prefix[s];
            which[s] = m - 1;
        }
        uint64_t *h = calloc((size_t)m << w, sizeof *h);
        if (!h) px_rt_fail("validation AUC: out of memory for %lld histograms", (long long)m);
        /* The runs ascend by key, so their prefixes ascend too. */
        int64_t j = 0;
        for (int64_t i = 0; i < nr; i++) {
            uint64_t p = (uint64_t)runs[i].key >> (shift + w);
            while (j < m && uniq[j] < p) j++;
            if (j == m) break;
            if (uniq[j] == p)
                h[(uint64_t)j << w | ((runs[i].key >> shift) & ((1u << w) - 1))] +=
                    (uint64_t)runs[i].pos + runs[i].neg;
        }
        px_comm_sum_u64(h, m << w, "the score histograms of the validation AUC");
        for (int64_t s = 0; s < k; s++) {
            const uint64_t *hs = h + ((uint64_t)which[s] << w);
            uint64_t d = 0;
            while (offset[s] >= hs[d]) offset[s] -= hs[d++]; /* offset < the prefix's count */
            prefix[s] = prefix[s] << w | d;
        }
        free(h);
    }
    split[0] = 0;
    for (int64_t s = 0; s < k; s++) split[s + 1] = prefix[s];
    split[ranks] = (uint64_t)1 << 32;
    free(prefix);
    free(offset);
    free(uniq);
    free(which);
}

static int by_key(const void *a, const void *b) {
    uint32_t x = ((const auc_run *)a)->key, y = ((const auc_run *)b)->key;
    return (x > y) - (x < y);
}

double px_auc_over_ranks(const float *scores, const float *labels, int64_t n) {
    int ranks = px_comm_size(), me = px_comm_rank();
    auc_run *runs;
    int64_t nr = sorted_runs(scores, labels, n, &runs);
    uint64_t total = (uint64_t)n;
    px_comm_sum_u64(&total, 1, "the sample count of the validation AUC");
    if (!total) {
        free(runs);
        return NAN;
    }
    uint64_t *split = alloc_or_fail(sizeof *split * ((size_t)ranks + 1));
    choose_splitters(runs, nr, ranks, total, split);
    /* Each range's runs to its owner. */
    int64_t *lens = alloc_or_fail(sizeof *lens * 2 * (size_t)ranks), *got = lens + ranks;
    for (int64_t r = 0, i = 0; r < ranks; r++) {
        int64_t first = i;
        while (i < nr && runs[i].key < split[r + 1]) i++;
        lens[r] = (i - first) * (int64_t)sizeof(auc_run);
    }
    char *mine;
    px_comm_exchange_bytes(runs, lens, &mine, got, "the scores of the validation AUC");
    free(runs);
    int64_t m = 0;
    for (int r = 0; r < ranks; r++) m += got[r] / (int64_t)sizeof(auc_run);
    auc_run *in = (auc_run *)(void *)mine;
    qsort(in, (size_t)m, sizeof *in, by_key);
    /* 2 x the Mann-Whitney count within this range. */
    unsigned __int128 twice = 0;
    uint64_t neg_below = 0, pos_all = 0;
    for (int64_t i = 0; i < m;) {
        uint64_t pos = 0, neg = 0;
        uint32_t key = in[i].key;
        for (; i < m && in[i].key == key; i++) pos += in[i].pos, neg += in[i].neg;
        twice += (unsigned __int128)pos * (2 * neg_below + neg);
        neg_below += neg;
        pos_all += pos;
    }
    free(mine);
    free(lens);
    free(split);
    /* Every range's counts, each in its own slots, to every rank. */
    uint64_t *c = calloc(4 * (size_t)ranks, sizeof *c);
    if (!c) px_rt_fail("validation AUC: out of memory");
    c[4 * me] = pos_all;
    c[4 * me + 1] = neg_below;
    c[4 * me + 2] = (uint64_t)twice;
    c[4 * me + 3] = (uint64_t)(twice >> 64);
    px_comm_sum_u64(c, 4 * (int64_t)ranks, "the counts of the validation AUC");
    unsigned __int128 sum = 0;
    uint64_t pos = 0, neg = 0;
    for (int r = 0; r < ranks; r++) {
        sum += ((unsigned __int128)c[4 * r + 3] << 64 | c[4 * r + 2]) +
               (unsigned __int128)c[4 * r] * (2 * neg);
        pos += c[4 * r];
        neg += c[4 * r + 1];
    }
    free(c);
    if (!pos || !neg) return NAN;
    return (double)((long double)sum / (2.0L * (long double)pos * (long double)neg));
}
