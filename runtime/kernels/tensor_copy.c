/* Tensor kernels that copy or generate whole tensors: the shared copy
 * (Identity, Reshape, Flatten, Squeeze, Unsqueeze), inference Dropout,
 * constants (Shape, Size, Constant, ConstantOfShape), EyeLike, Range,
 * Expand and Tile. */
#include "tensor_internal.h"

#include <string.h>

/* px_k_copy — Identity, Reshape, Flatten, Squeeze, Unsqueeze, Dropout
 * without a mask: the output holds the input's bytes.
 * buf: [in, out]
 * p:   in tensor, out tensor (same dtype and element count) */
void px_k_copy(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt in = px_kp_tensor(&c), out = px_kp_tensor(&c);
    (void)in;
    pxt_move(buf[1], buf[0], (size_t)(out.numel * pxt_esize(out.dtype)));
}

/* px_k_dropout — Dropout at inference (or training with ratio 0): output =
 * input, mask all true (1 in the mask's dtype: bool from opset 10, the
 * data type before).
 * buf: [in, out, mask or NULL]
 * p:   in tensor, out tensor, mask tensor (dtype 0, rank 0 when absent) */
void px_k_dropout(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt in = px_kp_tensor(&c), out = px_kp_tensor(&c), mask = px_kp_tensor(&c);
    (void)in;
    pxt_move(buf[1], buf[0], (size_t)(out.numel * pxt_esize(out.dtype)));
    if (buf[2] && mask.dtype) {
        uint64_t one = 0;
        pxk_set_f64(&one, mask.dtype, 0, 1.0);
        pxt_fill(buf[2], &one, mask.numel, pxt_esize(mask.dtype));
    }
}

/* px_k_const — an output whose contents the compiler knows (Shape, Size,
 * Constant): the bytes travel in the parameters.
 * buf: [out]
 * p:   out tensor, nbytes, ceil(nbytes/8) words holding the bytes little-endian */
void px_k_const(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt out = px_kp_tensor(&c);
    (void)out;
    int64_t nbytes = px_kp_i64(&c);
    unsigned char *dst = buf[0];
    for (int64_t i = 0; i < nbytes; i += 8) {
        uint64_t w = (uint64_t)px_kp_i64(&c);
        for (int64_t b = 0; b < 8 && i + b < nbytes; b++)
            dst[i + b] = (unsigned char)(w >> (8 * b));
    }
}

/* px_k_fill — ConstantOfShape: every element equals one value.
 * buf: [out]
 * p:   out tensor, the element's bytes in the low bytes of one int64 (little-endian) */
void px_k_fill(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt out = px_kp_tensor(&c);
    uint64_t w = (uint64_t)px_kp_i64(&c);
    unsigned char elem[8];
    for (int b = 0; b < 8; b++) elem[b] = (unsigned char)(w >> (8 * b));
    pxt_fill(buf[0], elem, out.numel, pxt_esize(out.dtype));
}

/* px_k_eyelike — a 2-D tensor with ones on diagonal k (k > 0: above the
 * main diagonal) and zeros elsewhere.
 * buf: [out]
 * p:   out tensor (rank 2), k */
void px_k_eyelike(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt out = px_kp_tensor(&c);
    int64_t k = px_kp_i64(&c);
    int64_t rows = out.dims[0], cols = out.dims[1];
    memset(buf[0], 0, (size_t)(out.numel * pxt_esize(out.dtype)));
    for (int64_t i = 0; i < rows; i++) {
        if (k > cols || k < -rows) break; /* no diagonal inside the matrix */
        int64_t j = i + k;
        if (j >= 0 && j < cols) pxk_set_f64(buf[0], out.dtype, i * cols + j, 1.0);
    }
}

/* px_k_range — out[i] = start + i*delta for the out.numel elements the
 * compiler sized from the (constant) limit. Integers exactly, floats in
 * double then rounded once.
 * buf: [start, delta, out]   (scalars of out's dtype)
 * p:   start tensor, delta tensor, out tensor */
void px_k_range(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt start = px_kp_tensor(&c), delta = px_kp_tensor(&c), out = px_kp_tensor(&c);
    if (pxk_is_float(out.dtype)) {
        double s = pxk_get_f64(buf[0], start.dtype, 0), dl = pxk_get_f64(buf[1], delta.dtype, 0);
        for (int64_t i = 0; i < out.numel; i++)
            pxk_set_f64(buf[2], out.dtype, i, s + (double)i * dl);
    } else {
        int64_t s = pxk_get_i64(buf[0], start.dtype, 0), dl = pxk_get_i64(buf[1], delta.dtype, 0);
        for (int64_t i = 0; i < out.numel; i++) pxk_set_i64(buf[2], out.dtype, i, s + i * dl);
    }
}

/* px_k_expand — numpy broadcast of in to out's shape (in's rank <= out's).
 * Rows where the input runs along are memcpy'd, broadcast rows filled.
 * buf: [in, out]
 * p:   in tensor, out tensor */
void px_k_expand(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt in = px_kp_tensor(&c), out = px_kp_tensor(&c);
    int64_t es = pxt_esize(out.dtype);
    const char *src = buf[0];
    char *dst = buf[1];
    pxk_bcast b;
    pxk_bcast_init(&b, out.rank, out.dims, 1, &in);
    pxk_bcast_pos pos;
    memset(&pos, 0, sizeof pos);
    for (int64_t r = 0; r < b.rows; r++, pxk_bcast_next(&b, &pos)) {
        char *row = dst + r * b.inner * es;
        const char *from = src + pos.off[0] * es;
        if (b.inner_stride[0])
            memcpy(row, from, (size_t)(b.inner * es));
        else
            pxt_fill(row, from, b.inner, es);
    }
}

/* px_k_tile — out[i_0..i_r] = in[i_0 % d_0, ..., i_r % d_r]: each output
 * row is the matching input row repeated out.dims[r-1]/in.dims[r-1] times.
 * buf: [in, out]
 * p:   in tensor, out tensor (same rank; repeats = out dims / in dims) */
void px_k_tile(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt in = px_kp_tensor(&c), out = px_kp_tensor(&c);
    int64_t es = pxt_esize(out.dtype);
    const char *src = buf[0];
    char *dst = buf[1];
    if (out.numel == 0) return;
    if (out.rank == 0) {
        memcpy(dst, src, (size_t)es);
        return;
    }
    int r = out.rank;
    int64_t in_row = in.dims[r - 1] * es, reps = out.dims[r - 1] / in.dims[r - 1];
    int64_t stride[PX_K_MAX_RANK], idx[PX_K_MAX_RANK] = {0}, in_idx[PX_K_MAX_RANK] = {0};
    int64_t s = in_row;
    for (int d = r - 2; d >= 0; d--) {
        stride[d] = s;
        s *= in.dims[d];
    }
    int64_t rows = out.numel / out.dims[r - 1], in_off = 0;
    for (int64_t row = 0; row < rows; row++) {
        char *o = dst + row * reps * in_row;
        for (int64_t k = 0; k < reps; k++) memcpy(o + k * in_row, src + in_off, (size_t)in_row);
        for (int d = r - 2; d >= 0; d--) { /* odometer over the outer output dims */
            idx[d]++;
            in_idx[d]++;
            in_off += stride[d];
            if (in_idx[d] == in.dims[d]) {
                in_idx[d] = 0;
                in_off -= stride[d] * in.dims[d];
            }
            if (idx[d] < out.dims[d]) break;
            idx[d] = 0;
            in_idx[d] = 0;
            in_off = 0;
            for (int e = 0; e < d; e++) in_off += in_idx[e] * stride[e];
        }
    }
}
