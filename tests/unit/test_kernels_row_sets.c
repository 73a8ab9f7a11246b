/* Row-set kernels (runtime/kernels/gather_grad.c, row_sort.c) against naive
 * references: px_row_sort against qsort on (row, position), GatherGrad
 * against a per-row double sum in position order. */
#include "px_kernel.h"
#include "kernels/row_sort.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { F32 = 1, I32 = 6, I64 = 7, F64 = 11 };

typedef struct pair {
    int64_t row, pos;
} pair;

static int cmp_pair(const void *x, const void *y) {
    const pair *a = x, *b = y;
    if (a->row != b->row) return a->row < b->row ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

static uint64_t rng_state = 88172645463325252ull;
static int64_t rnd(int64_t n) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (int64_t)(rng_state % (uint64_t)n);
}

/* One, two and three radix passes, tiny tables, many duplicates. */
Test(row_sets, row_sort_matches_qsort_on_row_then_position) {
    const int64_t limits[] = {1, 2, 7, 2000, 100000, 3000000, (int64_t)1 << 40};
    const int64_t sizes[] = {0, 1, 5, 1280, 5000};
    for (size_t li = 0; li < sizeof limits / sizeof *limits; li++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
            int64_t n = sizes[si], lim = limits[li];
            int64_t *rows = malloc(sizeof *rows * (size_t)(n + 1));
            int64_t *order = malloc(sizeof *order * (size_t)(n + 1));
            pair *ref = malloc(sizeof *ref * (size_t)(n + 1));
            for (int64_t i = 0; i < n; i++) {
                /* half the draws from a few hot rows: duplicates to keep in order */
                rows[i] = rnd(2) ? rnd(lim) : rnd(lim < 4 ? lim : 4) * (lim / 4);
                ref[i] = (pair){rows[i], i};
            }
            qsort(ref, (size_t)n, sizeof *ref, cmp_pair);
            cr_assert_eq(px_row_sort(rows, n, lim, order), 0);
            for (int64_t i = 0; i < n; i++)
                cr_assert_eq(order[i], ref[i].pos, "limit %lld n %lld at %lld", (long long)lim,
                             (long long)n, (long long)i);
            free(rows);
            free(order);
            free(ref);
        }
}

static void p_tensor(int64_t *p, int *n, int dtype, int rank, const int64_t *dims) {
    p[(*n)++] = dtype;
    p[(*n)++] = rank;
    for (int i = 0; i < rank; i++) p[(*n)++] = dims[i];
}

static double get(const char *b, int dtype, int64_t i) {
    return dtype == F64 ? ((const double *)b)[i] : (double)((const float *)b)[i];
}

/* GatherGrad of a [k] index tensor on a [k, width] gradient: the distinct
 * rows ascending, each the sum of its dY rows in position order (a double
 * sum rounded to the dtype after every add: the float add), zeros after
 * count. */
static void check_gather_grad(int dtype, int idx_dtype, int64_t k, int64_t width, int64_t rows) {
    size_t es = dtype == F64 ? 8 : 4;
    char *dy = malloc(es * (size_t)(k * width) + 1), *vals = malloc(es * (size_t)(k * width) + 1);
    void *idx = malloc(8 * (size_t)k + 1);
    int64_t *uniq = malloc(8 * (size_t)k + 1), count = -1;
    pair *ref = malloc(sizeof *ref * (size_t)k + 1);
    for (int64_t i = 0; i < k * width; i++) {
        double v = (double)(rnd(2001) - 1000) / 37.0;
        if (dtype == F64)
            ((double *)dy)[i] = v;
        else
            ((float *)dy)[i] = (float)v;
    }
    for (int64_t i = 0; i < k; i++) {
        int64_t r = rnd(3) ? rnd(rows) : rnd(3); /* rows 0-2 are hot: duplicates */
        if (rnd(4) == 0) r -= rows;              /* negative indices count from the end */
        ref[i] = (pair){r < 0 ? r + rows : r, i};
        if (idx_dtype == I32)
            ((int32_t *)idx)[i] = (int32_t)r;
        else
            ((int64_t *)idx)[i] = r;
    }
    memset(vals, 0x7f, es * (size_t)(k * width));
    memset(uniq, 0x7f, 8 * (size_t)k);
    int64_t p[16], dyd[2] = {k, width}, ixd[1] = {k};
    int n = 0;
    p_tensor(p, &n, dtype, 2, dyd);
    p_tensor(p, &n, idx_dtype, 1, ixd);
    p[n++] = rows;
    void *buf[5] = {dy, idx, uniq, vals, &count};
    px_kernel_fn fn = px_kernel_find("px_k_gather_grad");
    cr_assert_not_null(fn);
    fn(buf, p);
    qsort(ref, (size_t)k, sizeof *ref, cmp_pair);
    int64_t u = 0;
    for (int64_t i = 0; i < k; u++) {
        cr_assert_lt(u, count);
        cr_assert_eq(uniq[u], ref[i].row);
        for (int64_t j = 0; j < width; j++) {
            double acc = 0;
            for (int64_t q = i; q < k && ref[q].row == ref[i].row; q++) {
                acc += get(dy, dtype, ref[q].pos * width + j);
                if (dtype == F32) acc = (float)acc;
            }
            cr_assert_eq(get(vals, dtype, u * width + j), acc, "row %lld col %lld",
                         (long long)uniq[u], (long long)j);
        }
        int64_t r = ref[i].row;
        while (i < k && ref[i].row == r) i++;
    }
    cr_assert_eq(count, u);
    for (int64_t i = u; i < k; i++) {
        cr_assert_eq(uniq[i], 0);
        for (int64_t j = 0; j < width; j++) cr_assert_eq(get(vals, dtype, i * width + j), 0.0);
    }
    free(dy);
    free(vals);
    free(idx);
    free(uniq);
    free(ref);
}

Test(row_sets, gather_grad_sums_duplicates_in_position_order_vs_naive) {
    check_gather_grad(F32, I64, 1280, 64, 2000);
    check_gather_grad(F32, I32, 300, 3, 100000);
    check_gather_grad(F64, I64, 257, 5, 7);
    check_gather_grad(F32, I64, 1, 4, 1);
    check_gather_grad(F32, I64, 0, 0, 10);
}

Test(row_sets, gather_grad_index_out_of_range_fails, .exit_code = 1) {
    float dy[2] = {1, 2}, vals[2];
    int64_t idx[2] = {0, 5}, uniq[2], count, p[16];
    int64_t dyd[2] = {2, 1}, ixd[1] = {2};
    int n = 0;
    p_tensor(p, &n, F32, 2, dyd);
    p_tensor(p, &n, I64, 1, ixd);
    p[n++] = 5;
    void *buf[5] = {dy, idx, uniq, vals, &count};
    px_kernel_find("px_k_gather_grad")(buf, p);
}
