/* Row-set helpers of the parameter server: distinct indices, sums of row
 * sets in a fixed order, grouping rows by the shard that owns them. */
#include "ps.h"
#include "kernels/row_sort.h"

#include <string.h>

/* Working arrays of the calling thread, kept from call to call: the main
 * thread's pulls and the comm thread's pushes each reuse theirs, so a step
 * allocates nothing here once the sizes have been seen. */
enum {
    SCRATCH_VALS,
    SCRATCH_ORDER,
    SCRATCH_SRC,
    SCRATCH_FIRST,
    SCRATCH_OWN,
    SCRATCH_NEXT,
    SCRATCH_KINDS
};
static _Thread_local comm_buf scratch[SCRATCH_KINDS];

static void *scratch_of(int kind, int64_t n, size_t elem) {
    return comm_buf_reserve(&scratch[kind], elem * (size_t)(n > 0 ? n : 1));
}

void ps_rowset_scratch_free(void) {
    for (int i = 0; i < SCRATCH_KINDS; i++) comm_buf_free(&scratch[i]);
}

/* order[0..n) sorts vals ascending, ties in input order (kernels/row_sort.c:
 * a radix sort; qsort with a comparison callback was half of a sampled-
 * softmax step on one rank). */
static int64_t *sorted_order(const int64_t *vals, int64_t n, int64_t limit, const char *what) {
    int64_t *order = scratch_of(SCRATCH_ORDER, n, sizeof(int64_t));
    if (px_row_sort(vals, n, limit, order) != 0)
        px_rt_fail("out of memory sorting %lld row indices (%s)", (long long)n, what);
    return order;
}

int64_t ps_unique_indices(const void *idx, int dtype, int64_t n, int64_t rows, const char *op,
                          const char *var, int64_t *out, int64_t *which) {
    int64_t *vals = scratch_of(SCRATCH_VALS, n, sizeof(int64_t));
    for (int64_t i = 0; i < n; i++) {
        int64_t v = dtype == 6 ? ((const int32_t *)idx)[i] : ((const int64_t *)idx)[i];
        if (v < 0 || v >= rows)
            px_rt_fail("%s of variable '%s': index %lld at position %lld is out of range [0, %lld)",
                       op, var, (long long)v, (long long)i, (long long)rows);
        vals[i] = v;
    }
    int64_t *order = sorted_order(vals, n, rows, op);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = vals[order[i]];
        if (k == 0 || out[k - 1] != v) out[k++] = v;
        if (which) which[order[i]] = k - 1;
    }
    return k;
}

int64_t ps_rowset_sum(const rowset *in, int n_in, int64_t dim, int64_t *out_idx, float *out_rows) {
    int64_t total = 0;
    for (int i = 0; i < n_in; i++) total += in[i].n;
    if (total == 0) return 0;
    /* Every contribution's rows in (contribution, position) order; a stable
     * sort by row index then visits them by (index, contribution, position),
     * a unique order: the bits depend only on the order of `in`. */
    int64_t *all = scratch_of(SCRATCH_VALS, total, sizeof(int64_t)),
            *src = scratch_of(SCRATCH_SRC, total, sizeof(int64_t));
    int64_t m = 0, limit = 1;
    for (int i = 0; i < n_in; i++)
        for (int64_t j = 0; j < in[i].n; j++, m++) {
            all[m] = in[i].idx[j];
            src[m] = i;
            if (all[m] >= limit) limit = all[m] + 1;
        }
    int64_t *order = sorted_order(all, total, limit, "the sum of pushed rows");
    int64_t k = -1, *first = scratch_of(SCRATCH_FIRST, n_in, sizeof(int64_t));
    int64_t at = 0;
    for (int i = 0; i < n_in; i++) {
        first[i] = at;
        at += in[i].n;
    }
    for (int64_t j = 0; j < total; j++) {
        int64_t e = order[j];
        const rowset *r = &in[src[e]];
        const float *row = r->rows + (e - first[src[e]]) * dim;
        if (k < 0 || out_idx[k] != all[e]) {
            out_idx[++k] = all[e];
            memcpy(out_rows + k * dim, row, sizeof(float) * (size_t)dim);
        } else {
            float *acc = out_rows + k * dim;
            for (int64_t d = 0; d < dim; d++) acc[d] += row[d];
        }
    }
    return k + 1;
}

int ps_group_by_owner(const ps_var *pv, const int64_t *rows, int64_t n, int64_t *counts,
                      int64_t *offs, int64_t *out, int64_t *perm) {
    int size = px_world.size;
    int *own = scratch_of(SCRATCH_OWN, n, sizeof(int));
    int64_t *next = scratch_of(SCRATCH_NEXT, size, sizeof(int64_t));
    for (int r = 0; r < size; r++) counts[r] = 0;
    /* Sorted rows come in runs of one partition: look the partition up only
     * when a row leaves the current one (two divisions per row otherwise). */
    int64_t start = 0, end = 0;
    int owner = 0, in_order = 1; /* owners never decrease: grouping keeps the order */
    for (int64_t i = 0; i < n; i++) {
        if (rows[i] < start || rows[i] >= end) {
            const ps_part *part = &pv->parts[px_ps_part_of_row(pv->rows, pv->n_parts, rows[i])];
            start = part->row0;
            end = part->row0 + part->rows;
            owner = part->owner;
        }
        in_order &= i == 0 || owner >= own[i - 1];
        counts[own[i] = owner]++;
    }
    for (int r = 0, o = 0; r < size; o += (int)counts[r], r++) offs[r] = next[r] = o;
    for (int64_t i = 0; i < n; i++) {
        int64_t at = next[own[i]]++;
        out[at] = rows[i];
        if (perm) perm[at] = i;
    }
    return in_order;
}
