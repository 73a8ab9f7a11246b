/* Training-mode Dropout (ai.parallax DropoutTrain / DropoutGrad, made by
 * passes/grad_dropout.c, lowered in compiler/codegen/lower_dropout_train.c).
 *
 * Element i is kept when u_i >= ratio, u_i uniform in [0, 1) from a
 * counter-based generator: u_i = top 53 bits of splitmix64 element i + 1 of
 * the stream whose state starts at hash(px_train.dropout_seed, px_train.t,
 * seed_key), with i the element's index in the global batch: rank r's
 * element i is element r*numel + i of the stream. Nothing is stored between
 * calls, so
 *  - the gradient kernel regenerates the forward's mask for the same step;
 *  - a run resumed at step t draws the masks an uninterrupted run drew;
 *  - when the batch is the tensor's leading dim, N ranks at batch b draw the
 *    masks one rank at batch N*b draws: Dropout keeps the synchronous
 *    semantics of design.md §4. (A tensor laid out otherwise, e.g. sequence
 *    first, still gets independent masks per rank, just not the same ones.)
 * In a validation pass in eval mode (px_train.eval_mode) both kernels are the
 * identity, as Dropout in PyTorch's model.eval(). */
#include "px_kernel.h"
#include "px_train.h"

#include <stdint.h>

#define GOLDEN 0x9e3779b97f4a7c15ull

/* splitmix64's output function */
static inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t stream_state(uint64_t key) {
    uint64_t z = mix64(px_train.dropout_seed + GOLDEN);
    z = mix64(z ^ ((uint64_t)px_train.t * GOLDEN));
    return mix64(z ^ key);
}

/* Index of this rank's first element in the global batch's stream; with
 * --accumulate, micro-batch i of the step holds the update's samples
 * [i*ranks*b, (i+1)*ranks*b), so the masks are those of the whole batch. */
static int64_t global_offset(int64_t n) {
    int64_t micro = px_train.accum_k > 1 ? px_train.accum_i : 0;
    return (micro * (int64_t)px_comm_size() + (int64_t)px_comm_rank()) * n;
}

/* keep element i of the stream: its uniform is >= ratio (threshold in 2^-53) */
static inline int keep(uint64_t state, int64_t i, uint64_t threshold) {
    return (mix64(state + (uint64_t)(i + 1) * GOLDEN) >> 11) >= threshold;
}

static uint64_t threshold_of(double ratio) {
    return (uint64_t)(ratio * 9007199254740992.0); /* ratio * 2^53, ratio in [0, 1) */
}

#define APPLY(T, src, dst, n, state, thr, scale, mask_store)                                       \
    do {                                                                                           \
        const T *s_ = (const T *)(src);                                                            \
        T *d_ = (T *)(dst), sc_ = (T)(scale);                                                      \
        int64_t off_ = global_offset(n);                                                           \
        for (int64_t i = 0; i < (n); i++) {                                                        \
            int k_ = keep(state, off_ + i, thr);                                                   \
            d_[i] = k_ ? s_[i] * sc_ : (T)0;                                                       \
            mask_store;                                                                            \
        }                                                                                          \
    } while (0)

/* Writes element i of the mask (bool from opset 10, the data's type before). */
static inline void store_mask(void *mask, int dtype, int64_t i, int k) {
    if (dtype == 9)
        ((uint8_t *)mask)[i] = (uint8_t)k;
    else if (dtype == 1)
        ((float *)mask)[i] = (float)k;
    else
        ((double *)mask)[i] = k;
}

/* px_k_dropout_train: output = data * mask / (1 - ratio).
 * buf: data, output, mask (NULL when absent)
 * p:   dtype (1 float, 11 double), numel, ratio (f64), seed_key, mask dtype
 *      (9 bool, or the data's; 0 when absent) */
void px_k_dropout_train(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int dtype = (int)px_kp_i64(&c);
    int64_t n = px_kp_i64(&c);
    double ratio = px_kp_f64(&c);
    uint64_t state = stream_state((uint64_t)px_kp_i64(&c)), thr = threshold_of(ratio);
    int mask_dtype = (int)px_kp_i64(&c);
    void *mask = buf[2];
    double scale = 1.0 / (1.0 - ratio);
    if (px_train.eval_mode) { /* model.eval(): the identity, every element kept */
        thr = 0;
        scale = 1;
    }
    if (dtype == 1) {
        if (mask)
            APPLY(float, buf[0], buf[1], n, state, thr, scale, store_mask(mask, mask_dtype, i, k_));
        else
            APPLY(float, buf[0], buf[1], n, state, thr, scale, (void)0);
    } else if (dtype == 11) {
        if (mask)
            APPLY(double, buf[0], buf[1], n, state, thr, scale,
                  store_mask(mask, mask_dtype, i, k_));
        else
            APPLY(double, buf[0], buf[1], n, state, thr, scale, (void)0);
    } else {
        px_rt_fail("dropout kernel: unsupported dtype %d", dtype);
    }
}

/* px_k_dropout_grad: dX = dY * mask / (1 - ratio), the mask regenerated as
 * px_k_dropout_train drew it in the same step.
 * buf: dY, dX
 * p:   dtype, numel, ratio (f64), seed_key */
void px_k_dropout_grad(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int dtype = (int)px_kp_i64(&c);
    int64_t n = px_kp_i64(&c);
    double ratio = px_kp_f64(&c);
    uint64_t state = stream_state((uint64_t)px_kp_i64(&c)), thr = threshold_of(ratio);
    double scale = 1.0 / (1.0 - ratio);
    if (px_train.eval_mode) {
        thr = 0;
        scale = 1;
    }
    if (dtype == 1)
        APPLY(float, buf[0], buf[1], n, state, thr, scale, (void)0);
    else if (dtype == 11)
        APPLY(double, buf[0], buf[1], n, state, thr, scale, (void)0);
    else
        px_rt_fail("dropout gradient kernel: unsupported dtype %d", dtype);
}

#undef APPLY
