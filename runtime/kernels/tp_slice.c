/* Kernels of tensor parallelism's weight slices (--tp K; the compiler's
 * passes/tensor_parallel.c). A rank's place in its group is t = rank mod K;
 * the full tensor is seen as [outer, K * slab, inner] and the slice as
 * [outer, slab, inner].
 *   px_k_tp_slice       buf {full, part}  p {outer, slab, inner, tp}: part = slab t
 *   px_k_tp_slice_grad  buf {part, full}  p {outer, slab, inner, tp}: full = 0 but
 *        slab t = K * part: the mean over all ranks of the data-parallel AllReduce
 *        is then the mean over groups of each slab's gradient. */
#include "px_kernel.h"
#include "px_train.h"

#include <string.h>

typedef struct tp_view {
    int64_t outer, slab, inner, tp, t;
} tp_view;

static tp_view read_view(const int64_t *p) {
    px_kcur c = {p};
    tp_view v;
    v.outer = px_kp_i64(&c);
    v.slab = px_kp_i64(&c);
    v.inner = px_kp_i64(&c);
    v.tp = px_kp_i64(&c);
    if (v.tp < 1 || px_comm_size() % v.tp != 0)
        px_rt_fail("--tp %lld: the program runs on %d ranks, not a multiple of %lld",
                   (long long)v.tp, px_comm_size(), (long long)v.tp);
    v.t = px_comm_rank() % v.tp;
    return v;
}

void px_k_tp_slice(void *const *buf, const int64_t *p) {
    tp_view v = read_view(p);
    const float *full = buf[0];
    float *part = buf[1];
    size_t run = sizeof(float) * (size_t)(v.slab * v.inner);
    for (int64_t o = 0; o < v.outer; o++)
        memcpy(part + o * v.slab * v.inner, full + (o * v.tp + v.t) * v.slab * v.inner, run);
}

void px_k_tp_slice_grad(void *const *buf, const int64_t *p) {
    tp_view v = read_view(p);
    const float *part = buf[0];
    float *full = buf[1];
    float k = (float)v.tp;
    memset(full, 0, sizeof(float) * (size_t)(v.outer * v.tp * v.slab * v.inner));
    for (int64_t o = 0; o < v.outer; o++) {
        const float *src = part + o * v.slab * v.inner;
        float *dst = full + (o * v.tp + v.t) * v.slab * v.inner;
        for (int64_t i = 0; i < v.slab * v.inner; i++) dst[i] = k * src[i];
    }
}
