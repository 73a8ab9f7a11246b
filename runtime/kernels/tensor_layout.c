/* Tensor kernels that rearrange elements: Transpose, Concat, Split and
 * Trilu (Slice and Pad are in tensor_window.c). Each works on the largest contiguous runs it can
 * find and copies them with memcpy; only the innermost strided walks copy element by element (typed
 * by element size). */
#include "tensor_internal.h"

#include <string.h>

/* ---- Transpose ---- */

/* A transpose reduced to its essentials: size-1 axes dropped and output
 * axes that are adjacent in the input too merged into one. dims/strides are
 * in output order; strides are input element strides. */
typedef struct pxt_perm {
    int rank;
    int64_t dims[PX_K_MAX_RANK];
    int64_t strides[PX_K_MAX_RANK];
} pxt_perm;

static void perm_reduce(const px_kt *in, const int64_t *perm, pxt_perm *r) {
    int64_t in_stride[PX_K_MAX_RANK];
    int64_t s = 1;
    for (int a = in->rank - 1; a >= 0; a--) {
        in_stride[a] = s;
        s *= in->dims[a];
    }
    r->rank = 0;
    int prev = -1; /* input axis ending the last group */
    for (int i = 0; i < in->rank; i++) {
        int a = (int)perm[i];
        if (in->dims[a] == 1) continue;
        /* a continues the previous group when every input axis between the
         * group's end and a has size 1 */
        int adjacent = r->rank > 0 && a > prev;
        for (int b = prev + 1; adjacent && b < a; b++)
            if (in->dims[b] != 1) adjacent = 0;
        if (adjacent) {
            r->dims[r->rank - 1] *= in->dims[a];
            r->strides[r->rank - 1] = in_stride[a];
        } else {
            r->dims[r->rank] = in->dims[a];
            r->strides[r->rank] = in_stride[a];
            r->rank++;
        }
        prev = a;
    }
}

/* out[j][i] = in[i][j] for an rows x cols input, in 32x32 tiles so both
 * sides stay in cache. */
#define TRANSPOSE_2D(T)                                                                            \
    do {                                                                                           \
        const T *s = (const T *)src;                                                               \
        T *d = (T *)dst;                                                                           \
        for (int64_t i0 = 0; i0 < rows; i0 += 32)                                                  \
            for (int64_t j0 = 0; j0 < cols; j0 += 32) {                                            \
                int64_t i1 = i0 + 32 < rows ? i0 + 32 : rows;                                      \
                int64_t j1 = j0 + 32 < cols ? j0 + 32 : cols;                                      \
                for (int64_t j = j0; j < j1; j++)                                                  \
                    for (int64_t i = i0; i < i1; i++) d[j * rows + i] = s[i * cols + j];           \
            }                                                                                      \
    } while (0)

static void transpose_2d(char *dst, const char *src, int64_t rows, int64_t cols, int64_t es) {
    switch (es) {
    case 1: TRANSPOSE_2D(uint8_t); return;
    case 2: TRANSPOSE_2D(uint16_t); return;
    case 4: TRANSPOSE_2D(uint32_t); return;
    case 8: TRANSPOSE_2D(uint64_t); return;
    default:
        for (int64_t j = 0; j < cols; j++)
            for (int64_t i = 0; i < rows; i++)
                memcpy(dst + (j * rows + i) * es, src + (i * cols + j) * es, (size_t)es);
    }
}

/* px_k_transpose — out = in with axes permuted: out.dims[i] = in.dims[perm[i]].
 * Fast paths: a plain copy when the permutation only moves size-1 axes, a
 * tiled 2-D transpose (batched when the last two merged axes swap), memcpy
 * of runs when the innermost axis stays.
 * buf: [in, out]
 * p:   in tensor, out tensor, perm[in.rank] */
void px_k_transpose(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt in = px_kp_tensor(&c), out = px_kp_tensor(&c);
    int64_t perm[PX_K_MAX_RANK];
    px_kp_ints(&c, perm, in.rank);
    int64_t es = pxt_esize(out.dtype);
    const char *src = buf[0];
    char *dst = buf[1];
    if (out.numel == 0) return;
    pxt_perm r;
    perm_reduce(&in, perm, &r);
    if (r.rank <= 1) { /* only size-1 axes moved: the bytes are in order already */
        memcpy(dst, src, (size_t)(out.numel * es));
        return;
    }
    if (r.rank == 2) { /* two groups, necessarily swapped: a 2-D transpose */
        transpose_2d(dst, src, r.dims[1], r.dims[0], es);
        return;
    }
    int last = r.rank - 1;
    if (r.strides[last - 1] == 1 && r.strides[last] == r.dims[last - 1]) {
        /* the last two groups are a contiguous matrix swapped (NCHW <-> NHWC,
         * batched matrix transposes): one tiled 2-D transpose per outer index */
        int64_t rows = r.dims[last], cols = r.dims[last - 1], mat = rows * cols * es;
        int64_t idx[PX_K_MAX_RANK] = {0}, off = 0, count = out.numel / (rows * cols);
        for (int64_t m = 0; m < count; m++) {
            transpose_2d(dst + m * mat, src + off * es, rows, cols, es);
            for (int d = last - 2; d >= 0; d--) {
                off += r.strides[d];
                if (++idx[d] < r.dims[d]) break;
                off -= r.strides[d] * r.dims[d];
                idx[d] = 0;
            }
        }
        return;
    }
    int64_t inner = r.dims[last], run = inner * es;
    int contiguous = r.strides[last] == 1;
    int64_t idx[PX_K_MAX_RANK] = {0}, off = 0;
    int64_t rows = out.numel / inner;
    for (int64_t row = 0; row < rows; row++) {
        if (contiguous)
            memcpy(dst + row * run, src + off * es, (size_t)run);
        else
            pxt_strided_copy(dst + row * run, src + off * es, inner, es, r.strides[last] * es);
        for (int d = last - 1; d >= 0; d--) {
            off += r.strides[d];
            if (++idx[d] < r.dims[d]) break;
            off -= r.strides[d] * r.dims[d];
            idx[d] = 0;
        }
    }
}

/* ---- Concat / Split ---- */

/* px_k_concat — out = the inputs joined along axis: for each index of the
 * dims before axis, one memcpy per input of its dims[axis..] block.
 * buf: [in_0, ..., in_{n-1}, out]
 * p:   n, axis, out tensor, in_0 tensor, ..., in_{n-1} tensor */
void px_k_concat(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int n = (int)px_kp_i64(&c), axis = (int)px_kp_i64(&c);
    px_kt out = px_kp_tensor(&c);
    int64_t es = pxt_esize(out.dtype), outer = 1, inner = es;
    for (int d = 0; d < axis; d++) outer *= out.dims[d];
    for (int d = axis + 1; d < out.rank; d++) inner *= out.dims[d];
    int64_t block[PXT_MAX_PARTS];
    for (int i = 0; i < n; i++) {
        px_kt t = px_kp_tensor(&c);
        block[i] = t.dims[axis] * inner;
    }
    char *dst = buf[n];
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < n; i++) {
            if (block[i]) memcpy(dst, (const char *)buf[i] + o * block[i], (size_t)block[i]);
            dst += block[i];
        }
}

/* px_k_split — the inverse of concat: output i receives its dims[axis]
 * slab of every outer index. An absent output (NULL) is skipped.
 * buf: [in, out_0, ..., out_{n-1}]
 * p:   n, axis, in tensor, out_0 tensor, ..., out_{n-1} tensor */
void px_k_split(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int n = (int)px_kp_i64(&c), axis = (int)px_kp_i64(&c);
    px_kt in = px_kp_tensor(&c);
    int64_t es = pxt_esize(in.dtype), outer = 1, inner = es;
    for (int d = 0; d < axis; d++) outer *= in.dims[d];
    for (int d = axis + 1; d < in.rank; d++) inner *= in.dims[d];
    int64_t block[PXT_MAX_PARTS];
    for (int i = 0; i < n; i++) {
        px_kt t = px_kp_tensor(&c);
        block[i] = t.dims[axis] * inner;
    }
    const char *src = buf[0];
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < n; i++) {
            if (buf[1 + i] && block[i])
                memcpy((char *)buf[1 + i] + o * block[i], src, (size_t)block[i]);
            src += block[i];
        }
}

/* ---- Trilu ---- */

/* px_k_trilu — keeps the upper (j - i >= k) or lower (j - i <= k) triangle
 * of each matrix in the last two axes and zeroes the rest.
 * buf: [in, k or NULL (int64 scalar, 0 when absent), out]
 * p:   in tensor, out tensor, upper (0/1) */
void px_k_trilu(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt in = px_kp_tensor(&c), out = px_kp_tensor(&c);
    int upper = (int)px_kp_i64(&c);
    (void)in;
    int64_t es = pxt_esize(out.dtype);
    int64_t k = buf[1] ? *(const int64_t *)buf[1] : 0;
    int64_t rows = out.dims[out.rank - 2], cols = out.dims[out.rank - 1];
    if (out.numel == 0) return;
    /* beyond +-(rows+cols) every k gives the same answer; clamp so i+k cannot overflow */
    if (k > rows + cols) k = rows + cols;
    if (k < -(rows + cols)) k = -(rows + cols);
    int64_t mats = out.numel / (rows * cols);
    const char *src = buf[0];
    char *dst = buf[2];
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < rows; i++) {
            /* kept columns [j0, j1) */
            int64_t j0 = upper ? i + k : 0, j1 = upper ? cols : i + k + 1;
            if (j0 < 0) j0 = 0;
            if (j1 > cols) j1 = cols;
            if (j1 < j0) j1 = j0;
            if (j0 > cols) j0 = j1 = cols;
            int64_t o = ((m * rows) + i) * cols * es;
            memset(dst + o, 0, (size_t)(j0 * es));
            pxt_move(dst + o + j0 * es, src + o + j0 * es, (size_t)((j1 - j0) * es));
            memset(dst + o + j1 * es, 0, (size_t)((cols - j1) * es));
        }
}
