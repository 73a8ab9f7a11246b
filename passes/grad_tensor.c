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

/* Slice of x along axis: [start, end) by step, constant parameters (a step
 * other than 1 exists from opset 10 on, where Slice takes inputs). */
static px_value *slice_step(px_ad *a, px_value *x, int64_t axis, int64_t start, int64_t end,
                            int64_t step) {
    int64_t opset = px_graph_opset(a->g, "");
    px_node *s;
    if (opset == 0 || opset >= 10) {
        px_value *in[5] = {x, px_ad_ints(a, 1, &start), px_ad_ints(a, 1, &end),
                           px_ad_ints(a, 1, &axis), step != 1 ? px_ad_ints(a, 1, &step) : NULL};
        if (!in[1] || !in[2] || !in[3] || (step != 1 && !in[4])) return NULL;
        s = px_ad_op(a, "Slice", "", step != 1 ? 5 : 4, in, 1);
    } else {
        s = px_ad_op(a, "Slice", "", 1, &x, 1);
        px_node_set_attr_ints(s, "starts", 1, &start);
        px_node_set_attr_ints(s, "ends", 1, &end);
        px_node_set_attr_ints(s, "axes", 1, &axis);
    }
    return px_ad_done(a, s);
}

/* Slice of x along axis [start, end) with constant parameters. */
static px_value *slice_axis(px_ad *a, px_value *x, int64_t axis, int64_t start, int64_t end) {
    return slice_step(a, x, axis, start, end, 1);
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

/* x padded with zeros: pads as ONNX Pad's (2 * rank: the befores, then the
 * afters), an input from opset 11 on, an attribute before. */
static px_value *pad_zeros(px_ad *a, px_value *x, const int64_t *pads) {
    int rank = x->shape.rank;
    int64_t opset = px_graph_opset(a->g, "");
    px_node *p;
    if (opset == 0 || opset >= 11) {
        px_value *in[2] = {x, px_ad_ints(a, 2 * rank, pads)};
        if (!in[1]) return NULL;
        p = px_ad_op(a, "Pad", "", 2, in, 1);
    } else {
        p = px_ad_op(a, "Pad", "", 1, &x, 1);
        px_node_set_attr_ints(p, "pads", 2 * rank, pads);
    }
    return px_ad_done(a, p);
}

/* g (its axis ax holding m values) spread out by step: each value followed
 * by step - 1 zeros, cut to (m - 1) * step + 1 values. */
static px_value *spread(px_ad *a, px_value *g, int ax, int64_t step) {
    int rank = g->shape.rank;
    int64_t m = g->shape.dims[ax], pads[2 * (PX_MAX_RANK + 1)] = {0};
    px_shape s = g->shape; /* [.., m, 1, ..] */
    for (int k = rank; k > ax + 1; k--) s.dims[k] = s.dims[k - 1];
    s.dims[ax + 1] = 1;
    s.rank = rank + 1;
    pads[(rank + 1) + ax + 1] = step - 1;
    px_value *p = pad_zeros(a, px_ad_reshape(a, g, &s), pads); /* [.., m, step, ..] */
    if (!p) return NULL;
    px_shape flat = g->shape;
    flat.dims[ax] = m * step;
    return slice_axis(a, px_ad_reshape(a, p, &flat), ax, 0, (m - 1) * step + 1);
}

/* Slice with constant starts/ends/axes/steps: dy put back where its values
 * came from, zeros elsewhere. Per sliced axis, a negative step reads the
 * values in reverse (so dy is reversed first), a step s > 1 leaves s - 1
 * values out between two (spread), and the rest is padding. */
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
    if (!pr) {
        nst = ns;
        for (int i = 0; i < ns; i++) steps[i] = 1;
    }
    if (ns != ne || ns != na || nst != ns)
        return px_ad_error(a, n, "starts, ends, axes and steps differ in length");
    int64_t pads[2 * PX_MAX_RANK] = {0};
    const px_value *y = n->outputs[0];
    px_value *g = dy[0];
    for (int i = 0; i < ns && g; i++) {
        int ax;
        if (px_su_norm_axis(n, a->d, axes[i], rank, 0, "axis", &ax)) return -1;
        int64_t dim = x->shape.dims[ax], st = starts[i], step = steps[i], m = y->shape.dims[ax];
        if (step == 0) return px_ad_error(a, n, "step 0 on axis %d", ax);
        if (st < 0) st += dim;
        if (st < 0) st = 0;
        if (st > (step > 0 ? dim : dim - 1)) st = step > 0 ? dim : dim - 1;
        if (m > 0 && step < 0) { /* the values st, st + step, ...: reversed, ascending */
            g = slice_step(a, g, ax, -1, INT64_MIN, -1);
            st += (m - 1) * step;
            step = -step;
        }
        if (m > 1 && step > 1) {
            if (rank == PX_MAX_RANK)
                return px_ad_error(a, n,
                                   "step %lld on a rank-%d tensor (the gradient needs a "
                                   "rank more)",
                                   (long long)steps[i], rank);
            g = spread(a, g, ax, step);
        }
        if (m == 0) st = 0;
        pads[ax] = st;
        pads[rank + ax] = dim - st - (m > 0 ? (m - 1) * step + 1 : 0);
    }
    return g ? px_ad_accum(a, n, 0, pad_zeros(a, g, pads)) : -1;
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
            kept.sym_id[i] = 0;
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
