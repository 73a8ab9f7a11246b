/* Gradient rules of the unary activations and trigonometric ops that
 * grad_elementwise.c does not cover, and of PRelu and CastLike. Each
 * derivative is written with ONNX elementwise ops (so the code generator
 * fuses it into the loops around it) and matches PyTorch's backward:
 * piecewise ops take the derivative of the branch that the forward op takes
 * at the boundary (Elu/Celu/Selu: the x <= 0 branch at 0; HardSwish: the
 * middle piece on [-3, 3]). */
#include "grad_internal.h"

#include <math.h>
#include <string.h>

typedef struct ex {
    px_ad *a;
    px_dtype dt;
} ex;

static px_value *k(const ex *e, double v) {
    return px_ad_scalar(e->a, e->dt, v);
}
static px_value *op1(const ex *e, const char *op, px_value *x) {
    return px_ad_1(e->a, op, x);
}
static px_value *op2(const ex *e, const char *op, px_value *x, px_value *y) {
    return px_ad_2(e->a, op, x, y);
}
static px_value *where(const ex *e, px_value *c, px_value *x, px_value *y) {
    if (!c || !x || !y) return NULL;
    px_value *in[3] = {c, x, y};
    return px_ad_done(e->a, px_ad_op(e->a, "Where", "", 3, in, 1));
}

/* f'(x) of the op of n from its input x, output y and attributes; NULL on error. */
static px_value *derivative(const ex *e, const px_node *n) {
    px_value *x = n->inputs[0], *y = n->outputs[0];
    double alpha = px_attr_float(n, "alpha", 1.0);
    switch (n->op) {
    case PX_OP_Asin: /* 1 / sqrt(1 - x^2) */
    case PX_OP_Acos: {
        px_value *r =
            op1(e, "Reciprocal", op1(e, "Sqrt", op2(e, "Sub", k(e, 1), op2(e, "Mul", x, x))));
        return n->op == PX_OP_Acos ? op1(e, "Neg", r) : r;
    }
    case PX_OP_Atan: return op1(e, "Reciprocal", op2(e, "Add", k(e, 1), op2(e, "Mul", x, x)));
    case PX_OP_Asinh:
        return op1(e, "Reciprocal", op1(e, "Sqrt", op2(e, "Add", op2(e, "Mul", x, x), k(e, 1))));
    case PX_OP_Acosh:
        return op1(e, "Reciprocal", op1(e, "Sqrt", op2(e, "Sub", op2(e, "Mul", x, x), k(e, 1))));
    case PX_OP_Atanh: return op1(e, "Reciprocal", op2(e, "Sub", k(e, 1), op2(e, "Mul", x, x)));
    case PX_OP_Sinh: return op1(e, "Cosh", x);
    case PX_OP_Cosh: return op1(e, "Sinh", x);
    case PX_OP_Tan: return op2(e, "Add", k(e, 1), op2(e, "Mul", y, y));
    case PX_OP_Softsign: {
        px_value *d = op2(e, "Add", k(e, 1), op1(e, "Abs", x));
        return op1(e, "Reciprocal", op2(e, "Mul", d, d));
    }
    case PX_OP_Elu: /* x > 0: 1, else y + alpha */
        return where(e, op2(e, "Greater", x, k(e, 0)), k(e, 1), op2(e, "Add", y, k(e, alpha)));
    case PX_OP_Celu: /* x > 0: 1, else exp(x / alpha) */
        return where(e, op2(e, "Greater", x, k(e, 0)), k(e, 1),
                     op1(e, "Exp", op2(e, "Div", x, k(e, alpha))));
    case PX_OP_Selu: { /* x > 0: gamma, else y + gamma * alpha */
        double al = px_attr_float(n, "alpha", 1.67326319217681884765625),
               gamma = px_attr_float(n, "gamma", 1.05070102214813232421875);
        return where(e, op2(e, "Greater", x, k(e, 0)), k(e, gamma),
                     op2(e, "Add", y, k(e, gamma * al)));
    }
    case PX_OP_HardSigmoid: { /* alpha where 0 < alpha x + beta < 1 */
        double al = px_attr_float(n, "alpha", 0.2), beta = px_attr_float(n, "beta", 0.5);
        px_value *t = op2(e, "Add", op2(e, "Mul", x, k(e, al)), k(e, beta));
        px_value *in = op2(e, "And", op2(e, "Greater", t, k(e, 0)), op2(e, "Less", t, k(e, 1)));
        return where(e, in, k(e, al), k(e, 0));
    }
    case PX_OP_HardSwish: /* x < -3: 0, x > 3: 1, else x/3 + 1/2 */
        return where(e, op2(e, "Less", x, k(e, -3)), k(e, 0),
                     where(e, op2(e, "Greater", x, k(e, 3)), k(e, 1),
                           op2(e, "Add", op2(e, "Div", x, k(e, 3)), k(e, 0.5))));
    case PX_OP_ThresholdedRelu:
        return where(e, op2(e, "Greater", x, k(e, alpha)), k(e, 1), k(e, 0));
    case PX_OP_Shrink: { /* 1 where |x| > lambd */
        double lambd = px_attr_float(n, "lambd", 0.5);
        return where(e, op2(e, "Greater", op1(e, "Abs", x), k(e, lambd)), k(e, 1), k(e, 0));
    }
    case PX_OP_Mish: { /* tanh(sp) + x (1 - tanh(sp)^2) sigmoid(x), sp = softplus(x) */
        px_value *t = op1(e, "Tanh", op1(e, "Softplus", x));
        px_value *s = op2(e, "Sub", k(e, 1), op2(e, "Mul", t, t));
        return op2(e, "Add", t, op2(e, "Mul", op2(e, "Mul", x, s), op1(e, "Sigmoid", x)));
    }
    case PX_OP_Gelu:
        if (strcmp(px_attr_string(n, "approximate", "none"), "tanh") == 0) {
            /* y = x/2 (1 + tanh(u)), u = c (x + 0.044715 x^3), c = sqrt(2/pi):
             * y' = (1 + t)/2 + x/2 (1 - t^2) c (1 + 3 * 0.044715 x^2) */
            double c = sqrt(2.0 / M_PI);
            px_value *x2 = op2(e, "Mul", x, x);
            px_value *u =
                op2(e, "Mul", k(e, c),
                    op2(e, "Add", x, op2(e, "Mul", k(e, 0.044715), op2(e, "Mul", x2, x))));
            px_value *t = op1(e, "Tanh", u);
            px_value *du = op2(e, "Mul", k(e, c),
                               op2(e, "Add", k(e, 1), op2(e, "Mul", k(e, 3 * 0.044715), x2)));
            px_value *sech2 = op2(e, "Sub", k(e, 1), op2(e, "Mul", t, t));
            return op2(e, "Add", op2(e, "Mul", k(e, 0.5), op2(e, "Add", k(e, 1), t)),
                       op2(e, "Mul", op2(e, "Mul", k(e, 0.5), x), op2(e, "Mul", sech2, du)));
        } else {
            /* Phi(x) + x phi(x) */
            px_value *cdf =
                op2(e, "Mul", k(e, 0.5),
                    op2(e, "Add", k(e, 1), op1(e, "Erf", op2(e, "Mul", x, k(e, M_SQRT1_2)))));
            px_value *pdf = op2(e, "Mul", k(e, 1 / sqrt(2 * M_PI)),
                                op1(e, "Exp", op2(e, "Mul", k(e, -0.5), op2(e, "Mul", x, x))));
            return op2(e, "Add", cdf, op2(e, "Mul", x, pdf));
        }
    default: return NULL;
    }
}

int px_grad_unary(px_ad *a, px_node *n, px_value *const *dy) {
    ex e = {a, dy[0]->dtype};
    px_value *d = derivative(&e, n);
    if (!d) return px_diag_failed(a->d) ? -1 : px_ad_error(a, n, "no derivative");
    return px_ad_accum(a, n, 0, px_ad_2(a, "Mul", dy[0], d));
}

/* y = x where x >= 0, slope * x elsewhere (slope broadcast to x):
 * dx = dy where x >= 0, dy * slope elsewhere; dslope = dy * x where x < 0. */
int px_grad_prelu(px_ad *a, px_node *n, px_value *const *dy) {
    ex e = {a, dy[0]->dtype};
    px_value *x = n->inputs[0], *slope = n->inputs[1];
    px_value *neg = op2(&e, "Less", x, k(&e, 0));
    if (px_ad_wants(a, n, 0) &&
        px_ad_accum(a, n, 0, where(&e, neg, op2(&e, "Mul", dy[0], slope), dy[0])))
        return -1;
    if (px_ad_wants(a, n, 1) &&
        px_ad_accum(a, n, 1, where(&e, neg, op2(&e, "Mul", dy[0], x), k(&e, 0))))
        return -1;
    return 0;
}

/* CastLike(x, like): dy cast back to x's dtype; `like` only gives a dtype. */
int px_grad_castlike(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = n->inputs[0];
    if (dy[0]->dtype == x->dtype) return px_ad_accum(a, n, 0, dy[0]);
    px_node *c = px_ad_op(a, "Cast", "", 1, dy, 1);
    if (!c) return -1;
    px_node_set_attr_int(c, "to", x->dtype);
    return px_ad_accum(a, n, 0, px_ad_done(a, c));
}
