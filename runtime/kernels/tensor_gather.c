/* Tensor kernels driven by index data: Gather, GatherElements, OneHot.
 * Indices are checked here, at run time: an index out of range ends the
 * program with a message naming the node. */
#include "tensor_internal.h"

#include <string.h>

static inline int64_t load_index(const void *p, int dtype, int64_t i) {
    return dtype == PXK_I32 ? ((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

/* px_k_gather — out[o, j, i] = data[o, idx[j], i] where o runs over the
 * dims before axis, j over the indices and i over the dims after axis.
 * Each (o, j) copies one block of the dims after axis with memcpy: on axis
 * 0 that is a whole row (the embedding look-up). Negative indices count
 * from the end; others outside [-n, n) end the program.
 * buf: [data, indices (int32 or int64), out]
 * p:   data tensor, indices tensor, out tensor, axis, node name (packed) */
void px_k_gather(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt data = px_kp_tensor(&c), ind = px_kp_tensor(&c), out = px_kp_tensor(&c);
    int axis = (int)px_kp_i64(&c);
    int64_t es = pxt_esize(out.dtype), outer = 1, blk = es;
    for (int d = 0; d < axis; d++) outer *= data.dims[d];
    for (int d = axis + 1; d < data.rank; d++) blk *= data.dims[d];
    int64_t n = data.dims[axis], count = ind.numel;
    const char *src = buf[0];
    char *dst = buf[2];
    for (int64_t j = 0; j < count; j++) { /* check once, before any copy */
        int64_t v = load_index(buf[1], ind.dtype, j);
        if (v < -n || v >= n) {
            char name[256];
            pxt_read_name(&c, name, sizeof name);
            px_rt_fail("Gather node '%s': index %lld out of range [-%lld, %lld) for axis %d", name,
                       (long long)v, (long long)n, (long long)n, axis);
        }
    }
    for (int64_t o = 0; o < outer; o++) {
        const char *slab = src + o * n * blk;
        switch (blk) { /* gathering single elements: typed copies, not memcpy calls */
        case 4:
            for (int64_t j = 0; j < count; j++, dst += 4) {
                int64_t v = load_index(buf[1], ind.dtype, j);
                memcpy(dst, slab + (v < 0 ? v + n : v) * 4, 4);
            }
            break;
        case 8:
            for (int64_t j = 0; j < count; j++, dst += 8) {
                int64_t v = load_index(buf[1], ind.dtype, j);
                memcpy(dst, slab + (v < 0 ? v + n : v) * 8, 8);
            }
            break;
        default:
            for (int64_t j = 0; j < count; j++, dst += blk) {
                int64_t v = load_index(buf[1], ind.dtype, j);
                memcpy(dst, slab + (v < 0 ? v + n : v) * blk, (size_t)blk);
            }
        }
    }
}

/* px_k_gather_elements — out[i] = data[i with its axis coordinate replaced
 * by idx[i]]; out and indices have the same shape, data the same rank.
 * buf: [data, indices (int32 or int64), out]
 * p:   data tensor, indices tensor, out tensor, axis, node name (packed) */
void px_k_gather_elements(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt data = px_kp_tensor(&c), ind = px_kp_tensor(&c), out = px_kp_tensor(&c);
    int axis = (int)px_kp_i64(&c);
    int64_t es = pxt_esize(out.dtype);
    int r = data.rank;
    int64_t dstride[PX_K_MAX_RANK], s = 1;
    for (int d = r - 1; d >= 0; d--) {
        dstride[d] = s;
        s *= data.dims[d];
    }
    int64_t n = data.dims[axis], idx[PX_K_MAX_RANK] = {0}, base = 0;
    const char *src = buf[0];
    char *dst = buf[2];
    for (int64_t e = 0; e < ind.numel; e++) {
        int64_t v = load_index(buf[1], ind.dtype, e);
        if (v < -n || v >= n) {
            char name[256];
            pxt_read_name(&c, name, sizeof name);
            px_rt_fail("GatherElements node '%s': index %lld out of range [-%lld, %lld) for "
                       "axis %d",
                       name, (long long)v, (long long)n, (long long)n, axis);
        }
        if (v < 0) v += n;
        memcpy(dst + e * es, src + (base + v * dstride[axis]) * es, (size_t)es);
        /* odometer over the indices' shape; base skips the axis coordinate */
        for (int d = r - 1; d >= 0; d--) {
            if (d != axis) base += dstride[d];
            if (++idx[d] < ind.dims[d]) break;
            if (d != axis) base -= dstride[d] * ind.dims[d];
            idx[d] = 0;
        }
    }
}

/* px_k_onehot — out[o, k, i] = values[1] if index[o, i] == k else
 * values[0], with k the new axis of size depth. Indices of any numeric
 * dtype (floats truncated); negative ones count from depth; others outside
 * [-depth, depth) give an all-off row, as the spec says.
 * buf: [indices, values (2 elements: off, on, of out's dtype), out]
 * p:   indices tensor, values tensor, out tensor, axis (of out, normalized) */
void px_k_onehot(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt ind = px_kp_tensor(&c), values = px_kp_tensor(&c), out = px_kp_tensor(&c);
    int axis = (int)px_kp_i64(&c);
    (void)values;
    int64_t es = pxt_esize(out.dtype), outer = 1, inner = 1, depth = out.dims[axis];
    for (int d = 0; d < axis; d++) outer *= out.dims[d];
    for (int d = axis + 1; d < out.rank; d++) inner *= out.dims[d];
    const char *off = buf[1], *on = off + es;
    char *dst = buf[2];
    pxt_fill(dst, off, out.numel, es);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t k = pxk_get_i64(buf[0], ind.dtype, o * inner + i);
            if (k < -depth || k >= depth) continue;
            if (k < 0) k += depth;
            memcpy(dst + ((o * depth + k) * inner + i) * es, on, (size_t)es);
        }
}
