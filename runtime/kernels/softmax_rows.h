/* One float32 softmax row with the vectorizable exp of rnn_math.h: used by
 * Softmax over a contiguous last axis (attention weights), where libm's
 * expf, called element by element, was a tenth of a Transformer step. */
#ifndef PX_SOFTMAX_ROWS_H
#define PX_SOFTMAX_ROWS_H

#include <stdint.h>

/* y[0..n) = softmax(x[0..n)). Differences below -87 from the row's maximum
 * give 0 (e^-87 is 1.6e-38: below float precision against a sum >= 1), so
 * -inf (masked) entries give exactly 0. Returns 0 without writing when the
 * maximum is not finite (NaN, inf or an all -inf row): the caller takes
 * the general path. */
int px_softmax_row_f32(const float *x, float *y, int64_t n);

#endif
