/* exp and tanh for float written so that GCC vectorizes loops that call
 * them (libm's expf/tanhf are opaque calls, and in an LSTM the gate
 * activations cost more than the recurrent GEMM). Accuracy: a few ulp over
 * the whole float range, checked against libm in tests/unit/test_kernels_rnn.c.
 * Used by the recurrent kernels and the softmax cross-entropy loss. */
#ifndef PX_RNN_MATH_H
#define PX_RNN_MATH_H

#include "vec_clones.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float px_rnn_bits_to_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t px_rnn_f32_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* e^x (Cephes expf): x = n*ln2 + r with |r| <= ln2/2, e^r by a degree-6
 * polynomial, 2^n put straight into the exponent bits. Inputs are clamped to
 * [-87, 88] so 2^n stays a normal float: e^88 = 1.65e38 stands in for
 * overflow and e^-87 = 1.6e-38 for underflow, which is exact enough for
 * everything this file feeds (sigmoid, tanh). NaN stays NaN. Ternaries, not
 * fminf/fmaxf, so the clamps compile to minps/maxps. */
static inline float px_rnn_expf(float x) {
    const float round_magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float t = x * 1.44269504088896341f + round_magic;
    float n = t - round_magic;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float er = p * r * r + r + 1.0f;
    /* the low mantissa bits of t hold n (offset by the magic's bits);
     * unsigned arithmetic: wraps for negative n and never overflows */
    uint32_t biased = px_rnn_f32_to_bits(t) - px_rnn_f32_to_bits(round_magic) + 127u;
    return er * px_rnn_bits_to_f32(biased << 23);
}

/* The largest of x[0..n) (-inf when n is 0), through eight running maxima
 * so that the loop vectorizes (a single running maximum is a sequential
 * dependency GCC keeps scalar). NaNs are skipped as a ternary maximum skips
 * them; callers that care check the rows themselves. */
static inline float px_rnn_row_maxf(const float *x, int64_t n) {
    float m[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                  -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int64_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (int j = 0; j < 8; j++) m[j] = x[k + j] > m[j] ? x[k + j] : m[j];
    for (; k < n; k++) m[0] = x[k] > m[0] ? x[k] : m[0];
    float mx = m[0];
    for (int j = 1; j < 8; j++) mx = m[j] > mx ? m[j] : mx;
    return mx;
}

/* tanh: an odd Taylor polynomial through x^17 for |x| < 0.55 (truncation
 * error < 1e-8 relative), 1 - 2/(e^2|x| + 1) with the sign put back above. */
static inline float px_rnn_tanhf(float x) {
    float ax = x < 0 ? -x : x;
    float x2 = x * x;
    float p = 6404582.0f / 10854718875.0f;
    p = p * x2 - 929569.0f / 638512875.0f;
    p = p * x2 + 21844.0f / 6081075.0f;
    p = p * x2 - 1382.0f / 155925.0f;
    p = p * x2 + 62.0f / 2835.0f;
    p = p * x2 - 17.0f / 315.0f;
    p = p * x2 + 2.0f / 15.0f;
    p = p * x2 - 1.0f / 3.0f;
    float small = x + x * x2 * p;
    float big = 1.0f - 2.0f / (px_rnn_expf(2.0f * ax) + 1.0f);
    big = x < 0 ? -big : big;
    return ax < 0.55f ? small : big;
}

static inline float px_rnn_sigmoidf(float x) {
    return 1.0f / (1.0f + px_rnn_expf(-x));
}

#endif
