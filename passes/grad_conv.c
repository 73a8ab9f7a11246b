/* Gradient rules of Conv and the pools. The window geometry (kernel,
 * strides, dilations, explicit begin/end pads with auto_pad resolved) is
 * worked out here once and written as plain attributes on the backward ops
 * of ir/shape_grad.c, so their lowerings and kernels
 * (runtime/kernels/grad_conv.c) need no padding logic:
 *   ConvGradInput(dY, W)   -> dX  (col2im of W^T dY)
 *   ConvGradWeight(dY, X)  -> dW  (dY im2col(X)^T)
 *   MaxPoolGrad(dY, X)     -> dX  (dY routed to each window's first maximum)
 *   AveragePoolGrad(dY)    -> dX  (dY spread over each window / its count)
 * Conv's bias gradient is a ReduceSum of dY; GlobalAveragePool's an Expand;
 * GlobalMaxPool is MaxPoolGrad with one window over all spatial dims.
 * BatchNormalization's gradient, in training mode, is
 *   BatchNormalizationGrad(dY, X, scale) -> dX, dScale, dB
 * (one fused kernel), and built from primitives otherwise (below). */
#include "grad_internal.h"

#include "shape_infer.h"

#include <stdio.h>
#include <string.h>

#define MAX_SPATIAL 3

typedef struct geom {
    int s;
    int64_t k[MAX_SPATIAL], strides[MAX_SPATIAL], dil[MAX_SPATIAL];
    int64_t pads[2 * MAX_SPATIAL]; /* begins, then ends */
} geom;

/* Attribute name of length want (or absent: all def) into out. */
static int axis_ints(px_ad *a, const px_node *n, const char *name, int want, int64_t def,
                     int64_t *out) {
    int cnt = 0;
    const int64_t *v = px_attr_ints(n, name, &cnt);
    if (!v) {
        for (int i = 0; i < want; i++) out[i] = def;
        return 0;
    }
    if (cnt != want)
        return px_ad_error(a, n, "attribute '%s' has %d values, expected %d", name, cnt, want);
    memcpy(out, v, (size_t)want * sizeof *out);
    return 0;
}

/* Geometry of n from X's and Y's shapes; k must already hold the kernel. */
static int resolve(px_ad *a, const px_node *n, const px_value *x, const px_value *y, geom *gm) {
    int s = gm->s;
    if (x->shape.rank < 3 || x->shape.rank > 2 + MAX_SPATIAL || y->shape.rank != x->shape.rank)
        return px_ad_error(a, n, "input of rank %d; gradients support 1 to %d spatial dims",
                           x->shape.rank, MAX_SPATIAL);
    if (axis_ints(a, n, "strides", s, 1, gm->strides) ||
        axis_ints(a, n, "dilations", s, 1, gm->dil) || axis_ints(a, n, "pads", 2 * s, 0, gm->pads))
        return -1;
    const char *auto_pad = px_attr_string(n, "auto_pad", "NOTSET");
    int upper = !strcmp(auto_pad, "SAME_UPPER"), lower = !strcmp(auto_pad, "SAME_LOWER");
    if (!upper && !lower && strcmp(auto_pad, "NOTSET") && strcmp(auto_pad, "VALID"))
        return px_ad_error(a, n, "attribute auto_pad has unknown value '%s'", auto_pad);
    for (int i = 0; i < s; i++) {
        if (gm->k[i] < 1 || gm->strides[i] < 1 || gm->dil[i] < 1)
            return px_ad_error(a, n, "kernel, strides and dilations must be >= 1 (axis %d)", i);
        if (!strcmp(auto_pad, "VALID")) gm->pads[i] = gm->pads[s + i] = 0;
        if (upper || lower) {
            int64_t in = x->shape.dims[2 + i], out = y->shape.dims[2 + i];
            int64_t total = (out - 1) * gm->strides[i] + (gm->k[i] - 1) * gm->dil[i] + 1 - in;
            if (total < 0) total = 0;
            gm->pads[i] = upper ? total / 2 : total - total / 2;
            gm->pads[s + i] = total - gm->pads[i];
        }
    }
    return 0;
}

static void set_geom(px_node *g, const geom *gm) {
    px_node_set_attr_ints(g, "kernel_shape", gm->s, gm->k);
    px_node_set_attr_ints(g, "strides", gm->s, gm->strides);
    px_node_set_attr_ints(g, "dilations", gm->s, gm->dil);
    px_node_set_attr_ints(g, "pads", 2 * gm->s, gm->pads);
}

/* One-output backward op of the given geometry (shape: the output's shape
 * attribute, or NULL for "like input 1"). */
static px_value *window_op(px_ad *a, const char *op, int n_in, px_value *const *in, const geom *gm,
                           const px_shape *shape, int64_t group, int64_t include_pad) {
    for (int i = 0; i < n_in; i++)
        if (!in[i]) return NULL;
    px_node *g = px_ad_op(a, op, PX_DOMAIN_PARALLAX, n_in, in, 1);
    if (!g) return NULL;
    set_geom(g, gm);
    if (shape) px_node_set_attr_ints(g, "shape", shape->rank, shape->dims);
    if (group) px_node_set_attr_int(g, "group", group);
    if (include_pad >= 0) px_node_set_attr_int(g, "count_include_pad", include_pad);
    return px_ad_done(a, g);
}

/* Y = Conv(X, W[, B]) */
int px_grad_conv(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = n->inputs[0], *w = n->inputs[1], *y = n->outputs[0];
    geom gm = {.s = x->shape.rank - 2};
    if (w->shape.rank != x->shape.rank)
        return px_ad_error(a, n, "W has rank %d, X rank %d", w->shape.rank, x->shape.rank);
    for (int i = 0; i < gm.s && i < MAX_SPATIAL; i++) gm.k[i] = w->shape.dims[2 + i];
    if (resolve(a, n, x, y, &gm)) return -1;
    int64_t group = px_attr_int(n, "group", 1);
    if (group < 1 || x->shape.dims[1] != w->shape.dims[1] * group || w->shape.dims[0] % group)
        return px_ad_error(a, n, "group %lld does not fit X's channels and W's shape",
                           (long long)group);
    if (px_ad_wants(a, n, 0)) {
        px_value *in[2] = {dy[0], w};
        if (px_ad_accum(a, n, 0, window_op(a, "ConvGradInput", 2, in, &gm, &x->shape, group, -1)))
            return -1;
    }
    if (px_ad_wants(a, n, 1)) {
        px_value *in[2] = {dy[0], x};
        if (px_ad_accum(a, n, 1, window_op(a, "ConvGradWeight", 2, in, &gm, &w->shape, group, -1)))
            return -1;
    }
    if (px_ad_wants(a, n, 2)) {
        int64_t axes[2 + MAX_SPATIAL];
        int na = 0;
        for (int i = 0; i < x->shape.rank; i++)
            if (i != 1) axes[na++] = i;
        if (px_ad_accum(a, n, 2, px_ad_reduce_sum(a, dy[0], na, axes, 0))) return -1;
    }
    return 0;
}

/* MaxPool / AveragePool. MaxPool's Indices output carries no gradient. */
int px_grad_pool(px_ad *a, px_node *n, px_value *const *dy) {
    if (!dy[0]) return 0;
    px_value *x = n->inputs[0], *y = n->outputs[0];
    geom gm = {.s = x->shape.rank - 2};
    if (gm.s < 1 || gm.s > MAX_SPATIAL)
        return px_ad_error(a, n, "input of rank %d; gradients support 1 to %d spatial dims",
                           x->shape.rank, MAX_SPATIAL);
    if (!px_node_attr(n, "kernel_shape"))
        return px_ad_error(a, n, "missing required attribute 'kernel_shape'");
    if (axis_ints(a, n, "kernel_shape", gm.s, 1, gm.k) || resolve(a, n, x, y, &gm)) return -1;
    if (n->op == PX_OP_MaxPool) {
        px_value *in[2] = {dy[0], x};
        return px_ad_accum(a, n, 0, window_op(a, "MaxPoolGrad", 2, in, &gm, NULL, 0, -1));
    }
    int64_t include = px_attr_int(n, "count_include_pad", 0) != 0;
    return px_ad_accum(a, n, 0, window_op(a, "AveragePoolGrad", 1, dy, &gm, &x->shape, 0, include));
}

int px_grad_global_pool(px_ad *a, px_node *n, px_value *const *dy) {
    px_value *x = n->inputs[0];
    int r = x->shape.rank;
    if (r < 3 || r > 2 + MAX_SPATIAL)
        return px_ad_error(a, n, "input of rank %d; gradients support 1 to %d spatial dims", r,
                           MAX_SPATIAL);
    if (n->op == PX_OP_GlobalMaxPool) {
        geom gm = {.s = r - 2};
        for (int i = 0; i < gm.s; i++) {
            gm.k[i] = x->shape.dims[2 + i];
            gm.strides[i] = gm.dil[i] = 1;
        }
        px_value *in[2] = {dy[0], x};
        return px_ad_accum(a, n, 0, window_op(a, "MaxPoolGrad", 2, in, &gm, NULL, 0, -1));
    }
    double count = 1;
    for (int i = 2; i < r; i++) count *= (double)x->shape.dims[i];
    px_value *g = px_ad_2(a, "Mul", dy[0], px_ad_scalar(a, dy[0]->dtype, 1.0 / count));
    return px_ad_accum(a, n, 0, px_ad_2(a, "Expand", g, px_ad_ints(a, r, x->shape.dims)));
}

/* x cast to dt unless it has it already (running statistics may differ) */
static px_value *as_dtype(px_ad *a, px_value *x, px_dtype dt) {
    if (!x || x->dtype == dt) return x;
    px_node *c = px_ad_op(a, "Cast", "", 1, &x, 1);
    if (!c) return NULL;
    px_node_set_attr_int(c, "to", dt);
    return px_ad_done(a, c);
}

/* A training-mode BatchNormalization whose X, scale and B share one
 * dtype, float or double, gets its gradient from one fused
 * BatchNormalizationGrad (runtime/kernels/nn_batchnorm_grad.c: two passes
 * over X and dY instead of a dozen primitive ops); the formula below is
 * its reference, and builds the other cases. */
static int fused_batchnorm_grad_fits(const px_node *n) {
    px_dtype dt = n->inputs[0]->dtype;
    return (dt == PX_F32 || dt == PX_F64) && n->inputs[1]->dtype == dt && n->n_inputs > 2 &&
           n->inputs[2] && n->inputs[2]->dtype == dt;
}

static int fused_batchnorm_grad(px_ad *a, px_node *n, px_value *dy, double eps) {
    char name[512];
    snprintf(name, sizeof name, "grad/%s/BatchNormalizationGrad", n->name[0] ? n->name : "bn");
    px_value *out[3] = {0}, *in[3] = {dy, n->inputs[0], n->inputs[1]};
    px_shape unknown = px_shape_unknown();
    int any = 0;
    for (int i = 0; i < 3; i++)
        if (px_ad_wants(a, n, i)) {
            out[i] = px_graph_new_value(a->g, name, PX_UNDEFINED, &unknown);
            any = 1;
        }
    if (!any) return 0;
    px_node *gn =
        px_graph_add_node(a->g, "BatchNormalizationGrad", PX_DOMAIN_PARALLAX, name, 3, in, 3, out);
    if (!gn) return px_ad_error(a, n, "cannot add the backward node");
    px_node_set_attr_float(gn, "epsilon", (float)eps);
    if (px_infer_node(a->g, gn, a->d)) return -1;
    for (int i = 0; i < 3; i++)
        if (out[i] && px_ad_accum(a, n, i, out[i])) return -1;
    return 0;
}

/* BatchNormalization over N and the spatial dims, per channel. With
 * training_mode the statistics are the batch's (biased variance),
 * recomputed here: xhat = (x - mean) * rstd,
 * dx = scale * rstd * (dy - mean(dy) - xhat * mean(dy * xhat));
 * otherwise input_mean / input_var are constants of the formula and
 * dx = dy * scale * rstd. Both: dscale = sum(dy * xhat), dB = sum(dy).
 * input_mean / input_var are running statistics (state, not parameters:
 * PyTorch keeps them as buffers), so they get no gradient. */
int px_grad_batchnorm(px_ad *a, px_node *n, px_value *const *dy) {
    for (int o = 1; o < n->n_outputs; o++)
        if (dy[o]) return px_ad_error(a, n, "no gradient rule through the statistics outputs");
    if (!dy[0]) return 0;
    px_value *x = n->inputs[0], *scale = n->inputs[1];
    int r = x->shape.rank;
    if (r < 2) return px_ad_error(a, n, "X must have rank >= 2, has %d", r);
    if (px_graph_opset(a->g, "") > 0 && px_graph_opset(a->g, "") < 9 &&
        px_attr_int(n, "spatial", 1) == 0)
        return px_ad_error(a, n, "no gradient rule for spatial = 0");
    int64_t axes[PX_MAX_RANK], cdims[PX_MAX_RANK];
    int na = 0;
    double count = 1;
    for (int i = 0; i < r; i++) {
        cdims[i] = i == 1 ? x->shape.dims[1] : 1;
        if (i == 1) continue;
        axes[na++] = i;
        count *= (double)x->shape.dims[i];
    }
    px_shape cs = px_shape_make(r, cdims);
    int training = px_attr_int(n, "training_mode", 0) != 0;
    double eps = px_attr_float(n, "epsilon", 1e-5f);
    if (training && fused_batchnorm_grad_fits(n)) return fused_batchnorm_grad(a, n, dy[0], eps);
    px_value *mean, *var;
    if (training) {
        mean = px_ad_mean_keep(a, x, na, axes, count);
        px_value *xc0 = px_ad_2(a, "Sub", x, mean);
        var = px_ad_mean_keep(a, px_ad_2(a, "Mul", xc0, xc0), na, axes, count);
    } else {
        mean = px_ad_reshape(a, n->inputs[3], &cs);
        var = px_ad_reshape(a, n->inputs[4], &cs);
    }
    mean = as_dtype(a, mean, x->dtype);
    var = as_dtype(a, var, x->dtype);
    px_value *rstd =
        px_ad_1(a, "Reciprocal",
                px_ad_1(a, "Sqrt", px_ad_2(a, "Add", var, px_ad_scalar(a, x->dtype, eps))));
    px_value *xhat = px_ad_2(a, "Mul", px_ad_2(a, "Sub", x, mean), rstd);
    if (px_ad_wants(a, n, 0)) {
        px_value *sr = px_ad_2(a, "Mul", px_ad_reshape(a, scale, &cs), rstd), *t = dy[0];
        if (training) {
            px_value *m1 = px_ad_mean_keep(a, dy[0], na, axes, count);
            px_value *m2 = px_ad_mean_keep(a, px_ad_2(a, "Mul", dy[0], xhat), na, axes, count);
            t = px_ad_2(a, "Sub", px_ad_2(a, "Sub", dy[0], m1), px_ad_2(a, "Mul", xhat, m2));
        }
        if (px_ad_accum(a, n, 0, px_ad_2(a, "Mul", sr, t))) return -1;
    }
    if (px_ad_wants(a, n, 1) &&
        px_ad_accum(a, n, 1, px_ad_reduce_sum(a, px_ad_2(a, "Mul", dy[0], xhat), na, axes, 0)))
        return -1;
    if (px_ad_wants(a, n, 2) && px_ad_accum(a, n, 2, px_ad_reduce_sum(a, dy[0], na, axes, 0)))
        return -1;
    return 0;
}
