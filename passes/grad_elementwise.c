/* Gradient rules of the elementwise ops, written with ONNX elementwise ops
 * so the code generator fuses them into the loops around them. Broadcast
 * inputs are reduced back to their shapes by px_ad_accum. */
#include "grad_internal.h"

#include <math.h>

static px_value *in(const px_node *n, int i) {
    return n->inputs[i];
}

static px_value *zero_like(px_ad *a, const px_value *x) {
    return px_ad_scalar(a, x->dtype, 0.0);
}

int px_grad_add(px_ad *a, px_node *n, px_value *const *dy) {
    return px_ad_accum(a, n, 0, dy[0]) || px_ad_accum(a, n, 1, dy[0]);
}

int px_grad_sub(px_ad *a, px_node *n, px_value *const *dy) {
    if (px_ad_accum(a, n, 0, dy[0])) return -1;
    return px_ad_wants(a, n, 1) ? px_ad_accum(a, n, 1, px_ad_1(a, "Neg", dy[0])) : 0;
}

int px_grad_mul(px_ad *a, px_node *n, px_value *const *dy) {
    if (px_ad_wants(a, n, 0) && px_ad_accum(a, n, 0, px_ad_2(a, "Mul", dy[0], in(n, 1)))) return -1;
    if (px_ad_wants(a, n, 1) && px_ad_accum(a, n, 1, px_ad_2(a, "Mul", dy[0], in(n, 0)))) return -1;
    return 0;
}

/* y = x0 / x1: dx0 = dy / x1, dx1 = -dy * y / x1. */
int px_grad_div(px_ad *a, px_node *n, px_value *const *dy) {
    if (px_ad_wants(a, n, 0) && px_ad_accum(a, n, 0, px_ad_2(a, "Div", dy[0], in(n, 1)))) return -1;
    if (px_ad_wants(a, n, 1)) {
        px_value *t = px_ad_2(a, "Div", px_ad_2(a, "Mul", dy[0], n->outputs[0]), in(n, 1));
        if (px_ad_accum(a, n, 1, px_ad_1(a, "Neg", t))) return -1;
    }
    return 0;
}

int px_grad_neg(px_ad *a, px_node *n, px_value *const *dy) {
    return px_ad_accum(a, n, 0, px_ad_1(a, "Neg", dy[0]));
}

/* Identity, and Expand: px_ad_accum sums over the expanded dims. */
int px_grad_identity(px_ad *a, px_node *n, px_value *const *dy) {
    return px_ad_accum(a, n, 0, dy[0]);
}

/* StopGradient: the input gets nothing (its value passes, its gradient does not). */
int px_grad_stop_gradient(px_ad *a, px_node *n, px_value *const *dy) {
    (void)a;
    (void)n;
    (void)dy;
    return 0;
}

int px_grad_abs(px_ad *a, px_node *n, px_value *const *dy) {
    return px_ad_accum(a, n, 0, px_ad_2(a, "Mul", dy[0], px_ad_1(a, "Sign", in(n, 0))));
}

int px_grad_exp(px_ad *a, px_node *n, px_value *const *dy) {
    return px_ad_accum(a, n, 0, px_ad_2(a, "Mul", dy[0], n->outputs[0]));
}

int px_grad_log(px_ad *a, px_node *n, px_value *const *dy) {
    return px_ad_accum(a, n, 0, px_ad_2(a, "Div", dy[0], in(n, 0)));
}

/* d sqrt(x) = dy * 0.5 / y */
int px_grad_sqrt(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *y = n->outputs[0];
    px_value *half = px_ad_2(a, "Mul", dy[0], px_ad_scalar(a, y->dtype, 0.5));
    return px_ad_accum(a, n, 0, px_ad_2(a, "Div", half, y));
}

/* dx = where(x > 0, dy, 0): the subgradient 0 at x == 0, as PyTorch. */
int px_grad_relu(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = in(n, 0);
    px_value *pos = px_ad_2(a, "Greater", x, zero_like(a, x));
    if (!pos) return -1;
    px_value *args[3] = {pos, dy[0], zero_like(a, x)};
    return px_ad_accum(a, n, 0, px_ad_done(a, px_ad_op(a, "Where", "", 3, args, 1)));
}

/* dx = dy * y * (1 - y) */
int px_grad_sigmoid(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *y = n->outputs[0];
    px_value *one_minus = px_ad_2(a, "Sub", px_ad_scalar(a, y->dtype, 1.0), y);
    return px_ad_accum(a, n, 0, px_ad_2(a, "Mul", dy[0], px_ad_2(a, "Mul", y, one_minus)));
}

/* dx = dy * (1 - y^2) */
int px_grad_tanh(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *y = n->outputs[0];
    px_value *d = px_ad_2(a, "Sub", px_ad_scalar(a, y->dtype, 1.0), px_ad_2(a, "Mul", y, y));
    return px_ad_accum(a, n, 0, px_ad_2(a, "Mul", dy[0], d));
}

/* y = x^p with p a compile-time constant scalar: dx = dy * p * x^(p-1). */
int px_grad_pow(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = in(n, 0), *p = in(n, 1);
    if (px_ad_wants(a, n, 1))
        return px_ad_error(a, n,
                           "the exponent '%s' must be a constant (no gradient rule for a "
                           "trained exponent)",
                           p->name);
    if (!px_value_is_const(p) || px_tensor_numel(p->data) != 1)
        return px_ad_error(a, n, "the exponent '%s' must be a constant scalar", p->name);
    double e = px_tensor_get_f64(p->data, 0);
    px_value *t;
    if (e == 1.0)
        t = dy[0];
    else if (e == 2.0)
        t = px_ad_2(a, "Mul", dy[0], px_ad_2(a, "Mul", x, px_ad_scalar(a, x->dtype, 2.0)));
    else
        t = px_ad_2(a, "Mul", dy[0],
                    px_ad_2(a, "Mul", px_ad_2(a, "Pow", x, px_ad_scalar(a, x->dtype, e - 1.0)),
                            px_ad_scalar(a, x->dtype, e)));
    return px_ad_accum(a, n, 0, t);
}

int px_grad_reciprocal(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *y = n->outputs[0]; /* d(1/x) = -dy * y^2 */
    return px_ad_accum(a, n, 0,
                       px_ad_1(a, "Neg", px_ad_2(a, "Mul", dy[0], px_ad_2(a, "Mul", y, y))));
}

int px_grad_sin(px_ad *a, px_node *n, px_value *const *dy) {
    return px_ad_accum(a, n, 0, px_ad_2(a, "Mul", dy[0], px_ad_1(a, "Cos", in(n, 0))));
}

int px_grad_cos(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *s = px_ad_1(a, "Sin", in(n, 0));
    return px_ad_accum(a, n, 0, px_ad_1(a, "Neg", px_ad_2(a, "Mul", dy[0], s)));
}

/* d softplus(x) = dy * sigmoid(x) */
int px_grad_softplus(px_ad *a, px_node *n, px_value *const *dy) {
    return px_ad_accum(a, n, 0, px_ad_2(a, "Mul", dy[0], px_ad_1(a, "Sigmoid", in(n, 0))));
}

/* d erf(x) = dy * 2/sqrt(pi) * exp(-x^2) */
int px_grad_erf(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = in(n, 0);
    px_value *e = px_ad_1(a, "Exp", px_ad_1(a, "Neg", px_ad_2(a, "Mul", x, x)));
    px_value *c = px_ad_scalar(a, x->dtype, 1.1283791670955126);
    return px_ad_accum(a, n, 0, px_ad_2(a, "Mul", dy[0], px_ad_2(a, "Mul", e, c)));
}

/* dx = where(x > 0, dy, alpha * dy) */
int px_grad_leaky_relu(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = in(n, 0);
    double alpha = px_attr_float(n, "alpha", 0.01f);
    px_value *pos = px_ad_2(a, "Greater", x, zero_like(a, x));
    px_value *neg = px_ad_2(a, "Mul", dy[0], px_ad_scalar(a, x->dtype, alpha));
    if (!pos || !neg) return -1;
    px_value *args[3] = {pos, dy[0], neg};
    return px_ad_accum(a, n, 0, px_ad_done(a, px_ad_op(a, "Where", "", 3, args, 1)));
}

/* Where(c, x, y): dy goes to x where c holds, to y elsewhere. */
int px_grad_where(px_ad *a, px_node *n, px_value *const *dy) {
    for (int i = 1; i <= 2; i++) {
        if (!px_ad_wants(a, n, i)) continue;
        px_value *z = zero_like(a, dy[0]);
        px_value *args[3] = {in(n, 0), i == 1 ? dy[0] : z, i == 1 ? z : dy[0]};
        if (!z || px_ad_accum(a, n, i, px_ad_done(a, px_ad_op(a, "Where", "", 3, args, 1))))
            return -1;
    }
    return 0;
}

/* Cast between float types: the gradient cast back. */
int px_grad_cast(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = in(n, 0);
    if (dy[0]->dtype == x->dtype) return px_ad_accum(a, n, 0, dy[0]);
    px_node *c = px_ad_op(a, "Cast", "", 1, (px_value *const *)dy, 1);
    px_node_set_attr_int(c, "to", x->dtype);
    return px_ad_accum(a, n, 0, px_ad_done(a, c));
}

/* Sum / Mean of several inputs: dy (over the count for Mean) to each. */
int px_grad_sum(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *g = dy[0];
    if (n->op == PX_OP_Mean) g = px_ad_2(a, "Mul", g, px_ad_scalar(a, g->dtype, 1.0 / n->n_inputs));
    for (int i = 0; i < n->n_inputs; i++)
        if (px_ad_accum(a, n, i, g)) return -1;
    return 0;
}
