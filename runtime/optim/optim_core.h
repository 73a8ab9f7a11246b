/* Elementwise cores of the optimizer updates, shared by the PyTorch-semantics
 * updates of optim.c (px_optim_*) and the ONNX ai.onnx.preview.training
 * kernels (kernels/training.c).
 *
 * A core works on one element; values travel as double and `a` (always a
 * compile-time constant at the call site) picks the arithmetic:
 *   PX_OC_F64  every operation in double, rounded once per operation
 *              (the ONNX kernels: "arithmetic in double whatever the dtype");
 *   PX_OC_F32  float32 operations, as PyTorch's CPU kernels do; operands
 *              must be float values (scalars rounded with px_oc_round, as
 *              PyTorch casts Python floats to the tensor dtype).
 * px_oc_madd is where the two differ most: PyTorch's AVX2 kernels compute
 * add(alpha) and addcmul with one fused multiply-add (checked against torch
 * 1.13 here); F32 mode does the same (exact product in double, one rounding
 * of the sum to double and then to float: off by one ulp only when the double
 * sum lands exactly halfway between two floats, about one inexact sum in
 * 2^29), F64 mode rounds the product and the sum, as the ONNX kernels always
 * did.
 *
 * The formulas are written so that both families are instances: ONNX's
 * Momentum and torch.optim.SGD share px_oc_momentum, ONNX's Adagrad and
 * torch.optim.Adagrad share px_oc_adagrad, ONNX's Adam and torch.optim.Adam
 * share px_oc_adam (ONNX: denom_scale 1; torch: post_scale 1). */
#ifndef PX_OPTIM_CORE_H
#define PX_OPTIM_CORE_H

#include <math.h>

typedef enum px_oc_arith { PX_OC_F64 = 0, PX_OC_F32 = 1 } px_oc_arith;

#define PX_OC_INLINE static inline __attribute__((always_inline))

PX_OC_INLINE double px_oc_round(px_oc_arith a, double x) {
    return a == PX_OC_F32 ? (double)(float)x : x;
}

/* In F32 mode the operands are float values travelling as double, so the
 * casts to float are exact; GCC folds the float -> double -> float round
 * trips between operations away and the chains run on float lanes. */
PX_OC_INLINE double px_oc_add(px_oc_arith a, double x, double y) {
    return a == PX_OC_F32 ? (double)((float)x + (float)y) : x + y;
}

PX_OC_INLINE double px_oc_sub(px_oc_arith a, double x, double y) {
    return a == PX_OC_F32 ? (double)((float)x - (float)y) : x - y;
}

PX_OC_INLINE double px_oc_mul(px_oc_arith a, double x, double y) {
    return a == PX_OC_F32 ? (double)((float)x * (float)y) : x * y;
}

PX_OC_INLINE double px_oc_div(px_oc_arith a, double x, double y) {
    return a == PX_OC_F32 ? (double)((float)x / (float)y) : x / y;
}

PX_OC_INLINE double px_oc_sqrt(px_oc_arith a, double x) {
    return a == PX_OC_F32 ? (double)sqrtf((float)x) : sqrt(x);
}

/* x*y + z: fused in F32 (torch's add(alpha)), two roundings in F64. The
 * translation units are C11 without extensions, so GCC does not contract the
 * F64 expression into an FMA behind our back. */
PX_OC_INLINE double px_oc_madd(px_oc_arith a, double x, double y, double z) {
    return a == PX_OC_F32 ? (double)(float)((double)(float)x * (double)(float)y + (double)(float)z)
                          : x * y + z;
}

/* s + c*x*y (torch's addcmul: fused in F32; ONNX: s + (c*x)*y). */
PX_OC_INLINE double px_oc_addcmul(px_oc_arith a, double s, double c, double x, double y) {
    return a == PX_OC_F32 ? px_oc_madd(a, px_oc_mul(a, c, x), y, s) : s + px_oc_mul(a, c, x) * y;
}

/* s + c*x/y as torch's addcdiv and ONNX's "X - r*G/d" (c = -r; negation
 * commutes exactly with * and /, so both orders give the same bits). */
PX_OC_INLINE double px_oc_addcdiv(px_oc_arith a, double s, double c, double x, double y) {
    return px_oc_add(a, s, px_oc_div(a, px_oc_mul(a, c, x), y));
}

/* g + wd*x: the L2 regulariser's gradient (ONNX norm_coefficient, torch
 * weight_decay). torch skips it when wd is 0; ONNX always adds it. */
PX_OC_INLINE double px_oc_decay(px_oc_arith a, double g, double x, double wd) {
    return px_oc_madd(a, x, wd, g);
}

/* Momentum: v' = mu*v + beta*g;  x' = x + neg_lr*(nesterov ? g + mu*v' : v').
 * torch SGD (dampening 0): beta 1, and a zero-initialised v gives torch's
 * first step (buf = g). ONNX Momentum: beta is 1 at T == 0. */
PX_OC_INLINE void px_oc_momentum(px_oc_arith a, double x, double g, double v, double mu,
                                 double beta, double neg_lr, int nesterov, double *x_new,
                                 double *v_new) {
    double vn = px_oc_add(a, px_oc_mul(a, mu, v), px_oc_mul(a, beta, g));
    double d = nesterov ? px_oc_madd(a, vn, mu, g) : vn;
    *x_new = px_oc_madd(a, d, neg_lr, x);
    *v_new = vn;
}

/* Plain SGD: x' = x + neg_lr*g. */
PX_OC_INLINE double px_oc_sgd(px_oc_arith a, double x, double g, double neg_lr) {
    return px_oc_madd(a, g, neg_lr, x);
}

/* Adagrad: h' = h + g*g;  x' = x + neg_lr*g/(sqrt(h') + eps). */
PX_OC_INLINE void px_oc_adagrad(px_oc_arith a, double x, double g, double h, double neg_lr,
                                double eps, double *x_new, double *h_new) {
    double hn = px_oc_addcmul(a, h, 1, g, g);
    *x_new = px_oc_addcdiv(a, x, neg_lr, g, px_oc_add(a, px_oc_sqrt(a, hn), eps));
    *h_new = hn;
}

/* Adam's coefficients for one step (the bias corrections already folded in). */
typedef struct px_oc_adam_k {
    double b1, c1;      /* m' = b1*m + c1*g   (c1 = 1 - b1) */
    double b2, c2;      /* v' = b2*v + c2*g*g (c2 = 1 - b2) */
    double neg_step;    /* torch: -lr/(1 - b1^t); ONNX: -R*sqrt(1 - b2^T)/(1 - b1^T) */
    double denom_scale; /* torch: sqrt(1 - b2^t); ONNX: 1 */
    double eps;
    double post_scale; /* ONNX: 1 - norm_coefficient_post; torch: 1 */
} px_oc_adam_k;

/* Adam: m' = b1*m + c1*g, v' = b2*v + c2*g*g,
 * x' = post_scale*(x + neg_step*m'/(sqrt(v')/denom_scale + eps)). */
PX_OC_INLINE void px_oc_adam(px_oc_arith a, const px_oc_adam_k *k, double x, double g, double m,
                             double v, double *x_new, double *m_new, double *v_new) {
    double mn = px_oc_madd(a, g, k->c1, px_oc_mul(a, k->b1, m));
    double vn = px_oc_addcmul(a, px_oc_mul(a, k->b2, v), k->c2, g, g);
    double den = px_oc_add(a, px_oc_div(a, px_oc_sqrt(a, vn), k->denom_scale), k->eps);
    *x_new = px_oc_mul(a, k->post_scale, px_oc_addcdiv(a, x, k->neg_step, mn, den));
    *m_new = mn;
    *v_new = vn;
}

/* Lazy (row) Adam, torch.optim.SparseAdam's arithmetic:
 * m' = m + c1*(g - m), v' = v + c2*(g*g - v),
 * x' = x + neg_step*(m'/(sqrt(v') + eps)) with neg_step = -lr*sqrt(1 - b2^t)/(1 - b1^t). */
PX_OC_INLINE void px_oc_adam_lazy(px_oc_arith a, const px_oc_adam_k *k, double x, double g,
                                  double m, double v, double *x_new, double *m_new, double *v_new) {
    double mn = px_oc_add(a, m, px_oc_mul(a, px_oc_sub(a, g, m), k->c1));
    double vn = px_oc_add(a, v, px_oc_mul(a, px_oc_sub(a, px_oc_mul(a, g, g), v), k->c2));
    double den = px_oc_add(a, px_oc_sqrt(a, vn), k->eps);
    *x_new = px_oc_add(a, x, px_oc_mul(a, k->neg_step, px_oc_div(a, mn, den)));
    *m_new = mn;
    *v_new = vn;
}

#endif
