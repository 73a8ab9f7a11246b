/* Gradient rules of the ops that move elements without arithmetic on
 * them: Split (the output gradients concatenated, zeros for unused
 * outputs), Tile (the gradient summed over the copies), Pad (the gradient
 * sliced back, plus the copies' gradients in reflect/edge/wrap mode), Trilu (the same triangle of
 * the gradient) and CumSum (the cumulative sum of the gradient in the other direction). Shapes are
 * static after folding, so every parameter is a constant. */
#include "grad_internal.h"
#include "shape_util.h"

#include <stdlib.h>
#include <string.h>

/* Zeros shaped like v. */
static px_value *zeros_like(px_ad *a, const px_value *v) {
    return px_ad_2(a, "Expand", px_ad_scalar(a, v->dtype, 0.0),
                   px_ad_ints(a, v->shape.rank, v->shape.dims));
}

int px_grad_split(px_ad *a, px_node *n, px_value *const *dy) {
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
int px_grad_tile(px_ad *a, px_node *n, px_value *const *dy) {
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
            split.sym_id[split.rank++] = 0;
        }
        split.dims[split.rank] = x->shape.dims[i];
        split.sym_id[split.rank++] = 0;
    }
    if (na == 0) return px_ad_accum(a, n, 0, dy[0]);
    px_value *g = px_ad_reduce_sum(a, px_ad_reshape(a, dy[0], &split), na, axes, 0);
    return px_ad_accum(a, n, 0, g);
}

/* Input coordinate of output coordinate o on an axis of n elements padded
 * by `begin` in front, in mode reflect, edge or wrap (the runtime's pad_map
 * in runtime/kernels/tensor_window.c). */
static int64_t pad_source(const char *mode, int64_t o, int64_t begin, int64_t n) {
    int64_t i = o - begin;
    if (i >= 0 && i < n) return i;
    if (strcmp(mode, "edge") == 0) return i < 0 ? 0 : n - 1;
    if (strcmp(mode, "wrap") == 0) return (i % n + n) % n;
    if (n == 1) return 0; /* reflect */
    int64_t period = 2 * (n - 1);
    i = (i % period + period) % period;
    return i < n ? i : period - i;
}

/* Pad in reflect, edge or wrap mode: every output element copies one input
 * element, so along each padded axis the gradient is dy scatter-added to the
 * source coordinates (ai.parallax::GatherGradDense), one axis after the
 * other (the modes pad each axis independently). */
static px_value *unpad_gather(px_ad *a, const px_node *n, px_value *g, const char *mode,
                              const int64_t *begin, const int64_t *end) {
    const px_value *x = n->inputs[0];
    for (int ax = 0; g && ax < x->shape.rank; ax++) {
        int64_t len = x->shape.dims[ax] + begin[ax] + end[ax];
        if (begin[ax] == 0 && end[ax] == 0) continue;
        if (x->shape.dims[ax] == 0 || len > 1 << 20)
            return px_ad_error(a, n, "no gradient rule for padding axis %d of %lld elements", ax,
                               (long long)x->shape.dims[ax]),
                   NULL;
        int64_t *src = malloc(sizeof *src * (size_t)(len ? len : 1));
        if (!src) return px_ad_error(a, n, "out of memory"), NULL;
        for (int64_t o = 0; o < len; o++)
            src[o] = pad_source(mode, o, begin[ax], x->shape.dims[ax]);
        px_value *in[2] = {g, px_ad_ints(a, (int)len, src)};
        free(src);
        px_node *s = in[1] ? px_ad_op(a, "GatherGradDense", PX_DOMAIN_PARALLAX, 2, in, 1) : NULL;
        if (!s) return NULL;
        px_shape sh = g->shape;
        sh.dims[ax] = x->shape.dims[ax];
        px_node_set_attr_int(s, "axis", ax);
        px_node_set_attr_ints(s, "shape", sh.rank, sh.dims);
        g = px_ad_done(a, s);
    }
    return g;
}

/* Pad: in constant mode (pads >= 0) dy sliced back to x's extent; in the
 * other modes the copies' gradients added to their sources as well. */
int px_grad_pad(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = n->inputs[0];
    int rank = x->shape.rank;
    const char *mode = px_attr_string(n, "mode", "constant");
    if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge") &&
        strcmp(mode, "wrap"))
        return px_ad_error(a, n, "no gradient rule for mode '%s'", mode);
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
    int64_t begin[PX_MAX_RANK] = {0}, end[PX_MAX_RANK] = {0};
    for (int i = 0; i < na; i++) {
        int ax;
        if (px_su_norm_axis(n, a->d, axes[i], rank, 0, "axis", &ax)) return -1;
        begin[ax] = pads[i];
        end[ax] = pads[na + i];
    }
    if (strcmp(mode, "constant"))
        return px_ad_accum(a, n, 0, unpad_gather(a, n, dy[0], mode, begin, end));
    int64_t starts[PX_MAX_RANK], ends[PX_MAX_RANK], sl_axes[PX_MAX_RANK];
    for (int ax = 0; ax < rank; ax++) {
        if (begin[ax] < 0 || end[ax] < 0)
            return px_ad_error(a, n, "no gradient rule for negative pads in constant mode");
        sl_axes[ax] = ax;
        starts[ax] = begin[ax];
        ends[ax] = begin[ax] + x->shape.dims[ax];
    }
    int64_t opset = px_graph_opset(a->g, "");
    px_node *s;
    if (opset == 0 || opset >= 10) {
        px_value *in[4] = {dy[0], px_ad_ints(a, rank, starts), px_ad_ints(a, rank, ends),
                           px_ad_ints(a, rank, sl_axes)};
        if (!in[1] || !in[2] || !in[3]) return -1;
        s = px_ad_op(a, "Slice", "", 4, in, 1);
    } else {
        s = px_ad_op(a, "Slice", "", 1, dy, 1);
        px_node_set_attr_ints(s, "starts", rank, starts);
        px_node_set_attr_ints(s, "ends", rank, ends);
        px_node_set_attr_ints(s, "axes", rank, sl_axes);
    }
    return px_ad_accum(a, n, 0, px_ad_done(a, s));
}

int px_grad_trilu(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *in[2] = {dy[0], n->n_inputs > 1 ? n->inputs[1] : NULL};
    px_node *t = px_ad_op(a, "Trilu", "", in[1] ? 2 : 1, in, 1);
    if (!t) return -1;
    px_node_set_attr_int(t, "upper", px_attr_int(n, "upper", 1));
    return px_ad_accum(a, n, 0, px_ad_done(a, t));
}

/* y_i = sum_{j <= i} x_j (or j < i, exclusive): dx_j = sum_{i >= j} dy_i,
 * the same cumulative sum run in the other direction. */
int px_grad_cumsum(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *in[2] = {dy[0], n->inputs[1]};
    px_node *c = px_ad_op(a, "CumSum", "", 2, in, 1);
    if (!c) return -1;
    px_node_set_attr_int(c, "exclusive", px_attr_int(n, "exclusive", 0));
    px_node_set_attr_int(c, "reverse", !px_attr_int(n, "reverse", 0));
    return px_ad_accum(a, n, 0, px_ad_done(a, c));
}
