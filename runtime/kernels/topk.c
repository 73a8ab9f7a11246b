/* TopK: the K largest (or smallest) elements along one axis and their
 * indices. Ties follow ONNX: of equal values the lower index comes first.
 * The output is always sorted (sorted=0 leaves the order to the
 * implementation). NaN is ordered above every number, as NumPy's sort
 * (the ONNX reference) does. */
#include "kutil.h"

#include <stdlib.h>

typedef struct topk_item {
    union {
        double f;
        int64_t i;
        uint64_t u;
    } key;
    int64_t idx;
} topk_item;

/* Ascending order of key, NaN last; equal keys keep index order. */
static int cmp_f(const topk_item *a, const topk_item *b) {
    int an = isnan(a->key.f), bn = isnan(b->key.f);
    if (an || bn) return an - bn;
    return (a->key.f > b->key.f) - (a->key.f < b->key.f);
}
static int cmp_i(const topk_item *a, const topk_item *b) {
    return (a->key.i > b->key.i) - (a->key.i < b->key.i);
}
static int cmp_u(const topk_item *a, const topk_item *b) {
    return (a->key.u > b->key.u) - (a->key.u < b->key.u);
}

#define TOPK_CMP(NAME, CMP, SIGN)                                                                  \
    static int NAME(const void *x, const void *y) {                                                \
        const topk_item *a = x, *b = y;                                                            \
        int c = SIGN CMP(a, b);                                                                    \
        return c ? c : (a->idx > b->idx) - (a->idx < b->idx);                                      \
    }
TOPK_CMP(asc_f, cmp_f, +)
TOPK_CMP(desc_f, cmp_f, -)
TOPK_CMP(asc_i, cmp_i, +)
TOPK_CMP(desc_i, cmp_i, -)
TOPK_CMP(asc_u, cmp_u, +)
TOPK_CMP(desc_u, cmp_u, -)

/* px_k_topk:
 *   buf: [X, Values (X's dtype), Indices (int64)]
 *   p:   X tensor, Values tensor, axis (normalized), largest
 * K is Values' size along axis. */
void px_k_topk(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt X = px_kp_tensor(&c), V = px_kp_tensor(&c);
    int axis = (int)px_kp_i64(&c), largest = px_kp_i64(&c) != 0;
    int64_t outer = 1, inner = 1, n = X.dims[axis], k = V.dims[axis];
    for (int i = 0; i < axis; i++) outer *= X.dims[i];
    for (int i = axis + 1; i < X.rank; i++) inner *= X.dims[i];
    int dt = X.dtype, kind = pxk_is_float(dt) ? 0 : dt == PXK_U64 ? 2 : 1;
    int (*cmp)(const void *, const void *) = kind == 0   ? (largest ? desc_f : asc_f)
                                             : kind == 1 ? (largest ? desc_i : asc_i)
                                                         : (largest ? desc_u : asc_u);
    size_t es = (size_t)pxk_dtype_size(dt);
    const char *x = buf[0];
    char *v = buf[1];
    int64_t *ix = buf[2];
    if (k == 0 || outer * inner == 0) return;
    topk_item *items = malloc(sizeof *items * (size_t)n);
    if (!items) px_rt_fail("TopK: out of memory for %lld items", (long long)n);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t q = 0; q < inner; q++) {
            int64_t base = o * n * inner + q;
            for (int64_t j = 0; j < n; j++) {
                int64_t at = base + j * inner;
                items[j].idx = j;
                if (kind == 0)
                    items[j].key.f =
                        dt == PXK_F32 ? ((const float *)x)[at] : pxk_get_f64(x, dt, at);
                else if (kind == 2)
                    items[j].key.u = ((const uint64_t *)x)[at];
                else
                    items[j].key.i = pxk_get_i64(x, dt, at);
            }
            qsort(items, (size_t)n, sizeof *items, cmp);
            for (int64_t j = 0; j < k; j++) {
                int64_t to = o * k * inner + q + j * inner;
                ix[to] = items[j].idx;
                memcpy(v + (size_t)to * es, x + (size_t)(base + items[j].idx * inner) * es, es);
            }
        }
    free(items);
}
