/* Shape functions of the neural-network ops: MatMul, Gemm, Conv, pooling,
 * BatchNormalization, LayerNormalization, Dropout. */
#include "shape_util.h"

#include <string.h>

int px_shape_matmul(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *a, *b;
    if (px_su_arity(n, 2, 2, d) || px_su_need(n, 0, "A", d, &a) || px_su_need(n, 1, "B", d, &b))
        return -1;
    if (px_su_same_dtype(n, d, a, b) || px_su_want_numeric(n, d, a, "A")) return -1;
    int ra = a->shape.rank, rb = b->shape.rank;
    if (ra == 0 || rb == 0) return px_su_error(d, n, "MatMul operands must have rank >= 1");
    px_shape out = px_shape_unknown();
    if (ra < 0 || rb < 0) return px_su_set(n, 0, a->dtype, &out, d);
    /* numpy: a 1-D operand is promoted to a matrix and the added dim dropped */
    px_shape am = a->shape, bm = b->shape;
    if (ra == 1) {
        am = px_su_unknown_rank(2);
        px_su_set_dim(&am, 0, 1);
        px_su_copy_dim(&am, 1, &a->shape, 0);
    }
    if (rb == 1) {
        bm = px_su_unknown_rank(2);
        px_su_copy_dim(&bm, 0, &b->shape, 0);
        px_su_set_dim(&bm, 1, 1);
    }
    int64_t ka = am.dims[am.rank - 1], kb = bm.dims[bm.rank - 2];
    if (ka >= 0 && kb >= 0 && ka != kb) {
        char sa[256], sb[256];
        return px_su_error(d, n, "inner dims differ: %s x %s (%lld vs %lld)",
                           px_shape_str(&a->shape, sa, sizeof sa),
                           px_shape_str(&b->shape, sb, sizeof sb), (long long)ka, (long long)kb);
    }
    px_shape ba = am, bb = bm;
    ba.rank -= 2;
    bb.rank -= 2;
    if (px_su_broadcast(n, d, &ba, &bb, &out)) return -1;
    if (ra > 1) px_su_copy_dim(&out, out.rank++, &am, am.rank - 2);
    if (rb > 1) px_su_copy_dim(&out, out.rank++, &bm, bm.rank - 1);
    return px_su_set(n, 0, a->dtype, &out, d);
}

int px_shape_gemm(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *a, *b, *c = px_su_in(n, 2);
    if (px_su_arity(n, 2, 3, d) || px_su_need(n, 0, "A", d, &a) || px_su_need(n, 1, "B", d, &b))
        return -1;
    if (px_su_same_dtype(n, d, a, b) || (c && px_su_same_dtype(n, d, a, c))) return -1;
    if (px_su_want_numeric(n, d, a, "A")) return -1;
    if (a->shape.rank >= 0 && a->shape.rank != 2)
        return px_su_error(d, n, "A '%s' must be 2-D, has rank %d", a->name, a->shape.rank);
    if (b->shape.rank >= 0 && b->shape.rank != 2)
        return px_su_error(d, n, "B '%s' must be 2-D, has rank %d", b->name, b->shape.rank);
    int ta = px_attr_int(n, "transA", 0) != 0, tb = px_attr_int(n, "transB", 0) != 0;
    px_shape out = px_su_unknown_rank(2);
    int64_t ka = -1, kb = -1;
    if (a->shape.rank == 2) {
        px_su_copy_dim(&out, 0, &a->shape, ta ? 1 : 0);
        ka = a->shape.dims[ta ? 0 : 1];
    }
    if (b->shape.rank == 2) {
        px_su_copy_dim(&out, 1, &b->shape, tb ? 0 : 1);
        kb = b->shape.dims[tb ? 1 : 0];
    }
    if (ka >= 0 && kb >= 0 && ka != kb) {
        char sa[256], sb[256];
        return px_su_error(d, n, "inner dims differ: A %s%s, B %s%s (%lld vs %lld)",
                           px_shape_str(&a->shape, sa, sizeof sa), ta ? "^T" : "",
                           px_shape_str(&b->shape, sb, sizeof sb), tb ? "^T" : "", (long long)ka,
                           (long long)kb);
    }
    if (c && px_su_check_unidirectional(n, d, &out, &c->shape, "C")) return -1;
    return px_su_set(n, 0, a->dtype, &out, d);
}

/* Spatial parameters shared by Conv and the pools. */
typedef struct window {
    int s; /* spatial rank */
    int64_t kernel[PX_MAX_RANK], strides[PX_MAX_RANK], dilations[PX_MAX_RANK];
    int64_t pads[2 * PX_MAX_RANK];
    const char *auto_pad;
    int ceil_mode;
} window;

/* Reads an optional per-axis ints attribute of `count` entries (default dflt). */
static int window_ints(const px_node *n, px_diag *d, const char *name, int count, int64_t dflt,
                       int64_t *out) {
    int c = 0;
    const int64_t *v = px_attr_ints(n, name, &c);
    if (!px_node_attr(n, name)) {
        for (int i = 0; i < count; i++) out[i] = dflt;
        return 0;
    }
    if (c != count)
        return px_su_error(d, n, "attribute '%s' has %d entries, expected %d", name, c, count);
    memcpy(out, v, (size_t)count * sizeof *out);
    return 0;
}

static int read_window(const px_node *n, px_diag *d, int s, window *w) {
    w->s = s;
    w->auto_pad = px_attr_string(n, "auto_pad", "NOTSET");
    w->ceil_mode = px_attr_int(n, "ceil_mode", 0) != 0;
    if (strcmp(w->auto_pad, "NOTSET") && strcmp(w->auto_pad, "SAME_UPPER") &&
        strcmp(w->auto_pad, "SAME_LOWER") && strcmp(w->auto_pad, "VALID"))
        return px_su_error(d, n, "unknown auto_pad '%s'", w->auto_pad);
    if (window_ints(n, d, "strides", s, 1, w->strides) ||
        window_ints(n, d, "dilations", s, 1, w->dilations) ||
        window_ints(n, d, "pads", 2 * s, 0, w->pads))
        return -1;
    for (int i = 0; i < s; i++) {
        if (w->strides[i] < 1 || w->dilations[i] < 1)
            return px_su_error(d, n, "strides and dilations must be >= 1 (axis %d: %lld, %lld)", i,
                               (long long)w->strides[i], (long long)w->dilations[i]);
        if (w->pads[i] < 0 || w->pads[i + s] < 0)
            return px_su_error(d, n, "pads must be >= 0 (axis %d)", i);
    }
    return 0;
}

/* One spatial output size; -1 when in or k is unknown. */
static int window_out(const px_node *n, px_diag *d, const window *w, int i, int64_t in, int64_t k,
                      int64_t *out) {
    *out = -1;
    if (in < 0) return 0;
    int64_t st = w->strides[i];
    if (!strcmp(w->auto_pad, "SAME_UPPER") || !strcmp(w->auto_pad, "SAME_LOWER")) {
        *out = (in + st - 1) / st;
        return 0;
    }
    if (k < 0) return 0;
    if (k < 1) return px_su_error(d, n, "kernel size %lld on spatial axis %d", (long long)k, i);
    int64_t ek;
    if (px_mul_checked(k - 1, w->dilations[i], &ek) || ek > INT64_MAX / 4)
        return px_su_error(d, n, "absurd kernel extent on spatial axis %d", i);
    ek += 1;
    int valid = !strcmp(w->auto_pad, "VALID");
    int64_t lo = valid ? 0 : w->pads[i], hi = valid ? 0 : w->pads[i + w->s];
    int64_t span = in + lo + hi - ek;
    if (span < 0)
        return px_su_error(
            d, n, "kernel extent %lld exceeds the padded input size %lld on spatial axis %d",
            (long long)ek, (long long)(in + lo + hi), i);
    int64_t o = (w->ceil_mode ? (span + st - 1) / st : span / st) + 1;
    /* the last window must start inside the input or its left padding */
    if (w->ceil_mode && (o - 1) * st >= in + lo) o--;
    *out = o;
    return 0;
}

int px_shape_conv(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x, *w, *b = px_su_in(n, 2);
    if (px_su_arity(n, 2, 3, d) || px_su_need(n, 0, "X", d, &x) || px_su_need(n, 1, "W", d, &w))
        return -1;
    if (px_su_same_dtype(n, d, x, w) || px_su_want_float(n, d, x, "X")) return -1;
    if (b && px_su_same_dtype(n, d, x, b)) return -1;
    int r = x->shape.rank >= 0 ? x->shape.rank : w->shape.rank;
    if (x->shape.rank >= 0 && w->shape.rank >= 0 && x->shape.rank != w->shape.rank)
        return px_su_error(d, n, "X has rank %d but W rank %d", x->shape.rank, w->shape.rank);
    px_shape out = px_su_unknown_rank(r);
    if (r < 0) return px_su_set(n, 0, x->dtype, &out, d);
    if (r < 3) return px_su_error(d, n, "X must have rank >= 3 (N, C, spatial...), has %d", r);
    int s = r - 2;
    window win;
    if (read_window(n, d, s, &win)) return -1;
    int64_t group = px_attr_int(n, "group", 1);
    if (group < 1) return px_su_error(d, n, "group must be >= 1, got %lld", (long long)group);
    const px_shape *xs = &x->shape, *ws = &w->shape;
    int64_t cin = xs->rank >= 0 ? xs->dims[1] : -1;
    int64_t m = ws->rank >= 0 ? ws->dims[0] : -1, cw = ws->rank >= 0 ? ws->dims[1] : -1;
    if (cin >= 0 && cw >= 0 && cin != cw * group)
        return px_su_error(d, n, "X has %lld channels but W expects %lld per group x %lld groups",
                           (long long)cin, (long long)cw, (long long)group);
    if (m >= 0 && m % group != 0)
        return px_su_error(d, n, "W has %lld output channels, not divisible by group %lld",
                           (long long)m, (long long)group);
    if (b && b->shape.rank >= 0 &&
        (b->shape.rank != 1 || (m >= 0 && b->shape.dims[0] >= 0 && b->shape.dims[0] != m)))
        return px_su_error(d, n, "bias B '%s' must be 1-D of size M = %lld", b->name, (long long)m);
    int has_kernel = px_node_attr(n, "kernel_shape") != NULL;
    int64_t kernel[PX_MAX_RANK];
    if (window_ints(n, d, "kernel_shape", s, -1, kernel)) return -1;
    if (xs->rank >= 0) px_su_copy_dim(&out, 0, xs, 0);
    if (ws->rank >= 0) px_su_copy_dim(&out, 1, ws, 0);
    for (int i = 0; i < s; i++) {
        int64_t k = ws->rank >= 0 ? ws->dims[2 + i] : -1;
        if (has_kernel && k >= 0 && kernel[i] != k)
            return px_su_error(d, n, "kernel_shape[%d] = %lld but W has %lld", i,
                               (long long)kernel[i], (long long)k);
        if (has_kernel) k = kernel[i];
        int64_t o;
        if (window_out(n, d, &win, i, xs->rank >= 0 ? xs->dims[2 + i] : -1, k, &o)) return -1;
        px_su_set_dim(&out, 2 + i, o);
    }
    return px_su_set(n, 0, x->dtype, &out, d);
}

int px_shape_pool(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "X", d, &x)) return -1;
    if (n->op == PX_OP_AveragePool && px_su_want_float(n, d, x, "X")) return -1;
    if (px_su_want_numeric(n, d, x, "X")) return -1;
    int kc = 0;
    const int64_t *kernel = px_attr_ints(n, "kernel_shape", &kc);
    if (!px_node_attr(n, "kernel_shape"))
        return px_su_error(d, n, "missing required attribute 'kernel_shape'");
    int r = x->shape.rank;
    if (r >= 0 && r != kc + 2)
        return px_su_error(d, n, "kernel_shape has %d entries but X has rank %d", kc, r);
    r = kc + 2;
    if (r > PX_MAX_RANK) return px_su_error(d, n, "kernel_shape has too many entries (%d)", kc);
    window win;
    if (read_window(n, d, kc, &win)) return -1;
    if (n->op == PX_OP_MaxPool && px_attr_int(n, "storage_order", 0) != 0 &&
        px_attr_int(n, "storage_order", 0) != 1)
        return px_su_error(d, n, "storage_order must be 0 or 1");
    px_shape out = px_su_unknown_rank(r);
    if (x->shape.rank >= 0) {
        px_su_copy_dim(&out, 0, &x->shape, 0);
        px_su_copy_dim(&out, 1, &x->shape, 1);
    }
    for (int i = 0; i < kc; i++) {
        int64_t o;
        if (window_out(n, d, &win, i, x->shape.rank >= 0 ? x->shape.dims[2 + i] : -1, kernel[i],
                       &o))
            return -1;
        px_su_set_dim(&out, 2 + i, o);
    }
    if (px_su_set(n, 0, x->dtype, &out, d)) return -1;
    return px_su_set(n, 1, PX_I64, &out, d); /* MaxPool's Indices */
}

int px_shape_global_pool(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "X", d, &x)) return -1;
    if (px_su_want_numeric(n, d, x, "X")) return -1;
    int r = x->shape.rank;
    if (r >= 0 && r < 2) return px_su_error(d, n, "X must have rank >= 2, has %d", r);
    px_shape out = x->shape;
    for (int i = 2; i < r; i++) px_su_set_dim(&out, i, 1);
    return px_su_set(n, 0, x->dtype, &out, d);
}

int px_shape_batchnorm(px_graph *g, px_node *n, px_diag *d) {
    px_value *x, *p[4];
    static const char *const what[4] = {"scale", "B", "input_mean", "input_var"};
    if (px_su_arity(n, 5, 5, d) || px_su_need(n, 0, "X", d, &x)) return -1;
    if (px_su_want_float(n, d, x, "X")) return -1;
    int r = x->shape.rank;
    if (r >= 0 && r < 2) return px_su_error(d, n, "X must have rank >= 2 (N, C, ...), has %d", r);
    px_shape c = px_su_unknown_rank(1);
    if (r >= 0) px_su_copy_dim(&c, 0, &x->shape, 1);
    /* opset 7's spatial=0 takes per-activation statistics: shapes differ */
    int spatial = px_su_opset(g) >= 9 || px_attr_int(n, "spatial", 1) != 0;
    for (int i = 0; i < 4; i++) {
        if (px_su_need(n, i + 1, what[i], d, &p[i]) || px_su_want_float(n, d, p[i], what[i]))
            return -1;
        const px_shape *ps = &p[i]->shape;
        if (!spatial || ps->rank < 0) continue;
        if (ps->rank != 1 || (c.dims[0] >= 0 && ps->dims[0] >= 0 && ps->dims[0] != c.dims[0])) {
            char a[256];
            return px_su_error(d, n, "%s '%s' has shape %s, expected [C] with C = %lld", what[i],
                               p[i]->name, px_shape_str(ps, a, sizeof a), (long long)c.dims[0]);
        }
        if (c.dims[0] < 0 && ps->dims[0] >= 0) px_su_copy_dim(&c, 0, ps, 0);
    }
    if (p[2]->dtype != p[3]->dtype) return px_su_same_dtype(n, d, p[2], p[3]);
    px_shape stat = spatial ? c : p[2]->shape;
    /* running mean/var take input_mean's type; saved (opset < 14) X's */
    if (px_su_set(n, 0, x->dtype, &x->shape, d) || px_su_set(n, 1, p[2]->dtype, &stat, d) ||
        px_su_set(n, 2, p[3]->dtype, &stat, d) || px_su_set(n, 3, x->dtype, &stat, d) ||
        px_su_set(n, 4, x->dtype, &stat, d))
        return -1;
    return 0;
}

int px_shape_layernorm(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x, *scale, *bias = px_su_in(n, 2);
    if (px_su_arity(n, 2, 3, d) || px_su_need(n, 0, "X", d, &x) ||
        px_su_need(n, 1, "Scale", d, &scale))
        return -1;
    if (px_su_want_float(n, d, x, "X")) return -1;
    int64_t stash = px_attr_int(n, "stash_type", PX_F32);
    if (stash < 0 || stash > 1000 || !px_dtype_is_float((px_dtype)stash))
        return px_su_error(d, n, "stash_type %lld is not a floating-point type", (long long)stash);
    int r = x->shape.rank, axis = 0;
    px_shape stat = px_shape_unknown();
    if (r >= 0) {
        if (px_su_norm_axis(n, d, px_attr_int(n, "axis", -1), r, 0, "axis", &axis)) return -1;
        px_shape norm = x->shape; /* the normalized trailing dims */
        norm.rank = 0;
        for (int i = axis; i < r; i++) px_su_copy_dim(&norm, norm.rank++, &x->shape, i);
        if (px_su_check_unidirectional(n, d, &norm, &scale->shape, "Scale") ||
            (bias && px_su_check_unidirectional(n, d, &norm, &bias->shape, "B")))
            return -1;
        stat = x->shape;
        for (int i = axis; i < r; i++) px_su_set_dim(&stat, i, 1);
    }
    if (px_su_set(n, 0, x->dtype, &x->shape, d) || px_su_set(n, 1, (px_dtype)stash, &stat, d) ||
        px_su_set(n, 2, (px_dtype)stash, &stat, d))
        return -1;
    return 0;
}

int px_shape_dropout(px_graph *g, px_node *n, px_diag *d) {
    px_value *x;
    if (px_su_arity(n, 1, 3, d) || px_su_need(n, 0, "data", d, &x)) return -1;
    if (px_su_want_float(n, d, x, "data")) return -1;
    px_value *ratio = px_su_in(n, 1), *train = px_su_in(n, 2);
    double rv = px_attr_float(n, "ratio", 0.5f);
    int known = 1;
    if (ratio) {
        if (px_su_want_float(n, d, ratio, "ratio")) return -1;
        known = px_su_const_scalar(n, d, ratio, "ratio", &rv);
        if (known < 0) return -1;
    }
    if (known && !(rv >= 0 && rv < 1))
        return px_su_error(d, n, "ratio must be in [0, 1), got %g", rv);
    if (train && train->dtype != PX_BOOL)
        return px_su_error(d, n, "training_mode '%s' must be bool, got %s", train->name,
                           px_dtype_name(train->dtype));
    /* the mask was typed like the data before opset 10 */
    px_dtype mask = px_su_opset(g) >= 10 ? PX_BOOL : x->dtype;
    if (px_su_set(n, 0, x->dtype, &x->shape, d) || px_su_set(n, 1, mask, &x->shape, d)) return -1;
    return 0;
}
