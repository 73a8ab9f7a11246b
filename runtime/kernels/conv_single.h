/* The three products of a convolution group with a single output channel
 * (a depthwise convolution: group = channels), as plain loops. There each
 * (image, group) pair's product is a vector of a few taps against a
 * feature map of a few dozen pixels, far less work than one BLAS call's
 * fixed cost (argument checks, buffer locks, packing). Each output element
 * is summed in tap order (pixel order for dW), whatever the threads.
 * Private to runtime/kernels (nn_conv.c, grad_conv.c). */
#ifndef PX_CONV_SINGLE_H
#define PX_CONV_SINGLE_H

#include <stdint.h>

#define PX_CONV_SINGLE(S, T)                                                                       \
    /* y[i] = beta * y[i] + sum_r w[r] col[r, i]  (beta 0: y is overwritten) */                    \
    static inline void px_conv1_forward_##S(const T *w, const T *col, int64_t rows, int64_t P,     \
                                            T beta, T *y) {                                        \
        for (int64_t r = 0; r < rows; r++) {                                                       \
            const T wr = w[r], *c = col + r * P;                                                   \
            if (r == 0 && beta == 0)                                                               \
                for (int64_t i = 0; i < P; i++) y[i] = wr * c[i];                                  \
            else                                                                                   \
                for (int64_t i = 0; i < P; i++) y[i] += wr * c[i];                                 \
        }                                                                                          \
        if (rows == 0 && beta == 0)                                                                \
            for (int64_t i = 0; i < P; i++) y[i] = 0;                                              \
    }                                                                                              \
    /* col[k, i] = w[k] dy[i] */                                                                   \
    static inline void px_conv1_grad_cols_##S(const T *w, const T *dy, int64_t K, int64_t P,       \
                                              T *col) {                                            \
        for (int64_t k = 0; k < K; k++)                                                            \
            for (int64_t i = 0; i < P; i++) col[k * P + i] = w[k] * dy[i];                         \
    }                                                                                              \
    /* dw[k] += sum_i dy[i] col[k, i] */                                                           \
    static inline void px_conv1_grad_weight_##S(const T *dy, const T *col, int64_t K, int64_t P,   \
                                                T *dw) {                                           \
        for (int64_t k = 0; k < K; k++) {                                                          \
            T s = 0;                                                                               \
            for (int64_t i = 0; i < P; i++) s += dy[i] * col[k * P + i];                           \
            dw[k] += s;                                                                            \
        }                                                                                          \
    }
PX_CONV_SINGLE(f32, float)
PX_CONV_SINGLE(f64, double)
#undef PX_CONV_SINGLE

#endif
