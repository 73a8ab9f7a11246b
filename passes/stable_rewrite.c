/* Rewrites numerically unstable patterns that exporters emit into stable
 * forms with the same value:
 *   Log(Sigmoid(x))       -> Neg(Softplus(Neg(x)))    log sigmoid(x) = -softplus(-x)
 *   Log(Sub(1, Sigmoid(x))) -> Neg(Softplus(x))       log(1 - sigmoid(x)) = -softplus(x)
 *   Log(Softmax(x, axis)) -> LogSoftmax(x, axis)
 * PyTorch exports binary_cross_entropy_with_logits as the first two: in
 * float32 sigmoid(x) rounds to 0 or 1 once |x| passes ~17 (~88 for 0), the
 * log gives -inf and training stops with a NaN loss where PyTorch's own,
 * fused loss stays finite. Softplus is computed without overflow
 * (max(x, 0) + log1p(exp(-|x|))) and has a gradient (sigmoid).
 *
 * binary_cross_entropy as python/parallax exports it (PyTorch's clamped
 * logs: -(y max(log x, -100) + (1 - y) max(log(1 - x), -100))) keeps its
 * value, but its gradient becomes PyTorch's fused one,
 * (x - y) / max(x (1 - x), 1e-12): differentiated op by op, a sigmoid
 * saturated to 0 or 1 gives 0 * (1 / 0) = NaN where PyTorch's stays finite.
 * The logs read StopGradient(x), and (x - StopGradient(x)) * that gradient
 * (0 in value) is added to the loss. */
#include "stable_rewrite.h"

#include "node_rewrite.h"
#include "shape_infer.h"

#include <stdio.h>
#include <string.h>

static px_node *producer(const px_value *v, px_op op) {
    return v && v->producer && !v->producer->dead && v->producer->op == op ? v->producer : NULL;
}

/* v is a constant whose every element is `want`. */
static int const_all(const px_value *v, double want) {
    if (!px_value_is_const(v) || !px_dtype_is_float(v->dtype)) return 0;
    if (v->kind == PX_VALUE_INITIALIZER) return 0; /* a weight: it may change */
    int64_t n = px_tensor_numel(v->data);
    for (int64_t i = 0; i < n; i++)
        if (px_tensor_get_f64(v->data, i) != want) return 0;
    return n > 0;
}

/* Adds op(in...) at *pos, writing out (a new value when out is NULL). */
static px_value *add_n(px_graph *g, int *pos, const char *op, const char *domain, const char *name,
                       int n_in, px_value *const *in, px_value *out, px_diag *d) {
    if (!out) {
        /* a derived name, made unique by px_graph_new_value: a very long
         * node name is cut to fit rather than failing the rewrite */
        char vn[512];
        snprintf(vn, sizeof vn, "%.500s_out", name);
        out = px_graph_new_value(g, vn, PX_UNDEFINED, NULL);
    }
    px_node *n = px_graph_insert_node(g, (*pos)++, op, domain, name, n_in, in, 1, &out);
    return px_infer_node(g, n, d) ? NULL : out;
}

static px_value *add(px_graph *g, int *pos, const char *op, const char *name, px_value *in,
                     px_value *out, px_diag *d) {
    return add_n(g, pos, op, "", name, 1, &in, out, d);
}

/* -Softplus(sign * x) into the Log's output. */
static int neg_softplus(px_graph *g, px_node *log, px_value *x, int negate_x, px_diag *d) {
    char base[400], name[512];
    snprintf(base, sizeof base, "%s", log->name[0] ? log->name : "Log");
    px_value *y = log->outputs[0];
    int pos = log->id + 1;
    px_graph_remove_node(g, log);
    if (negate_x) {
        snprintf(name, sizeof name, "%s/stable/Neg_x", base);
        if (!(x = add(g, &pos, "Neg", name, x, NULL, d))) return -1;
    }
    snprintf(name, sizeof name, "%s/stable/Softplus", base);
    px_value *sp = add(g, &pos, "Softplus", name, x, NULL, d);
    snprintf(name, sizeof name, "%s/stable/Neg", base);
    return sp && add(g, &pos, "Neg", name, sp, y, d) ? 1 : -1;
}

static int rewrite_log(px_graph *g, px_node *log, px_diag *d) {
    if (log->n_inputs != 1) return 0;
    px_value *v = log->inputs[0];
    if (!v || !log->outputs[0] || !px_dtype_is_float(v->dtype)) return 0;
    px_node *p = producer(v, PX_OP_Sigmoid);
    if (p) return neg_softplus(g, log, p->inputs[0], 1, d);
    p = producer(v, PX_OP_Sub);
    px_node *s = p ? producer(p->inputs[1], PX_OP_Sigmoid) : NULL;
    if (s && const_all(p->inputs[0], 1.0) &&
        px_shape_equal(&p->outputs[0]->shape, &s->outputs[0]->shape))
        return neg_softplus(g, log, s->inputs[0], 0, d);
    p = producer(v, PX_OP_Softmax);
    if (p && px_graph_opset(g, "") >= 13) {
        char name[512];
        snprintf(name, sizeof name, "%s/stable/LogSoftmax", log->name[0] ? log->name : "Log");
        px_value *x = p->inputs[0], *y = log->outputs[0];
        int pos = log->id + 1;
        px_graph_remove_node(g, log);
        px_node *ls = px_graph_insert_node(g, pos, "LogSoftmax", "", name, 1, &x, 1, &y);
        px_node_set_attr_int(ls, "axis", px_attr_int(p, "axis", -1));
        return px_infer_node(g, ls, d) ? -1 : 1;
    }
    return 0;
}

/* ---- binary_cross_entropy ---- */

static int single_use(const px_value *v) {
    return v && v->n_uses == 1 && !v->is_output;
}

/* v = Max(Log(u), -100) (either operand order), each output used once:
 * the Log node, else NULL. */
static px_node *clamped_log(const px_value *v) {
    px_node *m = producer(v, PX_OP_Max);
    if (!m || m->n_inputs != 2 || !single_use(v)) return NULL;
    for (int i = 0; i < 2; i++) {
        px_node *log = producer(m->inputs[i], PX_OP_Log);
        if (log && log->n_inputs == 1 && single_use(log->outputs[0]) &&
            const_all(m->inputs[1 - i], -100.0))
            return log;
    }
    return NULL;
}

/* The parts of -(y * Max(Log(x), -100) + (1 - y) * Max(Log(1 - x), -100)). */
typedef struct bce_match {
    px_value *x, *y;
    px_node *log_x, *one_minus_x; /* Log(x), Sub(1, x) */
} bce_match;

/* mul = Mul(w, clamped log) in either order: the Log, *w its weight. */
static px_node *weighted_log(const px_value *mul_out, px_value **w) {
    px_node *mul = producer(mul_out, PX_OP_Mul);
    if (!mul || mul->n_inputs != 2 || !single_use(mul_out)) return NULL;
    for (int i = 0; i < 2; i++) {
        px_node *log = clamped_log(mul->inputs[i]);
        if (log) {
            *w = mul->inputs[1 - i];
            return log;
        }
    }
    return NULL;
}

static int match_bce(const px_node *neg, bce_match *m) {
    px_node *add = neg->n_inputs == 1 ? producer(neg->inputs[0], PX_OP_Add) : NULL;
    if (!add || add->n_inputs != 2 || !single_use(neg->inputs[0])) return 0;
    for (int i = 0; i < 2; i++) {
        px_value *wy = NULL, *w1y = NULL;
        px_node *lx = weighted_log(add->inputs[i], &wy);
        px_node *l1x = weighted_log(add->inputs[1 - i], &w1y);
        if (!lx || !l1x) continue;
        px_node *sub_x = producer(l1x->inputs[0], PX_OP_Sub); /* 1 - x */
        px_node *sub_y = producer(w1y, PX_OP_Sub);            /* 1 - y */
        if (!sub_x || sub_x->n_inputs != 2 || !single_use(l1x->inputs[0]) ||
            !const_all(sub_x->inputs[0], 1.0) || sub_x->inputs[1] != lx->inputs[0])
            continue;
        if (!sub_y || sub_y->n_inputs != 2 || !const_all(sub_y->inputs[0], 1.0) ||
            sub_y->inputs[1] != wy)
            continue;
        px_value *x = lx->inputs[0];
        if (producer(x, PX_OP_StopGradient)) return 0; /* rewritten already */
        if (!x || !wy || x->dtype != wy->dtype || !px_dtype_is_float(x->dtype) ||
            !px_shape_equal(&x->shape, &wy->shape))
            continue;
        *m = (bce_match){x, wy, lx, sub_x};
        return 1;
    }
    return 0;
}

static int rewrite_bce(px_graph *g, px_node *neg, px_diag *d) {
    bce_match m;
    if (!match_bce(neg, &m)) return 0;
    char base[400], name[512];
    snprintf(base, sizeof base, "%s", neg->name[0] ? neg->name : "binary_cross_entropy");
    px_value *x = m.x, *y = m.y, *one = m.one_minus_x->inputs[0];
    /* x's value without its gradient, before the two nodes that read it */
    int pos = m.log_x->id < m.one_minus_x->id ? m.log_x->id : m.one_minus_x->id;
    snprintf(name, sizeof name, "%s/stable/StopGradient", base);
    px_value *xs = add_n(g, &pos, "StopGradient", PX_DOMAIN_PARALLAX, name, 1, &x, NULL, d);
    if (!xs) return -1;
    px_node_set_input(m.log_x, 0, xs);
    px_node_set_input(m.one_minus_x, 1, xs);
    /* loss = value + (x - xs) * (xs - y) / max(xs (1 - xs), 1e-12) */
    px_value *loss = neg->outputs[0], *s = neg->inputs[0];
    pos = neg->id + 1;
    px_graph_remove_node(g, neg);
    px_shape sc = px_shape_scalar();
    px_tensor *t = px_tensor_new(x->dtype, &sc, d);
    if (!t) return -1;
    px_tensor_set_f64(t, 0, 1e-12);
    px_value *eps = px_graph_add_constant(g, "bce/eps", t);
    px_value *v[9] = {0};
    /* value, x - xs, xs - y, 1 - xs, xs (1 - xs), max(., eps), ratio, product, sum */
    static const char *const ops[9] = {"Neg", "Sub", "Sub", "Sub", "Mul",
                                       "Max", "Div", "Mul", "Add"};
    static const char *const suffixes[9] = {"Neg",         "Sub_x",  "Sub_y", "Sub_1", "Mul_x1x",
                                            "Max_epsilon", "Div_dx", "Mul_0", "Add_0"};
    for (int i = 0; i < 9; i++) {
        px_value *in[2];
        int n_in = 2;
        switch (i) {
        case 0: in[0] = s, n_in = 1; break;
        case 1: in[0] = x, in[1] = xs; break;
        case 2: in[0] = xs, in[1] = y; break;
        case 3: in[0] = one, in[1] = xs; break;
        case 4: in[0] = xs, in[1] = v[3]; break;
        case 5: in[0] = v[4], in[1] = eps; break;
        case 6: in[0] = v[2], in[1] = v[5]; break;
        case 7: in[0] = v[1], in[1] = v[6]; break;
        default: in[0] = v[0], in[1] = v[7]; break;
        }
        snprintf(name, sizeof name, "%s/stable/%s", base, suffixes[i]);
        v[i] = add_n(g, &pos, ops[i], "", name, n_in, in, i == 8 ? loss : NULL, d);
        if (!v[i]) return -1;
    }
    return 1;
}

int px_pass_stable_rewrite(px_graph *g, px_diag *d) {
    /* binary_cross_entropy first: its Log(1 - x) of a Sigmoid would
     * otherwise become a Softplus, whose gradient is not PyTorch's */
    if (px_rewrite_nodes(g, PX_OP_Neg, rewrite_bce, d) < 0) return -1;
    return px_rewrite_nodes(g, PX_OP_Log, rewrite_log, d);
}
