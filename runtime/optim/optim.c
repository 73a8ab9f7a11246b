/* The optimizer updates with PyTorch's semantics (px_train.h): the replica
 * updates, the PS shards and the update kernels all call these.
 *
 * Dense updates follow torch.optim's _single_tensor_* functions operation by
 * operation in float32 (optim_core.h, PX_OC_F32), so results match torch
 * bit for bit (up to the rare double rounding noted there).
 *
 * Row updates apply the same per-element update to the touched rows only
 * (lazy: an untouched row, its momentum and its Adam moments stay exactly as
 * they were). For SGD, momentum and Adagrad a touched row gets precisely the
 * dense arithmetic, so with every row touched px_optim_rows equals
 * px_optim_dense bit for bit. Adam rows use torch.optim.SparseAdam's
 * arithmetic (m += (1-b1)*(g-m), eps added to sqrt(v) before the bias
 * correction is folded into the step size) with the global step t, plus
 * weight decay on the touched rows' gradient (SparseAdam has none; we add
 * it as torch.optim.Adam does). With every row touched this differs from
 * dense Adam by rounding and in that eps acts as eps/sqrt(1-b2^t) (it is
 * added before the bias correction of v rather than after).
 *
 * AdamW is torch.optim.AdamW: the weight is first multiplied by
 * 1 - lr*weight_decay (decoupled decay), then Adam's step runs without
 * decay in the gradient. RMSprop is torch.optim.RMSprop with momentum 0 and
 * centered off (square_avg = alpha*square_avg + (1-alpha)*g*g; w -= lr *
 * g / (sqrt(square_avg) + eps)), weight decay added to the gradient. Their
 * row updates are the dense arithmetic on the touched rows (AdamW with the
 * global step's bias corrections), so with every row touched they equal the
 * dense update bit for bit.
 *
 * The gradient must not overlap the variable or the slots (the loops are
 * restrict-qualified so they vectorize without run-time overlap checks). */
/* Vectorization: the SGD and momentum loops vectorize at -O3; the Adam and
 * Adagrad loops need -fno-math-errno as well (GCC keeps an errno check around
 * each sqrt otherwise, and `#pragma GCC optimize("no-math-errno")` does not
 * reach the sqrt builtin in GCC 12). */
#include "optim_internal.h"

#include "optim_core.h"
#include "kernels/thread_pool.h"
#include "px_kernel.h"

#include <math.h>

#define F32 PX_OC_F32

int px_optim_n_slots(int64_t kind) {
    return px_optim_kind_slots(kind);
}

/* The scalars of one step, rounded to float as torch casts them. */
typedef struct step_k {
    int64_t kind;
    int has_wd, nesterov;
    double wd, neg_lr, mu, eps;
    int has_keep;
    double keep;            /* AdamW: the weight's factor 1 - lr*wd */
    double rms_a, rms_c;    /* RMSprop: alpha, 1 - alpha */
    px_oc_adam_k adam;      /* dense Adam */
    px_oc_adam_k adam_lazy; /* SparseAdam */
} step_k;

static double f32(double x) {
    return (double)(float)x;
}

static void step_init(step_k *k, const px_optim_desc *o, int64_t t) {
    int n_slots = px_optim_n_slots(o->kind);
    if (n_slots < 0) px_rt_fail("optimizer: unknown kind %lld", (long long)o->kind);
    if (t < 1) px_rt_fail("optimizer: step %lld (steps count from 1)", (long long)t);
    *k = (step_k){.kind = o->kind};
    /* AdamW's decay is decoupled: not in the gradient */
    k->has_wd = o->weight_decay != 0 && o->kind != PX_OPTIM_ADAMW;
    k->wd = f32(o->weight_decay);
    /* Adagrad: clr = lr / (1 + (t-1)*lr_decay) with lr_decay 0 is lr. */
    double lr = px_optim_lr(o);
    k->neg_lr = f32(-lr);
    k->mu = f32(o->momentum);
    k->nesterov = o->nesterov != 0;
    k->eps = f32(o->epsilon);
    if (o->kind == PX_OPTIM_ADAMW && o->weight_decay != 0) {
        k->has_keep = 1;
        k->keep = f32(1 - lr * o->weight_decay);
    }
    if (o->kind == PX_OPTIM_RMSPROP) {
        k->rms_a = f32(o->alpha);
        k->rms_c = f32(1 - o->alpha);
    }
    if (o->kind == PX_OPTIM_ADAM || o->kind == PX_OPTIM_ADAMW) {
        /* Python floats, as in torch: bias corrections in double. */
        double bc1 = 1 - pow(o->beta1, (double)t), bc2 = 1 - pow(o->beta2, (double)t);
        px_oc_adam_k a = {.b1 = f32(o->beta1),
                          .c1 = f32(1 - o->beta1),
                          .b2 = f32(o->beta2),
                          .c2 = f32(1 - o->beta2),
                          .eps = f32(o->epsilon),
                          .post_scale = 1};
        k->adam = a;
        k->adam.neg_step = f32(-(lr / bc1));
        k->adam.denom_scale = f32(sqrt(bc2));
        k->adam_lazy = a;
        k->adam_lazy.neg_step = f32(-(lr * sqrt(bc2) / bc1));
        k->adam_lazy.denom_scale = 1;
    }
}

/* ---- spans: n consecutive elements of w, g and the slots ----
 * The *_body functions take their flags as constants from the dispatchers
 * below, so every combination compiles to its own branch-free loop. */

PX_OC_INLINE double grad_of(const step_k *k, int has_wd, float g, float x) {
    return has_wd ? px_oc_decay(F32, g, x, k->wd) : g;
}

PX_OC_INLINE void sgd_body(const step_k *k, int has_wd, float *restrict w, const float *restrict g,
                           int64_t n) {
    const double neg_lr = k->neg_lr;
    for (int64_t j = 0; j < n; j++)
        w[j] = (float)px_oc_sgd(F32, w[j], grad_of(k, has_wd, g[j], w[j]), neg_lr);
}

PX_OC_INLINE void momentum_body(const step_k *k, int has_wd, int nesterov, float *restrict w,
                                float *restrict v, const float *restrict g, int64_t n) {
    const double neg_lr = k->neg_lr, mu = k->mu;
    for (int64_t j = 0; j < n; j++) {
        double x, vn;
        px_oc_momentum(F32, w[j], grad_of(k, has_wd, g[j], w[j]), v[j], mu, 1, neg_lr, nesterov, &x,
                       &vn);
        w[j] = (float)x;
        v[j] = (float)vn;
    }
}

PX_OC_INLINE void adagrad_body(const step_k *k, int has_wd, float *restrict w, float *restrict h,
                               const float *restrict g, int64_t n) {
    const double neg_lr = k->neg_lr, eps = k->eps;
    for (int64_t j = 0; j < n; j++) {
        double x, hn;
        px_oc_adagrad(F32, w[j], grad_of(k, has_wd, g[j], w[j]), h[j], neg_lr, eps, &x, &hn);
        w[j] = (float)x;
        h[j] = (float)hn;
    }
}

PX_OC_INLINE void adam_body(const step_k *k, int has_wd, int lazy, float *restrict w,
                            float *restrict m, float *restrict v, const float *restrict g,
                            int64_t n) {
    const px_oc_adam_k a = lazy ? k->adam_lazy : k->adam;
    for (int64_t j = 0; j < n; j++) {
        double x, mn, vn, gj = grad_of(k, has_wd, g[j], w[j]);
        if (lazy)
            px_oc_adam_lazy(F32, &a, w[j], gj, m[j], v[j], &x, &mn, &vn);
        else
            px_oc_adam(F32, &a, w[j], gj, m[j], v[j], &x, &mn, &vn);
        w[j] = (float)x;
        m[j] = (float)mn;
        v[j] = (float)vn;
    }
}

/* AdamW: the decoupled decay, then Adam's dense arithmetic (rows too). */
PX_OC_INLINE void adamw_body(const step_k *k, int has_keep, float *restrict w, float *restrict m,
                             float *restrict v, const float *restrict g, int64_t n) {
    const px_oc_adam_k a = k->adam;
    const double keep = k->keep;
    for (int64_t j = 0; j < n; j++) {
        double x = has_keep ? px_oc_mul(F32, w[j], keep) : w[j], xn, mn, vn;
        px_oc_adam(F32, &a, x, g[j], m[j], v[j], &xn, &mn, &vn);
        w[j] = (float)xn;
        m[j] = (float)mn;
        v[j] = (float)vn;
    }
}

/* RMSprop: s' = alpha*s + (1-alpha)*g*g;  x' = x - lr*g/(sqrt(s') + eps). */
PX_OC_INLINE void rmsprop_body(const step_k *k, int has_wd, float *restrict w, float *restrict s,
                               const float *restrict g, int64_t n) {
    const double neg_lr = k->neg_lr, eps = k->eps, a = k->rms_a, c = k->rms_c;
    for (int64_t j = 0; j < n; j++) {
        double gj = grad_of(k, has_wd, g[j], w[j]);
        double sn = px_oc_addcmul(F32, px_oc_mul(F32, a, s[j]), c, gj, gj);
        w[j] =
            (float)px_oc_addcdiv(F32, w[j], neg_lr, gj, px_oc_add(F32, px_oc_sqrt(F32, sn), eps));
        s[j] = (float)sn;
    }
}

static void sgd_span(const step_k *k, float *w, const float *g, int64_t n) {
    if (k->has_wd)
        sgd_body(k, 1, w, g, n);
    else
        sgd_body(k, 0, w, g, n);
}

static void momentum_span(const step_k *k, float *w, float *v, const float *g, int64_t n) {
    if (k->has_wd) {
        if (k->nesterov)
            momentum_body(k, 1, 1, w, v, g, n);
        else
            momentum_body(k, 1, 0, w, v, g, n);
    } else {
        if (k->nesterov)
            momentum_body(k, 0, 1, w, v, g, n);
        else
            momentum_body(k, 0, 0, w, v, g, n);
    }
}

static void adagrad_span(const step_k *k, float *w, float *h, const float *g, int64_t n) {
    if (k->has_wd)
        adagrad_body(k, 1, w, h, g, n);
    else
        adagrad_body(k, 0, w, h, g, n);
}

static void adam_span(const step_k *k, int lazy, float *w, float *m, float *v, const float *g,
                      int64_t n) {
    if (lazy) {
        if (k->has_wd)
            adam_body(k, 1, 1, w, m, v, g, n);
        else
            adam_body(k, 0, 1, w, m, v, g, n);
    } else {
        if (k->has_wd)
            adam_body(k, 1, 0, w, m, v, g, n);
        else
            adam_body(k, 0, 0, w, m, v, g, n);
    }
}

static void adamw_span(const step_k *k, float *w, float *m, float *v, const float *g, int64_t n) {
    if (k->has_keep)
        adamw_body(k, 1, w, m, v, g, n);
    else
        adamw_body(k, 0, w, m, v, g, n);
}

static void rmsprop_span(const step_k *k, float *w, float *s, const float *g, int64_t n) {
    if (k->has_wd)
        rmsprop_body(k, 1, w, s, g, n);
    else
        rmsprop_body(k, 0, w, s, g, n);
}

/* One span of the update: slots s0, s1 point at the span's first element. */
static void span(const step_k *k, int lazy, float *w, float *s0, float *s1, const float *g,
                 int64_t n) {
    switch (k->kind) {
    case PX_OPTIM_SGD: sgd_span(k, w, g, n); break;
    case PX_OPTIM_MOMENTUM: momentum_span(k, w, s0, g, n); break;
    case PX_OPTIM_ADAGRAD: adagrad_span(k, w, s0, g, n); break;
    case PX_OPTIM_ADAM: adam_span(k, lazy, w, s0, s1, g, n); break;
    case PX_OPTIM_ADAMW: adamw_span(k, w, s0, s1, g, n); break;
    case PX_OPTIM_RMSPROP: rmsprop_span(k, w, s0, g, n); break;
    }
}

/* The slots the kind uses (the others are not read: a caller may pass an
 * array of just those); a missing one ends the run. */
static void get_slots(const step_k *k, float *const slots[PX_OPTIM_MAX_SLOTS],
                      float *out[PX_OPTIM_MAX_SLOTS]) {
    int n = px_optim_n_slots(k->kind);
    for (int s = 0; s < PX_OPTIM_MAX_SLOTS; s++) {
        out[s] = s < n && slots ? slots[s] : NULL;
        if (s < n && !out[s])
            px_rt_fail("optimizer: state slot %d of a kind %lld update is missing", s,
                       (long long)k->kind);
    }
}

double px_optim_lr(const px_optim_desc *o) {
    return px_train.lr_override ? px_train.lr : o->lr;
}

void px_optim_setup(const px_program_desc *p) {
    px_train.no_decay_optim = *p->optim;
    px_train.no_decay_optim.weight_decay = 0;
}

const px_optim_desc *px_optim_of_var(const px_program_desc *p, int64_t var) {
    if (!p->vars[var].no_decay || p->optim->weight_decay == 0) return p->optim;
    if (px_train.no_decay_optim.kind != p->optim->kind ||
        px_train.no_decay_optim.lr != p->optim->lr)
        px_rt_fail("optimizer: px_optim_setup was not called for this program");
    return &px_train.no_decay_optim;
}

typedef struct dense_job {
    const step_k *k;
    float *w, *s0, *s1;
    const float *g;
} dense_job;

/* Elements [lo, hi) of a dense update: each element's update reads only
 * that element, so any split over threads gives the same bits. */
static void dense_range(void *ctx, int64_t lo, int64_t hi) {
    const dense_job *j = ctx;
    span(j->k, 0, j->w + lo, j->s0 ? j->s0 + lo : NULL, j->s1 ? j->s1 + lo : NULL, j->g + lo,
         hi - lo);
}

void px_optim_dense_now(const px_optim_desc *o, int64_t t, float *w, const float *g,
                        float *const slots[PX_OPTIM_MAX_SLOTS], int64_t n) {
    step_k k;
    step_init(&k, o, t);
    float *s[PX_OPTIM_MAX_SLOTS];
    get_slots(&k, slots, s);
    dense_job j = {&k, w, s[0], s[1], g};
    /* pieces of 16k elements, starting at multiples of 64 (whole vectors) */
    px_parallel_for(n, (int64_t)1 << 14, dense_range, &j);
}

void px_optim_rows_now(const px_optim_desc *o, int64_t t, float *w,
                       float *const slots[PX_OPTIM_MAX_SLOTS], int64_t dim, const int64_t *rows,
                       const float *g, int64_t n_rows, int g_by_row) {
    step_k k;
    step_init(&k, o, t);
    float *s[PX_OPTIM_MAX_SLOTS];
    get_slots(&k, slots, s);
    for (int64_t i = 0; i < n_rows; i++) {
        int64_t off = rows[i] * dim;
        span(&k, 1, w + off, s[0] ? s[0] + off : NULL, s[1] ? s[1] + off : NULL,
             g + (g_by_row ? off : i * dim), dim);
    }
}
