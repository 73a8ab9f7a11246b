/* Tensor kernels driven by index data: Gather, GatherElements,
 * ScatterElements, OneHot.
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

/* The positions a GatherElements or ScatterElements call visits: for each
 * element of the indices in order, the offset (in elements) into data of
 * that element's position with its axis coordinate replaced by the index,
 * which is checked (a failure names the op and its node). */
typedef struct elem_walk {
    px_kcur *c;
    const char *op;
    const void *ind;
    int ind_dtype, r, axis;
    int64_t n, base, stride[PX_K_MAX_RANK], dims[PX_K_MAX_RANK], idx[PX_K_MAX_RANK];
} elem_walk;

static void walk_init(elem_walk *w, px_kcur *c, const char *op, const px_kt *data, const px_kt *ind,
                      const void *ind_buf, int axis) {
    *w = (elem_walk){.c = c,
                     .op = op,
                     .ind = ind_buf,
                     .ind_dtype = ind->dtype,
                     .r = data->rank,
                     .axis = axis,
                     .n = data->dims[axis]};
    int64_t s = 1;
    for (int d = w->r - 1; d >= 0; d--) {
        w->stride[d] = s;
        s *= data->dims[d];
        w->dims[d] = ind->dims[d];
    }
}

/* The data offset of index element e (elements are visited in order). */
static int64_t walk_next(elem_walk *w, int64_t e) {
    int64_t v = load_index(w->ind, w->ind_dtype, e), n = w->n;
    if (v < -n || v >= n) {
        char name[256];
        pxt_read_name(w->c, name, sizeof name);
        px_rt_fail("%s node '%s': index %lld out of range [-%lld, %lld) for axis %d", w->op, name,
                   (long long)v, (long long)n, (long long)n, w->axis);
    }
    int64_t at = w->base + (v < 0 ? v + n : v) * w->stride[w->axis];
    /* odometer over the indices' shape; base skips the axis coordinate */
    for (int d = w->r - 1; d >= 0; d--) {
        if (d != w->axis) w->base += w->stride[d];
        if (++w->idx[d] < w->dims[d]) break;
        if (d != w->axis) w->base -= w->stride[d] * w->dims[d];
        w->idx[d] = 0;
    }
    return at;
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
    elem_walk w;
    walk_init(&w, &c, "GatherElements", &data, &ind, buf[1], axis);
    const char *src = buf[0];
    char *dst = buf[2];
    for (int64_t e = 0; e < ind.numel; e++)
        memcpy(dst + e * es, src + walk_next(&w, e) * es, (size_t)es);
}

/* One element of type T at o combined with the update u by reduction red
 * (1 add, 2 mul, 3 max, 4 min; NaN wins max and min, as numpy's). */
#define SCATTER_COMBINE(T, o, u, red)                                                              \
    do {                                                                                           \
        T *o_ = (T *)(o), u_ = *(const T *)(u);                                                    \
        switch (red) {                                                                             \
        case 1: *o_ += u_; break;                                                                  \
        case 2: *o_ *= u_; break;                                                                  \
        case 3:                                                                                    \
            if (u_ > *o_ || u_ != u_) *o_ = u_;                                                    \
            break;                                                                                 \
        default:                                                                                   \
            if (u_ < *o_ || u_ != u_) *o_ = u_;                                                    \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

static void scatter_combine(char *o, const char *u, int dtype, int red) {
    switch (dtype) {
    case PXK_F32: SCATTER_COMBINE(float, o, u, red); break;
    case PXK_F64: SCATTER_COMBINE(double, o, u, red); break;
    case PXK_I32: SCATTER_COMBINE(int32_t, o, u, red); break;
    default: SCATTER_COMBINE(int64_t, o, u, red); break; /* the lowering allows no other */
    }
}

/* px_k_scatter_elements — out = data, then out[i with its axis coordinate
 * replaced by idx[i]] = updates[i] (reduction 0), or combined with it
 * (1 add, 2 mul, 3 max, 4 min: float, double, int32, int64), for every
 * position i of the indices in order (they share the updates' shape;
 * in-place when out is data's buffer).
 * buf: [data, indices (int32 or int64), updates, out]
 * p:   data tensor, indices tensor, out tensor, axis, reduction, node name
 *      (packed) */
void px_k_scatter_elements(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt data = px_kp_tensor(&c), ind = px_kp_tensor(&c), out = px_kp_tensor(&c);
    int axis = (int)px_kp_i64(&c), red = (int)px_kp_i64(&c);
    int64_t es = pxt_esize(out.dtype);
    pxt_move(buf[3], buf[0], (size_t)(data.numel * es));
    elem_walk w;
    walk_init(&w, &c, "ScatterElements", &data, &ind, buf[1], axis);
    const char *src = buf[2];
    char *dst = buf[3];
    for (int64_t e = 0; e < ind.numel; e++) {
        char *o = dst + walk_next(&w, e) * es;
        if (red)
            scatter_combine(o, src + e * es, out.dtype, red);
        else
            memcpy(o, src + e * es, (size_t)es);
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
