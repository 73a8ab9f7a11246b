/* GatherGrad (ai.parallax, made by autodiff for Gather on axis 0): the row
 * set of the gradient of a table read through row look-ups. */
#include "px_kernel.h"
#include "row_sort.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { F32 = 1, I32 = 6, F64 = 11 };

/* Rows that index `rows[order[i]]` share are summed in ascending position,
 * each sum starting from zero (0 + x, as before: -0 rows become +0). A
 * float add rounds as the double add rounded to float would, so these
 * typed loops give the bits of the double-precision code they replace. */
#define SUM_ROWS(NAME, T)                                                                          \
    static int64_t NAME(const T *dy, int64_t width, const int64_t *row, const int64_t *order,      \
                        int64_t k, int64_t *uniq, T *vals) {                                       \
        int64_t u = -1;                                                                            \
        for (int64_t i = 0; i < k; i++) {                                                          \
            int64_t r = row[order[i]];                                                             \
            if (u < 0 || uniq[u] != r) {                                                           \
                uniq[++u] = r;                                                                     \
                memset(vals + u * width, 0, sizeof(T) * (size_t)width);                            \
            }                                                                                      \
            T *restrict acc = vals + u * width;                                                    \
            const T *restrict src = dy + order[i] * width;                                         \
            for (int64_t j = 0; j < width; j++) acc[j] += src[j];                                  \
        }                                                                                          \
        return u + 1;                                                                              \
    }
SUM_ROWS(sum_rows_f32, float)
SUM_ROWS(sum_rows_f64, double)

/* GatherGrad: the row set of the gradient of Gather(table, indices) on axis 0.
 * buf: dY [indices..., row...], indices (int32/int64), unique (int64 [K]),
 *      values [K, row...], count (int64 []); K = numel(indices).
 * p:   tensor dY, tensor indices, rows (the table's dim 0).
 * unique holds the distinct normalized indices in ascending order, values
 * the sum of their dY rows (duplicates added in ascending position);
 * entries from count on are zero. */
void px_k_gather_grad(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt dy = px_kp_tensor(&c), ix = px_kp_tensor(&c);
    int64_t rows = px_kp_i64(&c), k = ix.numel;
    int64_t width = k ? dy.numel / k : 0;
    int64_t *uniq = buf[2], *count = buf[4];
    size_t es = dy.dtype == F64 ? sizeof(double) : sizeof(float);
    int64_t *row = malloc(sizeof *row * (size_t)(2 * k + 1));
    if (!row) px_rt_fail("GatherGrad: out of memory for %lld indices", (long long)k);
    int64_t *order = row + k;
    for (int64_t i = 0; i < k; i++) {
        int64_t r =
            ix.dtype == I32 ? (int64_t)((const int32_t *)buf[1])[i] : ((const int64_t *)buf[1])[i];
        if (r < -rows || r >= rows)
            px_rt_fail("GatherGrad: index %lld out of range for a table of %lld rows", (long long)r,
                       (long long)rows);
        row[i] = r < 0 ? r + rows : r;
    }
    if (px_row_sort(row, k, rows, order) != 0)
        px_rt_fail("GatherGrad: out of memory sorting %lld indices", (long long)k);
    int64_t n = dy.dtype == F64 ? sum_rows_f64(buf[0], width, row, order, k, uniq, buf[3])
                                : sum_rows_f32(buf[0], width, row, order, k, uniq, buf[3]);
    if (n < k) {
        memset(uniq + n, 0, sizeof *uniq * (size_t)(k - n));
        memset((char *)buf[3] + (size_t)(n * width) * es, 0, es * (size_t)((k - n) * width));
    }
    *count = n;
    free(row);
}
