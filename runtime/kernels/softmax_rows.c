/* Vectorizable float32 softmax rows (softmax_rows.h). Nothing here reads
 * the floating-point exception flags; without this GCC keeps the clamps of
 * px_rnn_expf as branches and the row loop scalar. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "softmax_rows.h"

#include "rnn_math.h"

#include <math.h>

PX_VEC_CLONES int px_softmax_row_f32(const float *x, float *y, int64_t n) {
    float mx = px_rnn_row_maxf(x, n);
    if (!(mx > -INFINITY && mx < INFINITY)) return 0;
    float acc[8] = {0};
    int64_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (int j = 0; j < 8; j++) {
            float d = x[k + j] - mx, e = d < -87.0f ? 0.0f : px_rnn_expf(d);
            y[k + j] = e;
            acc[j] += e;
        }
    double sum = 0;
    for (; k < n; k++) {
        float d = x[k] - mx;
        y[k] = d < -87.0f ? 0.0f : px_rnn_expf(d);
        sum += y[k];
    }
    for (int j = 0; j < 8; j++) sum += acc[j];
    float inv = (float)(1.0 / sum);
    for (k = 0; k < n; k++) y[k] *= inv;
    return 1;
}
