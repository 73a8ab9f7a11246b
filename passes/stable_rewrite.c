/* Rewrites numerically unstable patterns that exporters emit into stable
 * forms with the same value:
 *   Log(Sigmoid(x))       -> Neg(Softplus(Neg(x)))    log sigmoid(x) = -softplus(-x)
 *   Log(Sub(1, Sigmoid(x))) -> Neg(Softplus(x))       log(1 - sigmoid(x)) = -softplus(x)
 *   Log(Softmax(x, axis)) -> LogSoftmax(x, axis)
 * PyTorch exports binary_cross_entropy_with_logits as the first two: in
 * float32 sigmoid(x) rounds to 0 or 1 once |x| passes ~17 (~88 for 0), the
 * log gives -inf and training stops with a NaN loss where PyTorch's own,
 * fused loss stays finite. Softplus is computed without overflow
 * (max(x, 0) + log1p(exp(-|x|))) and has a gradient (sigmoid). */
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

/* Adds op(in) at *pos, writing out (a new value when out is NULL). */
static px_value *add(px_graph *g, int *pos, const char *op, const char *name, px_value *in,
                     px_value *out, px_diag *d) {
    if (!out) {
        /* a derived name, made unique by px_graph_new_value: a very long
         * node name is cut to fit rather than failing the rewrite */
        char vn[512];
        snprintf(vn, sizeof vn, "%.500s_out", name);
        out = px_graph_new_value(g, vn, PX_UNDEFINED, NULL);
    }
    px_node *n = px_graph_insert_node(g, (*pos)++, op, "", name, 1, &in, 1, &out);
    return px_infer_node(g, n, d) ? NULL : out;
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

int px_pass_stable_rewrite(px_graph *g, px_diag *d) {
    return px_rewrite_nodes(g, PX_OP_Log, rewrite_log, d);
}
