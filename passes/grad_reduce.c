/* Gradient rules of the reductions other than ReduceSum and ReduceMean
 * (grad_tensor.c). dy and y are first reshaped to the keepdims form, so
 * they broadcast against the input x:
 *   ReduceSumSquare  dx = dy * 2x
 *   ReduceL1         dx = dy * sign(x)
 *   ReduceL2         dx = dy * x / y          (0 where y = 0, as PyTorch)
 *   ReduceLogSum     dx = dy / exp(y)
 *   ReduceLogSumExp  dx = dy * exp(x - y)
 *   ReduceProd       dx = dy * (product of the other elements), which is
 *                    y / x without zeros; with one zero only the zero's
 *                    element gets the product of the rest; with more, 0
 *   ReduceMax / Min  dx = dy * [x == y] / #{x == y}, split evenly between
 *                    ties as torch.amax / torch.amin do. */
#include "grad_internal.h"

static px_value *where(px_ad *a, px_value *c, px_value *x, px_value *y) {
    if (!c || !x || !y) return NULL;
    px_value *in[3] = {c, x, y};
    return px_ad_done(a, px_ad_op(a, "Where", "", 3, in, 1));
}

static px_value *cast(px_ad *a, px_value *x, px_dtype dt) {
    if (!x) return NULL;
    px_node *c = px_ad_op(a, "Cast", "", 1, &x, 1);
    if (!c) return NULL;
    px_node_set_attr_int(c, "to", dt);
    return px_ad_done(a, c);
}

/* Sum of v (like x) over the axes where y_kept has size 1, kept: the count
 * of ties for Max / Min (an axis of size 1 in x reduces trivially either way). */
static px_value *tie_count(px_ad *a, px_value *v, const px_value *y_kept) {
    int64_t axes[PX_MAX_RANK];
    int na = 0;
    for (int i = 0; i < y_kept->shape.rank; i++)
        if (y_kept->shape.dims[i] == 1) axes[na++] = i;
    return na ? px_ad_reduce_sum(a, v, na, axes, 1) : v;
}

/* Product of the other elements of each reduced group, for ReduceProd:
 * with x1 = x with zeros replaced by 1, p1 = prod(x1) and z = the group's
 * count of zeros: p1 / x1 where z = 0; p1 at the zero where z = 1; else 0. */
static px_value *prod_others(px_ad *a, px_value *x, px_value *y) {
    px_value *zero = px_ad_scalar(a, x->dtype, 0.0), *one = px_ad_scalar(a, x->dtype, 1.0);
    px_value *is0 = px_ad_2(a, "Equal", x, zero);
    px_value *x1 = where(a, is0, one, x);
    int64_t axes[PX_MAX_RANK];
    int na = 0;
    for (int i = 0; i < y->shape.rank; i++)
        if (y->shape.dims[i] == 1) axes[na++] = i;
    px_value *p1 = x1, *z = cast(a, is0, x->dtype);
    if (na) {
        px_node *p = px_ad_op(a, "ReduceProd", "", 1, &x1, 1);
        if (!p) return NULL;
        px_node_set_attr_ints(p, "axes", na, axes);
        px_node_set_attr_int(p, "keepdims", 1);
        p1 = px_ad_done(a, p);
        z = px_ad_reduce_sum(a, z, na, axes, 1);
    }
    px_value *lone = px_ad_2(a, "Equal", z, one), *none = px_ad_2(a, "Equal", z, zero);
    return where(a, is0, where(a, lone, p1, zero), where(a, none, px_ad_2(a, "Div", p1, x1), zero));
}

int px_grad_reduce_other(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = n->inputs[0];
    int64_t count;
    px_value *g = px_ad_keepdims(a, n, dy[0], &count);
    px_value *y = px_ad_keepdims(a, n, n->outputs[0], &count);
    if (!g || !y) return -1;
    px_value *zero = px_ad_scalar(a, x->dtype, 0.0), *d;
    switch (n->op) {
    case PX_OP_ReduceSumSquare: d = px_ad_2(a, "Mul", x, px_ad_scalar(a, x->dtype, 2.0)); break;
    case PX_OP_ReduceL1: d = px_ad_1(a, "Sign", x); break;
    case PX_OP_ReduceL2:
        d = where(a, px_ad_2(a, "Equal", y, zero), zero, px_ad_2(a, "Div", x, y));
        break;
    case PX_OP_ReduceLogSum: d = px_ad_1(a, "Exp", px_ad_1(a, "Neg", y)); break;
    case PX_OP_ReduceLogSumExp: d = px_ad_1(a, "Exp", px_ad_2(a, "Sub", x, y)); break;
    case PX_OP_ReduceProd: d = prod_others(a, x, y); break;
    case PX_OP_ReduceMax:
    case PX_OP_ReduceMin: {
        px_value *hit = cast(a, px_ad_2(a, "Equal", x, y), x->dtype);
        d = px_ad_2(a, "Div", hit, tie_count(a, hit, y));
        break;
    }
    default: return px_ad_error(a, n, "no gradient rule");
    }
    px_value *dx = px_ad_2(a, "Mul", g, d);
    if (dx && !px_shape_equal(&dx->shape, &x->shape)) /* LogSum's d does not involve x */
        dx = px_ad_2(a, "Expand", dx, px_ad_ints(a, x->shape.rank, x->shape.dims));
    return px_ad_accum(a, n, 0, dx);
}
