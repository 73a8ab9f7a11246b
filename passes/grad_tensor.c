/* Gradient rules of the shape ops (Reshape, Squeeze, Unsqueeze, Flatten,
 * Transpose, Concat, Slice, Gather) and the sum/mean reductions. All shapes are
 * static after folding, so each gradient is a Reshape, Transpose, Slice,
 * Pad or Expand with constant parameters. */
#include "grad_internal.h"
#include "shape_util.h"

/* Reshape-like ops: the gradient is dy reshaped to the input's shape. */
int px_grad_reshape(px_ad *a, px_node *n, px_value *const *dy) {
    return px_ad_accum(a, n, 0, px_ad_reshape(a, dy[0], &n->inputs[0]->shape));
}

int px_grad_transpose(px_ad *a, px_node *n, px_value *const *dy) {
    int rank = n->inputs[0]->shape.rank, np = 0;
    const int64_t *perm = px_attr_ints(n, "perm", &np);
    int64_t inv[PX_MAX_RANK];
    if (!perm || np == 0) { /* default: reverse the dims */
        for (int i = 0; i < rank; i++) inv[i] = rank - 1 - i;
    } else {
        if (np != rank) return px_ad_error(a, n, "perm has %d entries for rank %d", np, rank);
        for (int i = 0; i < rank; i++) {
            int64_t p = perm[i] < 0 ? perm[i] + rank : perm[i];
            if (p < 0 || p >= rank)
                return px_ad_error(a, n, "perm entry %lld out of range", (long long)perm[i]);
            inv[p] = i;
        }
    }
    return px_ad_accum(a, n, 0, px_ad_transpose(a, dy[0], rank, inv));
}

/* Slice of dy along axis [start, start+len) with constant parameters. */
static px_value *slice_axis(px_ad *a, px_value *x, int64_t axis, int64_t start, int64_t end) {
    int64_t opset = px_graph_opset(a->g, "");
    px_node *s;
    if (opset == 0 || opset >= 10) {
        px_value *in[4] = {x, px_ad_ints(a, 1, &start), px_ad_ints(a, 1, &end),
                           px_ad_ints(a, 1, &axis)};
        if (!in[1] || !in[2] || !in[3]) return NULL;
        s = px_ad_op(a, "Slice", "", 4, in, 1);
    } else {
        s = px_ad_op(a, "Slice", "", 1, &x, 1);
        px_node_set_attr_ints(s, "starts", 1, &start);
        px_node_set_attr_ints(s, "ends", 1, &end);
        px_node_set_attr_ints(s, "axes", 1, &axis);
    }
    return px_ad_done(a, s);
}

int px_grad_concat(px_ad *a, px_node *n, px_value *const *dy) {
    int rank = n->outputs[0]->shape.rank, axis;
    if (px_su_norm_axis(n, a->d, px_attr_int(n, "axis", 0), rank, 0, "axis", &axis)) return -1;
    int64_t off = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        int64_t len = n->inputs[i]->shape.dims[axis];
        if (px_ad_wants(a, n, i) &&
            px_ad_accum(a, n, i, slice_axis(a, dy[0], axis, off, off + len)))
            return -1;
        off += len;
    }
    return 0;
}

/* Slice with constant starts/ends/axes and unit steps: dy padded with zeros. */
int px_grad_slice(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = n->inputs[0];
    int rank = x->shape.rank;
    int64_t starts[PX_MAX_RANK], ends[PX_MAX_RANK], axes[PX_MAX_RANK], steps[PX_MAX_RANK];
    int ns = 0, ne = 0, na = 0, nst = 0, pr, kn;
    if (px_su_ints_attr_or_input(n, a->d, "starts", 1, "starts", starts, PX_MAX_RANK, &ns, &pr,
                                 &kn))
        return -1;
    if (!kn) return px_ad_error(a, n, "starts must be constant");
    if (px_su_ints_attr_or_input(n, a->d, "ends", 2, "ends", ends, PX_MAX_RANK, &ne, &pr, &kn))
        return -1;
    if (!kn) return px_ad_error(a, n, "ends must be constant");
    if (px_su_ints_attr_or_input(n, a->d, "axes", 3, "axes", axes, PX_MAX_RANK, &na, &pr, &kn))
        return -1;
    if (!pr) {
        na = ns;
        for (int i = 0; i < na; i++) axes[i] = i;
    } else if (!kn)
        return px_ad_error(a, n, "axes must be constant");
    if (px_su_ints_attr_or_input(n, a->d, NULL, 4, "steps", steps, PX_MAX_RANK, &nst, &pr, &kn))
        return -1;
    if (pr && !kn) return px_ad_error(a, n, "steps must be constant");
    if (!pr) nst = ns;
    if (ns != ne || ns != na || (pr && nst != ns))
        return px_ad_error(a, n, "starts, ends, axes and steps differ in length");
    int64_t pads[2 * PX_MAX_RANK] = {0};
    const px_value *y = n->outputs[0];
    for (int i = 0; i < ns; i++) {
        if (pr && steps[i] != 1)
            return px_ad_error(a, n, "no gradient rule for step %lld (only step 1)",
                               (long long)steps[i]);
        int ax;
        if (px_su_norm_axis(n, a->d, axes[i], rank, 0, "axis", &ax)) return -1;
        int64_t dim = x->shape.dims[ax], st = starts[i];
        if (st < 0) st += dim;
        if (st < 0) st = 0;
        if (st > dim) st = dim;
        pads[ax] = st;
        pads[rank + ax] = dim - st - y->shape.dims[ax];
    }
    int64_t opset = px_graph_opset(a->g, "");
    px_node *p;
    if (opset == 0 || opset >= 11) {
        px_value *in[2] = {dy[0], px_ad_ints(a, 2 * rank, pads)};
        if (!in[1]) return -1;
        p = px_ad_op(a, "Pad", "", 2, in, 1);
    } else {
        p = px_ad_op(a, "Pad", "", 1, (px_value *const *)dy, 1);
        px_node_set_attr_ints(p, "pads", 2 * rank, pads);
    }
    return px_ad_accum(a, n, 0, px_ad_done(a, p));
}

px_value *px_ad_keepdims(px_ad *a, px_node *n, px_value *v, int64_t *count) {
    px_value *x = n->inputs[0];
    int rank = x->shape.rank;
    int64_t axes[PX_MAX_RANK];
    int na = 0, pr = 0, kn = 0;
    *count = 1;
    if (px_su_ints_attr_or_input(n, a->d, "axes", 1, "axes", axes, PX_MAX_RANK, &na, &pr, &kn))
        return NULL;
    if (pr && !kn) return px_ad_error(a, n, "axes must be constant"), NULL;
    if (!pr) na = 0;
    if (na == 0 && px_attr_int(n, "noop_with_empty_axes", 0)) return v;
    char reduced[PX_MAX_RANK] = {0};
    if (na == 0)
        for (int i = 0; i < rank; i++) reduced[i] = 1;
    for (int i = 0; i < na; i++) {
        int ax;
        if (px_su_norm_axis(n, a->d, axes[i], rank, 0, "axis", &ax)) return NULL;
        reduced[ax] = 1;
    }
    px_shape kept = x->shape;
    for (int i = 0; i < rank; i++)
        if (reduced[i]) {
            *count *= kept.dims[i];
            kept.dims[i] = 1;
            kept.sym[i] = NULL;
        }
    return px_ad_reshape(a, v, &kept);
}

/* ReduceSum / ReduceMean: dy (reshaped to keepdims form) expanded back to
 * the input's shape, divided by the reduced count for the mean. */
int px_grad_reduce(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = n->inputs[0];
    int64_t count;
    px_value *g = px_ad_keepdims(a, n, dy[0], &count);
    if (!g) return -1;
    if (n->op == PX_OP_ReduceMean)
        g = px_ad_2(a, "Mul", g, px_ad_scalar(a, x->dtype, 1.0 / (double)count));
    g = px_ad_2(a, "Expand", g, px_ad_ints(a, x->shape.rank, x->shape.dims));
    return px_ad_accum(a, n, 0, g);
}

/* Gather on anything but a sparse variable (autodiff.c takes those): the
 * dense scatter-add ai.parallax::GatherGradDense. */
int px_grad_gather(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = n->inputs[0];
    int ax;
    if (px_su_norm_axis(n, a->d, px_attr_int(n, "axis", 0), x->shape.rank, 0, "axis", &ax))
        return -1;
    px_value *in[2] = {dy[0], n->inputs[1]};
    px_node *g = px_ad_op(a, "GatherGradDense", PX_DOMAIN_PARALLAX, 2, in, 1);
    px_node_set_attr_int(g, "axis", ax);
    px_node_set_attr_ints(g, "shape", x->shape.rank, x->shape.dims);
    return px_ad_accum(a, n, 0, px_ad_done(a, g));
}
