/* Row-set helpers of the parameter server: distinct indices, sums of row
 * sets in a fixed order, grouping rows by the shard that owns them. */
#include "comm_internal.h"

#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t ps_unique_indices(const void *idx, int dtype, int64_t n, int64_t rows, const char *op,
                          const char *var, int64_t *out) {
    for (int64_t i = 0; i < n; i++) {
        int64_t v = dtype == 6 ? ((const int32_t *)idx)[i] : ((const int64_t *)idx)[i];
        if (v < 0 || v >= rows)
            px_rt_fail("%s of variable '%s': index %lld at position %lld is out of range [0, %lld)",
                       op, var, (long long)v, (long long)i, (long long)rows);
        out[i] = v;
    }
    qsort(out, (size_t)n, sizeof *out, cmp_i64);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (k == 0 || out[k - 1] != out[i]) out[k++] = out[i];
    return k;
}

typedef struct entry {
    int64_t idx;
    int64_t src; /* contribution number, then position inside it */
    int64_t pos;
} entry;

static int cmp_entry(const void *a, const void *b) {
    const entry *x = a, *y = b;
    if (x->idx != y->idx) return (x->idx > y->idx) - (x->idx < y->idx);
    if (x->src != y->src) return (x->src > y->src) - (x->src < y->src);
    return (x->pos > y->pos) - (x->pos < y->pos);
}

int64_t ps_rowset_sum(const rowset *in, int n_in, int64_t dim, int64_t *out_idx, float *out_rows) {
    int64_t total = 0;
    for (int i = 0; i < n_in; i++) total += in[i].n;
    if (total == 0) return 0;
    entry *e = malloc(sizeof *e * (size_t)total);
    if (!e) px_rt_fail("out of memory summing %lld pushed rows", (long long)total);
    int64_t m = 0;
    for (int i = 0; i < n_in; i++)
        for (int64_t j = 0; j < in[i].n; j++) e[m++] = (entry){in[i].idx[j], i, j};
    /* (idx, contribution, position) is unique: the order, hence the bits,
     * do not depend on qsort. */
    qsort(e, (size_t)total, sizeof *e, cmp_entry);
    int64_t k = -1;
    for (int64_t j = 0; j < total; j++) {
        const float *src = in[e[j].src].rows + e[j].pos * dim;
        if (k < 0 || out_idx[k] != e[j].idx) {
            out_idx[++k] = e[j].idx;
            memcpy(out_rows + k * dim, src, sizeof(float) * (size_t)dim);
        } else {
            float *acc = out_rows + k * dim;
            for (int64_t d = 0; d < dim; d++) acc[d] += src[d];
        }
    }
    free(e);
    return k + 1;
}

void ps_group_by_owner(const ps_var *pv, const int64_t *rows, int64_t n, int64_t *counts,
                       int64_t *offs, int64_t *out, int64_t *perm) {
    int size = px_comm.size;
    int *own = malloc(sizeof *own * (size_t)(n > 0 ? n : 1));
    int64_t *next = malloc(sizeof *next * (size_t)size);
    for (int r = 0; r < size; r++) counts[r] = 0;
    for (int64_t i = 0; i < n; i++) counts[own[i] = ps_owner_of_row(pv, rows[i])]++;
    for (int r = 0, o = 0; r < size; o += (int)counts[r], r++) offs[r] = next[r] = o;
    for (int64_t i = 0; i < n; i++) {
        int64_t at = next[own[i]]++;
        out[at] = rows[i];
        if (perm) perm[at] = i;
    }
    free(own);
    free(next);
}
