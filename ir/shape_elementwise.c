/* Shape functions of elementwise ops: unary (and the axis-wise activations
 * that keep their input's shape), casts, broadcasting arithmetic,
 * comparisons and Where. The operands' dtypes are checked against the op's
 * dtype signature in ops.def, which the lowerings read too. */
#include "shape_util.h"

/* Operand i of n against its op's dtype signature (ops.def, ir/op.h). */
static int check_operand(const px_node *n, px_diag *d, const px_value *v, int i, const char *what) {
    return px_su_want_class(n, d, v, what, px_op_operand_class(n->op, i));
}

/* Clip's optional min/max (inputs from opset 11) must be scalars of X's type. */
static int check_clip_bounds(const px_node *n, px_diag *d, const px_value *x) {
    for (int i = 1; i <= 2; i++) {
        px_value *b = px_su_in(n, i);
        if (!b) continue;
        if (b->dtype != x->dtype)
            return px_su_error(d, n, "%s '%s' has type %s, expected %s like the input",
                               i == 1 ? "min" : "max", b->name, px_dtype_name(b->dtype),
                               px_dtype_name(x->dtype));
        int64_t numel = px_shape_numel(&b->shape);
        if (px_shape_is_static(&b->shape) && numel != 1)
            return px_su_error(d, n, "%s '%s' must be a scalar, has %lld elements",
                               i == 1 ? "min" : "max", b->name, (long long)numel);
    }
    return 0;
}

/* Axis checks of the ops that keep their input shape but act along an axis. */
static int check_unary_axis(const px_graph *g, const px_node *n, px_diag *d, const px_value *x) {
    int r = x->shape.rank, a;
    switch (n->op) {
    case PX_OP_Softmax:
    case PX_OP_LogSoftmax:
    case PX_OP_Hardmax: {
        int64_t dflt = px_su_opset(g) >= 13 ? -1 : 1;
        if (r < 0) return 0;
        return px_su_norm_axis(n, d, px_attr_int(n, "axis", dflt), r, 0, "axis", &a);
    }
    case PX_OP_CumSum: {
        px_value *axis_v;
        if (px_su_need(n, 1, "axis", d, &axis_v)) return -1;
        if (px_su_want_int(n, d, axis_v, "axis")) return -1;
        double ax;
        int k = px_su_const_scalar(n, d, axis_v, "axis", &ax);
        if (k < 0) return -1;
        if (k == 1 && r >= 0) return px_su_norm_axis(n, d, (int64_t)ax, r, 0, "axis", &a);
        return 0;
    }
    case PX_OP_Trilu:
        if (r >= 0 && r < 2)
            return px_su_error(d, n, "input '%s' must have rank >= 2, has %d", x->name, r);
        return 0;
    default: return 0;
    }
}

int px_shape_unary(px_graph *g, px_node *n, px_diag *d) {
    px_value *x;
    if (px_su_arity(n, 1, -1, d) || px_su_need(n, 0, "input", d, &x)) return -1;
    if (check_operand(n, d, x, 0, "input") || check_unary_axis(g, n, d, x)) return -1;
    if (n->op == PX_OP_Clip && check_clip_bounds(n, d, x)) return -1;
    return px_su_set(n, 0, x->dtype, &x->shape, d);
}

int px_shape_to_bool(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "input", d, &x)) return -1;
    if (check_operand(n, d, x, 0, "input")) return -1;
    return px_su_set(n, 0, PX_BOOL, &x->shape, d);
}

int px_shape_cast(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "input", d, &x)) return -1;
    if (!px_node_attr(n, "to")) return px_su_error(d, n, "missing required attribute 'to'");
    int64_t to = px_attr_int(n, "to", 0);
    if (to < 0 || to > 1000 || !px_dtype_valid((int)to))
        return px_su_error(d, n, "attribute 'to' = %lld is not a known element type",
                           (long long)to);
    return px_su_set(n, 0, (px_dtype)to, &x->shape, d);
}

int px_shape_castlike(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x, *like;
    if (px_su_arity(n, 2, 2, d) || px_su_need(n, 0, "input", d, &x) ||
        px_su_need(n, 1, "target_type", d, &like))
        return -1;
    return px_su_set(n, 0, like->dtype, &x->shape, d);
}

/* Broadcasts all present inputs, requiring one element type (Pow's exponent
 * may differ from opset 12 on) of the op's signature. */
static int broadcast_inputs(const px_graph *g, const px_node *n, px_diag *d, px_shape *out,
                            px_dtype *dt) {
    px_value *first;
    if (px_su_need(n, 0, "input", d, &first)) return -1;
    px_shape acc = first->shape;
    int mixed_ok = n->op == PX_OP_Pow && px_su_opset(g) >= 12;
    for (int i = 1; i < n->n_inputs; i++) {
        px_value *v;
        if (px_su_need(n, i, "input", d, &v)) return -1;
        if (!mixed_ok && px_su_same_dtype(n, d, first, v)) return -1;
        if (px_su_broadcast(n, d, &acc, &v->shape, &acc)) return -1;
    }
    for (int i = 0; i < n->n_inputs; i++)
        if (check_operand(n, d, n->inputs[i], i, "input")) return -1;
    *out = acc;
    *dt = first->dtype;
    return 0;
}

int px_shape_broadcast(px_graph *g, px_node *n, px_diag *d) {
    int variadic = (px_op_table[n->op].flags & PX_F_VARIADIC) != 0;
    if (px_su_arity(n, variadic ? 1 : 2, variadic ? -1 : 2, d)) return -1;
    px_shape s;
    px_dtype dt;
    if (n->op == PX_OP_PRelu) {
        /* slope broadcasts to X unidirectionally; Y has X's shape */
        px_value *x, *slope;
        if (px_su_need(n, 0, "X", d, &x) || px_su_need(n, 1, "slope", d, &slope)) return -1;
        if (px_su_same_dtype(n, d, x, slope) || check_operand(n, d, x, 0, "X")) return -1;
        /* before opset 7 a 1-D slope was per channel (axis 1), Caffe2-style */
        const px_shape *xs = &x->shape, *ss = &slope->shape;
        int per_channel =
            px_su_opset(g) < 7 && ss->rank == 1 && xs->rank >= 2 && px_su_dim_same(ss, 0, xs, 1);
        if (!per_channel && px_su_check_unidirectional(n, d, xs, ss, "slope")) return -1;
        return px_su_set(n, 0, x->dtype, &x->shape, d);
    }
    if (broadcast_inputs(g, n, d, &s, &dt)) return -1;
    return px_su_set(n, 0, dt, &s, d);
}

int px_shape_compare(px_graph *g, px_node *n, px_diag *d) {
    if (px_su_arity(n, 2, 2, d)) return -1;
    px_shape s;
    px_dtype dt;
    if (broadcast_inputs(g, n, d, &s, &dt)) return -1;
    return px_su_set(n, 0, PX_BOOL, &s, d);
}

int px_shape_where(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *c, *x, *y;
    if (px_su_arity(n, 3, 3, d) || px_su_need(n, 0, "condition", d, &c) ||
        px_su_need(n, 1, "X", d, &x) || px_su_need(n, 2, "Y", d, &y))
        return -1;
    if (check_operand(n, d, c, 0, "condition") || px_su_same_dtype(n, d, x, y)) return -1;
    px_shape s;
    if (px_su_broadcast(n, d, &c->shape, &x->shape, &s) || px_su_broadcast(n, d, &s, &y->shape, &s))
        return -1;
    return px_su_set(n, 0, x->dtype, &s, d);
}
