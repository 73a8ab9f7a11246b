/* Gradient rules of the ops that move elements without arithmetic on
 * them: Split (the output gradients concatenated, zeros for unused
 * outputs), Tile (the gradient summed over the copies), Pad in constant
 * mode (the gradient sliced back), Trilu (the same triangle of the
 * gradient) and CumSum (the cumulative sum of the gradient in the other
 * direction). Shapes are static after folding, so every parameter is a
 * constant. */
#include "grad_internal.h"
#include "shape_util.h"

#include <string.h>

/* Zeros shaped like v. */
static px_value *zeros_like(px_ad *a, const px_value *v) {
    return px_ad_2(a, "Expand", px_ad_scalar(a, v->dtype, 0.0),
                   px_ad_ints(a, v->shape.rank, v->shape.dims));
}

static int grad_split(px_ad *a, px_node *n, px_value *const *dy) {
    int rank = n->inputs[0]->shape.rank, axis, k = n->n_outputs;
    if (px_su_norm_axis(n, a->d, px_attr_int(n, "axis", 0), rank, 0, "axis", &axis)) return -1;
    px_value *parts[16];
    if (k > 16) return px_ad_error(a, n, "more than 16 outputs");
    for (int i = 0; i < k; i++) {
        parts[i] = dy[i] ? dy[i] : zeros_like(a, n->outputs[i]);
        if (!parts[i]) return -1;
    }
    px_node *c = px_ad_op(a, "Concat", "", k, parts, 1);
    if (!c) return -1;
    px_node_set_attr_int(c, "axis", axis);
    return px_ad_accum(a, n, 0, px_ad_done(a, c));
}

/* y = Tile(x, r): dy viewed as [r0, d0, r1, d1, ...] (only the repeated
 * dims split), summed over the r axes. */
static int grad_tile(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = n->inputs[0];
    int64_t reps[PX_MAX_RANK], axes[PX_MAX_RANK];
    int count = 0, na = 0, rank = x->shape.rank;
    if (px_su_const_ints(n, a->d, n->inputs[1], "repeats", reps, PX_MAX_RANK, &count) != 1)
        return px_diag_failed(a->d) ? -1 : px_ad_error(a, n, "repeats must be constant");
    px_shape split = px_shape_unknown();
    split.rank = 0;
    for (int i = 0; i < rank; i++) {
        if (split.rank + 2 > PX_MAX_RANK)
            return px_ad_error(a, n, "too many repeated dims for rank %d", PX_MAX_RANK);
        if (reps[i] != 1) {
            axes[na++] = split.rank;
            split.dims[split.rank] = reps[i];
            split.sym[split.rank++] = NULL;
        }
        split.dims[split.rank] = x->shape.dims[i];
        split.sym[split.rank++] = NULL;
    }
    if (na == 0) return px_ad_accum(a, n, 0, dy[0]);
    px_value *g = px_ad_reduce_sum(a, px_ad_reshape(a, dy[0], &split), na, axes, 0);
    return px_ad_accum(a, n, 0, g);
}

/* Pad in constant mode with pads >= 0: dy sliced back to x's extent. */
static int grad_pad(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = n->inputs[0];
    int rank = x->shape.rank;
    if (strcmp(px_attr_string(n, "mode", "constant"), "constant"))
        return px_ad_error(a, n, "no gradient rule for mode '%s' (only 'constant')",
                           px_attr_string(n, "mode", "constant"));
    int64_t pads[2 * PX_MAX_RANK], axes[PX_MAX_RANK];
    int np = 0, na = 0, pr, kn;
    if (px_su_ints_attr_or_input(n, a->d, "pads", 1, "pads", pads, 2 * PX_MAX_RANK, &np, &pr, &kn))
        return -1;
    if (!pr || !kn) return px_ad_error(a, n, "pads must be constant");
    if (px_su_ints_attr_or_input(n, a->d, NULL, 3, "axes", axes, PX_MAX_RANK, &na, &pr, &kn))
        return -1;
    if (pr && !kn) return px_ad_error(a, n, "axes must be constant");
    if (!pr) {
        na = rank;
        for (int i = 0; i < rank; i++) axes[i] = i;
    }
    if (np != 2 * na) return px_ad_error(a, n, "%d pads for %d axes", np, na);
    int64_t starts[PX_MAX_RANK], ends[PX_MAX_RANK];
    for (int i = 0; i < na; i++) {
        int ax;
        if (px_su_norm_axis(n, a->d, axes[i], rank, 0, "axis", &ax)) return -1;
        if (pads[i] < 0 || pads[na + i] < 0)
            return px_ad_error(a, n, "no gradient rule for negative pads");
        axes[i] = ax;
        starts[i] = pads[i];
        ends[i] = pads[i] + x->shape.dims[ax];
    }
    int64_t opset = px_graph_opset(a->g, "");
    px_node *s;
    if (opset == 0 || opset >= 10) {
        px_value *in[4] = {dy[0], px_ad_ints(a, na, starts), px_ad_ints(a, na, ends),
                           px_ad_ints(a, na, axes)};
        if (!in[1] || !in[2] || !in[3]) return -1;
        s = px_ad_op(a, "Slice", "", 4, in, 1);
    } else {
        s = px_ad_op(a, "Slice", "", 1, dy, 1);
        px_node_set_attr_ints(s, "starts", na, starts);
        px_node_set_attr_ints(s, "ends", na, ends);
        px_node_set_attr_ints(s, "axes", na, axes);
    }
    return px_ad_accum(a, n, 0, px_ad_done(a, s));
}

static int grad_trilu(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *in[2] = {dy[0], n->n_inputs > 1 ? n->inputs[1] : NULL};
    px_node *t = px_ad_op(a, "Trilu", "", in[1] ? 2 : 1, in, 1);
    if (!t) return -1;
    px_node_set_attr_int(t, "upper", px_attr_int(n, "upper", 1));
    return px_ad_accum(a, n, 0, px_ad_done(a, t));
}

/* y_i = sum_{j <= i} x_j (or j < i, exclusive): dx_j = sum_{i >= j} dy_i,
 * the same cumulative sum run in the other direction. */
static int grad_cumsum(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *in[2] = {dy[0], n->inputs[1]};
    px_node *c = px_ad_op(a, "CumSum", "", 2, in, 1);
    if (!c) return -1;
    px_node_set_attr_int(c, "exclusive", px_attr_int(n, "exclusive", 0));
    px_node_set_attr_int(c, "reverse", !px_attr_int(n, "reverse", 0));
    return px_ad_accum(a, n, 0, px_ad_done(a, c));
}

const px_grad_rule px_grad_rules_layout[] = {
    {PX_OP_Split, grad_split}, {PX_OP_Tile, grad_tile},     {PX_OP_Pad, grad_pad},
    {PX_OP_Trilu, grad_trilu}, {PX_OP_CumSum, grad_cumsum}, {PX_OP_UNKNOWN, NULL},
};
