/* Kernels of the training family: the ai.onnx.preview.training optimizers
 * Adagrad, Momentum and Adam (see px_kernel.h for the ABI).
 *
 * One node updates n tensors. Every kernel takes
 * buf: R, T, X_1..X_n, G_1..G_n, the state groups (Adagrad: H_1..H_n;
 *      Momentum: V_1..V_n; Adam: V_1..V_n, H_1..H_n), then the outputs in
 *      ONNX order: X_new_1..X_new_n, then each new state group.
 * p:   tensor R, tensor T, the op's attributes (listed at each kernel), n,
 *      tensor X_i for each i (G_i, the states and the outputs of i share
 *      X_i's dtype and shape: float or double).
 * R (float or double) and T (int64) are scalars. The update is elementwise
 * and reads every input of element j before writing any output of element
 * j, so outputs may share buffers with inputs (an in-place update).
 * Arithmetic is in double whatever the dtype, through the elementwise cores
 * that the PyTorch-semantics updates also use (optim/optim_core.h,
 * PX_OC_F64). */
#include "optim/optim_core.h"
#include "px_enums.h"
#include "px_kernel.h"

#include <math.h>
#include <stdint.h>

enum { F32 = 1, F64 = 11, MAX_STATES = 2 };

/* Scalars of one call, resolved from R, T and the attributes. */
typedef struct update {
    px_optim_kind op;                           /* ADAGRAD, MOMENTUM or ADAM: the ONNX ops */
    double rate;                                /* Adagrad: decayed; Adam: bias-corrected */
    double norm, alpha, beta, eps, post, decay; /* what each op uses */
    int nesterov;
    px_oc_adam_k adam; /* Adam's coefficients, from the above */
} update;

static inline double load(const void *p, int dtype, int64_t i) {
    return dtype == F64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}

static inline void store(void *p, int dtype, int64_t i, double v) {
    if (dtype == F64)
        ((double *)p)[i] = v;
    else
        ((float *)p)[i] = (float)v;
}

/* Element j of one tensor: x, g and the states in; x_new and the new states out. */
static inline void update_one(const update *u, double x, double g, const double *st, double *x_new,
                              double *st_new) {
    g = px_oc_decay(PX_OC_F64, g, x, u->norm); /* gradient of the L2 regulariser added */
    switch (u->op) {
    case PX_OPTIM_ADAGRAD:
        px_oc_adagrad(PX_OC_F64, x, g, st[0], -u->rate, u->eps, x_new, &st_new[0]);
        break;
    case PX_OPTIM_MOMENTUM:
        px_oc_momentum(PX_OC_F64, x, g, st[0], u->alpha, u->beta, -u->rate, u->nesterov, x_new,
                       &st_new[0]);
        break;
    case PX_OPTIM_ADAM:
        px_oc_adam(PX_OC_F64, &u->adam, x, g, st[0], st[1], x_new, &st_new[0], &st_new[1]);
        break;
    case PX_OPTIM_SGD:
    case PX_OPTIM_ADAMW:
    case PX_OPTIM_RMSPROP:
    case PX_OPTIM_COUNT: break; /* no ONNX training op */
    }
}

/* Runs the update over the n tensors; u->rate still holds R. */
static void run(update *u, int n_states, void *const *buf, px_kcur *c) {
    int64_t n = px_kp_i64(c);
    int64_t step = *(const int64_t *)buf[1];
    switch (u->op) {
    case PX_OPTIM_ADAGRAD: u->rate = u->rate / (1 + (double)step * u->decay); break;
    case PX_OPTIM_MOMENTUM:
        if (step <= 0) u->beta = 1; /* the first step takes the whole gradient */
        break;
    case PX_OPTIM_ADAM:
        if (step > 0)
            u->rate =
                u->rate * sqrt(1 - pow(u->beta, (double)step)) / (1 - pow(u->alpha, (double)step));
        u->adam = (px_oc_adam_k){.b1 = u->alpha,
                                 .c1 = 1 - u->alpha,
                                 .b2 = u->beta,
                                 .c2 = 1 - u->beta,
                                 .neg_step = -u->rate,
                                 .denom_scale = 1,
                                 .eps = u->eps,
                                 .post_scale = 1 - u->post};
        break;
    case PX_OPTIM_SGD:
    case PX_OPTIM_ADAMW:
    case PX_OPTIM_RMSPROP:
    case PX_OPTIM_COUNT: break; /* no ONNX training op */
    }
    int64_t groups_in = 2 + n_states; /* X, G, states */
    for (int64_t i = 0; i < n; i++) {
        px_kt t = px_kp_tensor(c);
        const void *x = buf[2 + i], *g = buf[2 + n + i];
        const void *st[MAX_STATES] = {0};
        void *x_out = buf[2 + groups_in * n + i], *st_out[MAX_STATES] = {0};
        for (int k = 0; k < n_states; k++) {
            st[k] = buf[2 + (2 + k) * n + i];
            st_out[k] = buf[2 + (groups_in + 1 + k) * n + i];
        }
        if (t.dtype != F32 && t.dtype != F64)
            px_rt_fail("optimizer kernel: unsupported dtype %d", t.dtype);
        for (int64_t j = 0; j < t.numel; j++) {
            double s_in[MAX_STATES] = {0}, s_new[MAX_STATES] = {0}, x_new = 0;
            for (int k = 0; k < n_states; k++) s_in[k] = load(st[k], t.dtype, j);
            update_one(u, load(x, t.dtype, j), load(g, t.dtype, j), s_in, &x_new, s_new);
            if (x_out) store(x_out, t.dtype, j, x_new);
            for (int k = 0; k < n_states; k++)
                if (st_out[k]) store(st_out[k], t.dtype, j, s_new[k]);
        }
    }
}

/* Reads R (and skips T's descriptor). */
static double read_rate(px_kcur *c, void *const *buf) {
    px_kt r = px_kp_tensor(c);
    (void)px_kp_tensor(c);
    return load(buf[0], r.dtype, 0);
}

/* Adagrad. Attributes in p: decay_factor, epsilon, norm_coefficient (f64).
 *   r = R / (1 + T*decay_factor),  G' = norm_coefficient*X + G,
 *   H_new = H + G'^2,  X_new = X - r*G' / (sqrt(H_new) + epsilon) */
void px_k_adagrad(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    update u = {.op = PX_OPTIM_ADAGRAD};
    u.rate = read_rate(&c, buf);
    u.decay = px_kp_f64(&c);
    u.eps = px_kp_f64(&c);
    u.norm = px_kp_f64(&c);
    run(&u, 1, buf, &c);
}

/* Momentum. Attributes in p: alpha, beta, norm_coefficient (f64), mode
 * (0 standard, 1 nesterov).
 *   G' = norm_coefficient*X + G,  V_new = alpha*V + beta'*G' (beta' = 1 when
 *   T == 0, else beta),  X_new = X - R*V_new (standard) or
 *   X - R*(G' + alpha*V_new) (nesterov) */
void px_k_momentum(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    update u = {.op = PX_OPTIM_MOMENTUM};
    u.rate = read_rate(&c, buf);
    u.alpha = px_kp_f64(&c);
    u.beta = px_kp_f64(&c);
    u.norm = px_kp_f64(&c);
    u.nesterov = px_kp_i64(&c) != 0;
    run(&u, 1, buf, &c);
}

/* Adam. Attributes in p: alpha, beta, epsilon, norm_coefficient,
 * norm_coefficient_post (f64).
 *   G' = norm_coefficient*X + G,  V_new = alpha*V + (1-alpha)*G',
 *   H_new = beta*H + (1-beta)*G'^2,
 *   r = T > 0 ? R*sqrt(1 - beta^T)/(1 - alpha^T) : R,
 *   X_new = (1 - norm_coefficient_post)*(X - r*V_new/(sqrt(H_new) + epsilon)) */
void px_k_adam(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    update u = {.op = PX_OPTIM_ADAM};
    u.rate = read_rate(&c, buf);
    u.alpha = px_kp_f64(&c);
    u.beta = px_kp_f64(&c);
    u.eps = px_kp_f64(&c);
    u.norm = px_kp_f64(&c);
    u.post = px_kp_f64(&c);
    run(&u, 2, buf, &c);
}
