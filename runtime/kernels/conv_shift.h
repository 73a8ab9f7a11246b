/* im2col and col2im of one (channel, tap) row when the tap's window rows
 * are consecutive input rows and the output is as wide as the input
 * (strides 1 on the last two spatial axes and out[2] == in[2], a "same"
 * convolution): then the row's slice for one outer position (one plane) is
 * the input plane shifted by `shift` elements, valid on the rows [l1, h1)
 * and, in each, the columns [l2, h2); the rest is padding. One vectorized
 * copy (or add) of the whole plane replaces the feature map's many short
 * rows, and the few padding columns it wrapped into are fixed afterwards.
 * Private to runtime/kernels (nn_conv.c, grad_conv.c). */
#ifndef PX_CONV_SHIFT_H
#define PX_CONV_SHIFT_H

#include <stdint.h>
#include <string.h>

/* Whether (stride1, stride2, out2, in2) allow the shifted plane. */
static inline int px_conv_shift_fits(int64_t stride1, int64_t stride2, int64_t out2, int64_t in2) {
    return stride1 == 1 && stride2 == 1 && out2 == in2;
}

/* The valid rows [*l1, *h1) of O1 for a row offset b1 (input row o1 + b1)
 * over `rows` input rows. */
static inline void px_conv_shift_rows(int64_t b1, int64_t rows, int64_t O1, int64_t *l1,
                                      int64_t *h1) {
    int64_t l = b1 >= 0 ? 0 : -b1, h = rows - b1;
    if (h > O1) h = O1;
    if (h < 0) h = 0;
    if (l > h) l = h;
    *l1 = l;
    *h1 = h;
}

/* PX_CONV_SHIFT(T, S) defines, for a plane of O1 x O2 outputs over an input
 * plane of `plane` elements (x: its first element):
 * - px_im2col_shift_S: col[o1, o2] = x[o1 * O2 + o2 + shift] where valid, 0 elsewhere;
 * - px_col2im_shift_S: x[o1 * O2 + o2 + shift] += col[o1, o2] where valid (col's
 *   padding entries are zeroed first and added as 0: x + 0 keeps x but for the
 *   sign of a zero). */
#define PX_CONV_SHIFT(T, S)                                                                        \
    static inline void px_conv_shift_span_##S(int64_t O2, int64_t plane, int64_t shift,            \
                                              int64_t l1, int64_t h1, int64_t *js, int64_t *je) {  \
        int64_t s = l1 * O2, e = h1 * O2;                                                          \
        if (s + shift < 0) s = -shift;                                                             \
        if (e + shift > plane) e = plane - shift;                                                  \
        if (e <= s) s = e = l1 * O2; /* nothing valid: all padding */                              \
        *js = s;                                                                                   \
        *je = e;                                                                                   \
    }                                                                                              \
    /* column by column: the padding columns are one or two per row, and a                         \
     * loop along a row would become a memset call per row at -O3 */                               \
    static inline void px_conv_shift_edges_##S(T *col, int64_t O2, int64_t l1, int64_t h1,         \
                                               int64_t l2, int64_t h2) {                           \
        for (int64_t o2 = 0; o2 < l2; o2++)                                                        \
            for (int64_t o1 = l1; o1 < h1; o1++) col[o1 * O2 + o2] = 0;                            \
        for (int64_t o2 = h2; o2 < O2; o2++)                                                       \
            for (int64_t o1 = l1; o1 < h1; o1++) col[o1 * O2 + o2] = 0;                            \
    }                                                                                              \
    static inline void px_im2col_shift_##S(T *restrict col, const T *restrict x, int64_t O1,       \
                                           int64_t O2, int64_t plane, int64_t shift, int64_t l1,   \
                                           int64_t h1, int64_t l2, int64_t h2) {                   \
        int64_t js, je;                                                                            \
        px_conv_shift_span_##S(O2, plane, shift, l1, h1, &js, &je);                                \
        memset(col, 0, (size_t)(js) * sizeof(T));                                                  \
        memcpy(col + js, x + js + shift, (size_t)(je - js) * sizeof(T));                           \
        memset(col + je, 0, (size_t)(O1 * O2 - je) * sizeof(T));                                   \
        px_conv_shift_edges_##S(col, O2, l1, h1, l2, h2);                                          \
    }                                                                                              \
    static inline void px_col2im_shift_##S(T *restrict x, T *restrict col, int64_t O2,             \
                                           int64_t plane, int64_t shift, int64_t l1, int64_t h1,   \
                                           int64_t l2, int64_t h2) {                               \
        int64_t js, je;                                                                            \
        px_conv_shift_span_##S(O2, plane, shift, l1, h1, &js, &je);                                \
        px_conv_shift_edges_##S(col, O2, l1, h1, l2, h2);                                          \
        T *xs = x + shift;                                                                         \
        for (int64_t j = js; j < je; j++) xs[j] += col[j];                                         \
    }
PX_CONV_SHIFT(float, f32)
PX_CONV_SHIFT(double, f64)

#endif
