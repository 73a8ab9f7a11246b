/* Gradient rules of the selecting ops Max, Min, Clip, TopK, GatherElements
 * and ScatterElements: the gradient goes to the input elements that were
 * selected. Ties follow PyTorch: a Max or Min output equal to several inputs
 * splits its gradient evenly between them (torch.maximum / torch.minimum),
 * and Clip passes the gradient where min <= x <= max (torch.clamp). */
#include "grad_internal.h"

#include <string.h>

static px_value *cast_to(px_ad *a, px_value *x, px_dtype dt) {
    if (!x) return NULL;
    px_node *c = px_ad_op(a, "Cast", "", 1, &x, 1);
    if (!c) return NULL;
    px_node_set_attr_int(c, "to", dt);
    return px_ad_done(a, c);
}

/* y = Max/Min(x_0, ...): dx_i = dy * [x_i == y] / #{j : x_j == y}. */
int px_grad_select(px_ad *a, px_node *n, px_value *const *dy) {
    int k = n->n_inputs;
    if (k == 1) return px_ad_accum(a, n, 0, dy[0]);
    px_value *y = n->outputs[0], *mask[64] = {0};
    if (k > 64) return px_ad_error(a, n, "more than 64 inputs");
    for (int i = 0; i < k; i++) {
        mask[i] = cast_to(a, px_ad_2(a, "Equal", n->inputs[i], y), dy[0]->dtype);
        if (!mask[i]) return -1;
    }
    px_value *count = px_ad_done(a, px_ad_op(a, "Sum", "", k, mask, 1));
    px_value *share = px_ad_2(a, "Div", dy[0], count);
    for (int i = 0; i < k; i++)
        if (px_ad_wants(a, n, i) && px_ad_accum(a, n, i, px_ad_2(a, "Mul", share, mask[i])))
            return -1;
    return 0;
}

/* y = Clip(x, min, max) (bounds as inputs from opset 11, attributes before):
 * dx = dy where min <= x <= max, else 0. */
int px_grad_clip(px_ad *a, px_node *n, px_value *const *dy) {
    if (px_ad_wants(a, n, 1) || px_ad_wants(a, n, 2))
        return px_ad_error(a, n, "no gradient rule for trained min / max bounds");
    px_value *x = n->inputs[0], *lo = n->n_inputs > 1 ? n->inputs[1] : NULL,
             *hi = n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (!lo && px_node_attr(n, "min")) lo = px_ad_scalar(a, x->dtype, px_attr_float(n, "min", 0));
    if (!hi && px_node_attr(n, "max")) hi = px_ad_scalar(a, x->dtype, px_attr_float(n, "max", 0));
    px_value *cond = NULL;
    if (lo) cond = px_ad_2(a, "GreaterOrEqual", x, lo);
    if (hi) {
        px_value *c = px_ad_2(a, "LessOrEqual", x, hi);
        cond = cond ? px_ad_2(a, "And", cond, c) : c;
    }
    if (!lo && !hi) return px_ad_accum(a, n, 0, dy[0]);
    px_value *args[3] = {cond, dy[0], px_ad_scalar(a, dy[0]->dtype, 0.0)};
    if (!args[0] || !args[2]) return -1;
    return px_ad_accum(a, n, 0, px_ad_done(a, px_ad_op(a, "Where", "", 3, args, 1)));
}

/* dY scattered (added) into zeros shaped like the data, at idx along axis:
 * the backward of any op whose output gathers data's elements by idx. */
static int scatter_to_input(px_ad *a, px_node *n, px_value *g, px_value *idx, int axis) {
    px_value *data = n->inputs[0];
    px_value *in[2] = {g, idx};
    px_node *s = px_ad_op(a, "GatherElementsGrad", PX_DOMAIN_PARALLAX, 2, in, 1);
    if (!s) return -1;
    px_node_set_attr_int(s, "axis", axis);
    px_node_set_attr_ints(s, "shape", data->shape.rank, data->shape.dims);
    return px_ad_accum(a, n, 0, px_ad_done(a, s));
}

static int norm_axis(px_ad *a, px_node *n, int64_t axis, int *out) {
    int r = n->inputs[0]->shape.rank;
    if (axis < -r || axis >= r) return px_ad_error(a, n, "axis %lld out of range", (long long)axis);
    *out = (int)(axis < 0 ? axis + r : axis);
    return 0;
}

/* Values = TopK(X)[0]: dX = dValues at the Indices positions along axis,
 * zeros elsewhere (Indices are not differentiable). */
int px_grad_topk(px_ad *a, px_node *n, px_value *const *dy) {
    int axis = 0;
    if (!dy[0]) return 0;
    if (n->n_outputs < 2 || !n->outputs[1])
        return px_ad_error(a, n, "needs its Indices output for the gradient");
    if (norm_axis(a, n, px_attr_int(n, "axis", -1), &axis)) return -1;
    return scatter_to_input(a, n, dy[0], n->outputs[1], axis);
}

/* y = ScatterElements(data, idx, updates), reduction none (indices
 * distinct, as the spec asks): d data = dy with the overwritten positions
 * zeroed (dy scattered over by zeros); reduction add: d data = dy. Both:
 * d updates = dy gathered at idx. */
int px_grad_scatter_elements(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *idx = n->inputs[1], *upd = n->inputs[2];
    int64_t axis = px_attr_int(n, "axis", 0);
    const char *red = px_attr_string(n, "reduction", "none");
    int add = !strcmp(red, "add");
    if (!add && strcmp(red, "none"))
        return px_ad_error(a, n, "no gradient rule for reduction '%s' (none and add have one)",
                           red);
    if (add && px_ad_wants(a, n, 0) && px_ad_accum(a, n, 0, dy[0])) return -1;
    if (!add && px_ad_wants(a, n, 0)) {
        px_value *shape = px_ad_ints(a, upd->shape.rank, upd->shape.dims);
        px_value *zero = px_ad_2(a, "Expand", px_ad_scalar(a, dy[0]->dtype, 0.0), shape);
        px_value *in[3] = {dy[0], idx, zero};
        px_node *s = zero ? px_ad_op(a, "ScatterElements", "", 3, in, 1) : NULL;
        if (!s) return -1;
        px_node_set_attr_int(s, "axis", axis);
        if (px_ad_accum(a, n, 0, px_ad_done(a, s))) return -1;
    }
    if (!px_ad_wants(a, n, 2)) return 0;
    px_value *in[2] = {dy[0], idx};
    px_node *gth = px_ad_op(a, "GatherElements", "", 2, in, 1);
    if (!gth) return -1;
    px_node_set_attr_int(gth, "axis", axis);
    return px_ad_accum(a, n, 2, px_ad_done(a, gth));
}

/* y = GatherElements(data, idx): d data = dy scattered to idx along axis. */
int px_grad_gather_elements(px_ad *a, px_node *n, px_value *const *dy) {
    int axis = 0;
    if (norm_axis(a, n, px_attr_int(n, "axis", 0), &axis)) return -1;
    return scatter_to_input(a, n, dy[0], n->inputs[1], axis);
}
