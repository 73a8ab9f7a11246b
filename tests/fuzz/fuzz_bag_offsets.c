/* libFuzzer harness: nn.EmbeddingBag offsets read from data. The loaders'
 * check (runtime/program/bag_offsets.c) must accept exactly the offsets
 * PyTorch's rule accepts (stated here another way: sorted, starting at 0,
 * at most the count of indices), and offsets it accepts must give, through
 * the SegmentReduce kernel (runtime/kernels/embedding_bag.c) in both forms
 * the import makes (starts = Concat(offsets, [count]) or, for
 * include_last_offset, the offsets themselves), the bags summed here, with
 * no read outside the buffers (ASan) and no refusal by the kernel's own
 * check (px_rt_fail would end the process: a crash to libFuzzer).
 *
 * Input: byte 0 bit 0: int32 offsets (else int64), bit 1: include_last_offset
 * form; byte 1: the count of indices (0..255); the rest: the offsets, at
 * most 64. */
#include "bag_offsets.h"
#include "px_kernel.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void px_k_segment_reduce(void *const *buf, const int64_t *p);

enum { MAX_OFFSETS = 64, ROW = 2 };

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* PyTorch's rule, stated as: the offsets are already sorted, the first is 0
 * and the largest is at most n. */
static int valid(const int64_t *off, int64_t count, int64_t n) {
    if (count == 0) return 1;
    int64_t sorted[MAX_OFFSETS];
    memcpy(sorted, off, sizeof(int64_t) * (size_t)count);
    qsort(sorted, (size_t)count, sizeof *sorted, cmp_i64);
    return memcmp(sorted, off, sizeof(int64_t) * (size_t)count) == 0 && off[0] == 0 &&
           off[count - 1] <= n;
}

/* The bags through the kernel: starts/ends in the given form. */
static void run_kernel(const int64_t *off, int64_t count, int64_t n, int int32, int last_form) {
    int64_t bags = last_form ? count - 1 : count;
    if (bags < 1) return;
    size_t w = int32 ? 4 : 8;
    /* exact sizes: ASan sees any read past them */
    float *x = malloc(sizeof(float) * (size_t)(n * ROW) + 1);
    float *y = malloc(sizeof(float) * (size_t)(bags * ROW));
    char *starts = malloc(w * (size_t)(last_form ? bags : count + 1));
    char *ends = malloc(w * (size_t)bags);
    if (!x || !y || !starts || !ends) abort();
    for (int64_t i = 0; i < n * ROW; i++) x[i] = (float)(i % 7 + 1);
    /* starts: the offsets (then count, in the Concat form); ends: starts[1:] */
    int64_t s_count = last_form ? bags : count + 1;
    for (int64_t i = 0; i < s_count; i++) {
        int64_t v = i < count ? off[i] : n;
        if (int32) {
            int32_t v32 = (int32_t)v;
            memcpy(starts + 4 * i, &v32, 4);
        } else {
            memcpy(starts + 8 * i, &v, 8);
        }
    }
    for (int64_t m = 0; m < bags; m++) {
        int64_t v = m + 1 < count ? off[m + 1] : n;
        if (int32) {
            int32_t v32 = (int32_t)v;
            memcpy(ends + 4 * m, &v32, 4);
        } else {
            memcpy(ends + 8 * m, &v, 8);
        }
    }
    int64_t p[] = {1, 0, int32 ? 6 : 7, n, bags, ROW, 1};
    px_k_segment_reduce((void *[]){x, starts, ends, y}, p);
    for (int64_t m = 0; m < bags; m++) {
        int64_t s = off[m], e = m + 1 < count ? off[m + 1] : n;
        for (int k = 0; k < ROW; k++) {
            float want = 0;
            for (int64_t j = s; j < e; j++) want += x[j * ROW + k];
            if (y[m * ROW + k] != want) abort();
        }
    }
    free(x);
    free(y);
    free(starts);
    free(ends);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    int int32 = data[0] & 1, last_form = (data[0] >> 1) & 1;
    int64_t n = data[1];
    size_t w = int32 ? 4 : 8;
    int64_t count = (int64_t)((size - 2) / w);
    if (count > MAX_OFFSETS) count = MAX_OFFSETS;
    int64_t off[MAX_OFFSETS];
    for (int64_t i = 0; i < count; i++) {
        if (int32) {
            int32_t v;
            memcpy(&v, data + 2 + 4 * i, 4);
            off[i] = v;
        } else {
            memcpy(&off[i], data + 2 + 8 * i, 8);
        }
    }
    const char *why = NULL;
    int64_t bad = px_bag_offsets_bad(data + 2, int32 ? 6 : 7, count, n, &why);
    if ((bad < 0) != valid(off, count, n)) abort();
    if (bad >= 0) {
        /* the first bad one: everything before it keeps the rule */
        if (bad >= count || !why || !valid(off, bad, n) || valid(off, bad + 1, n)) abort();
        return 0;
    }
    run_kernel(off, count, n, int32, last_form);
    return 0;
}
