/* Sliding-window ops: Conv, MaxPool, AveragePool (runtime/kernels/nn_conv.c,
 * nn_pool.c) and the global pools. Padding (auto_pad or pads) is resolved
 * here into explicit begin/end pads; the output sizes come from shape
 * inference and are checked against the ONNX formulas. */
#include "lower_nn_internal.h"

#include <limits.h>
#include <string.h>

/* Resolved geometry of one window op. */
typedef struct window {
    int s; /* spatial rank */
    int64_t in[PX_LNN_MAX_SPATIAL], k[PX_LNN_MAX_SPATIAL], out[PX_LNN_MAX_SPATIAL];
    int64_t strides[PX_LNN_MAX_SPATIAL], dil[PX_LNN_MAX_SPATIAL];
    int64_t pad_begin[PX_LNN_MAX_SPATIAL], pad_end[PX_LNN_MAX_SPATIAL];
} window;

/* Fills w from X and Y's shapes, the kernel sizes in w->k and the node's
 * strides / dilations / pads / auto_pad / ceil_mode attributes. */
static int resolve_window(const px_node *n, const px_value *x, const px_value *y, window *w,
                          int allow_ceil, px_diag *d) {
    int s = w->s;
    int64_t pads[2 * PX_LNN_MAX_SPATIAL];
    if (px_lnn_axis_ints(n, "strides", s, 1, w->strides, d) ||
        px_lnn_axis_ints(n, "dilations", s, 1, w->dil, d) ||
        px_lnn_axis_ints(n, "pads", 2 * s, 0, pads, d))
        return -1;
    const char *auto_pad = px_attr_string(n, "auto_pad", "NOTSET");
    int same_upper = !strcmp(auto_pad, "SAME_UPPER"), same_lower = !strcmp(auto_pad, "SAME_LOWER");
    int valid = !strcmp(auto_pad, "VALID");
    if (!same_upper && !same_lower && !valid && strcmp(auto_pad, "NOTSET"))
        return px_lower_error(d, n, "attribute auto_pad has unknown value '%s'", auto_pad);
    int ceil_mode = allow_ceil && px_attr_int(n, "ceil_mode", 0) != 0;
    for (int i = 0; i < s; i++) {
        int64_t in = x->shape.dims[2 + i], k = w->k[i], st = w->strides[i], dl = w->dil[i];
        int64_t out = y->shape.dims[2 + i];
        if (st < 1 || dl < 1 || k < 1)
            return px_lower_error(d, n,
                                  "spatial axis %d: kernel %lld, stride %lld, dilation %lld must "
                                  "be >= 1",
                                  i, (long long)k, (long long)st, (long long)dl);
        if (k > INT_MAX / dl) return px_lower_error(d, n, "kernel extent too large on axis %d", i);
        int64_t ext = (k - 1) * dl + 1, want, want2;
        w->in[i] = in;
        w->out[i] = out;
        if (same_upper || same_lower) {
            want = want2 = (in + st - 1) / st;
            int64_t total = (want - 1) * st + ext - in;
            if (total < 0) total = 0;
            w->pad_begin[i] = same_upper ? total / 2 : total - total / 2;
            w->pad_end[i] = total - w->pad_begin[i];
        } else {
            w->pad_begin[i] = valid ? 0 : pads[i];
            w->pad_end[i] = valid ? 0 : pads[i + s];
            if (w->pad_begin[i] < 0 || w->pad_end[i] < 0)
                return px_lower_error(d, n, "negative pads on spatial axis %d", i);
            int64_t span = in + w->pad_begin[i] + w->pad_end[i] - ext;
            if (span < 0)
                return px_lower_error(d, n,
                                      "kernel extent %lld exceeds the padded input %lld on "
                                      "spatial axis %d",
                                      (long long)ext, (long long)(span + ext), i);
            want = want2 = span / st + 1;
            if (ceil_mode) {
                /* with or without dropping a last window that starts in the end padding */
                want = (span + st - 1) / st + 1;
                want2 = (want - 1) * st >= in + w->pad_begin[i] ? want - 1 : want;
            }
        }
        if (out != want && out != want2)
            return px_lower_error(d, n,
                                  "output '%s' has size %lld on spatial axis %d, the attributes "
                                  "give %lld",
                                  y->name, (long long)out, i, (long long)want);
    }
    return 0;
}

/* Shared checks: X and Y of rank 3..5 with the same N (and C unless conv). */
static int check_spatial(const px_node *n, const px_value *x, const px_value *y, px_diag *d) {
    int r = x->shape.rank;
    if (r < 3 || r > 2 + PX_LNN_MAX_SPATIAL)
        return px_lower_error(d, n,
                              "input X has rank %d; the code generator supports 1 to %d "
                              "spatial dims (rank 3 to %d)",
                              r, PX_LNN_MAX_SPATIAL, 2 + PX_LNN_MAX_SPATIAL);
    if (y->shape.rank != r || y->shape.dims[0] != x->shape.dims[0])
        return px_lower_error(d, n, "output '%s' does not match input X in rank or batch size",
                              y->name);
    if (y->dtype != x->dtype)
        return px_lower_error(d, n, "output '%s' has dtype %s, X has %s", y->name,
                              px_dtype_name(y->dtype), px_dtype_name(x->dtype));
    return 0;
}

static void emit_ints(px_kcall *k, int s, const int64_t *v) {
    px_kc_ints(k, s, v);
}

/* Whether a live ConvGradWeight reads x (a Conv's input): then the Conv
 * kernel keeps its im2col columns for it (runtime/kernels/stash.h). */
static int read_by_conv_grad_weight(const px_value *x) {
    for (int i = 0; i < x->n_uses; i++)
        if (!x->uses[i].node->dead && x->uses[i].node->op == PX_OP_ConvGradWeight) return 1;
    return 0;
}

/* buf: X, W, B|NULL, Y.  p: tensor X, tensor W, tensor B|absent, tensor Y, group,
 * strides[s], dilations[s], pads_begin[s], keep_cols (see px_k_conv). */
int px_lower_conv(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *x = px_lower_in(n, 0), *w = px_lower_in(n, 1), *b = px_lower_in(n, 2),
                   *y = px_lower_out(n, 0);
    if (px_lnn_check(n, x, "input X", px_lnn_float_types, d) ||
        px_lnn_check(n, w, "input W", px_lnn_float_types, d) ||
        (b && px_lnn_check(n, b, "input B", px_lnn_float_types, d)) ||
        px_lnn_check(n, y, "output Y", px_lnn_float_types, d) || check_spatial(n, x, y, d))
        return -1;
    if (w->dtype != x->dtype || (b && b->dtype != x->dtype))
        return px_lower_error(d, n, "X, W and B must share one dtype (X is %s, W %s)",
                              px_dtype_name(x->dtype), px_dtype_name(w->dtype));
    window win = {.s = x->shape.rank - 2};
    int64_t group = px_attr_int(n, "group", 1);
    int64_t C = x->shape.dims[1], M = w->shape.dims[0];
    if (w->shape.rank != x->shape.rank)
        return px_lower_error(d, n, "W has rank %d, X rank %d", w->shape.rank, x->shape.rank);
    if (group < 1 || C % group || M % group || w->shape.dims[1] * group != C)
        return px_lower_error(d, n,
                              "group %lld does not fit X's %lld channels and W's shape "
                              "[%lld, %lld, ...]",
                              (long long)group, (long long)C, (long long)M,
                              (long long)w->shape.dims[1]);
    if (y->shape.dims[1] != M)
        return px_lower_error(d, n, "output '%s' has %lld channels, W gives %lld", y->name,
                              (long long)y->shape.dims[1], (long long)M);
    if (b && (b->shape.rank != 1 || b->shape.dims[0] != M))
        return px_lower_error(d, n, "bias B '%s' must have shape [%lld]", b->name, (long long)M);
    for (int i = 0; i < win.s; i++) win.k[i] = w->shape.dims[2 + i];
    if (px_node_attr(n, "kernel_shape")) {
        int64_t ks[PX_LNN_MAX_SPATIAL];
        if (px_lnn_axis_ints(n, "kernel_shape", win.s, 1, ks, d)) return -1;
        for (int i = 0; i < win.s; i++)
            if (ks[i] != win.k[i])
                return px_lower_error(d, n, "kernel_shape[%d] = %lld but W has %lld", i,
                                      (long long)ks[i], (long long)win.k[i]);
    }
    if (resolve_window(n, x, y, &win, 0, d)) return -1;
    /* BLAS sizes: rows of the im2col matrix and output positions per image */
    int64_t rows = w->shape.dims[1], cols = 1;
    for (int i = 0; i < win.s; i++) {
        rows *= win.k[i];
        cols *= win.out[i];
    }
    if (rows > INT_MAX || cols > INT_MAX || M > INT_MAX)
        return px_lower_error(d, n, "a convolution GEMM dimension exceeds the BLAS limit %d",
                              INT_MAX);
    px_kc_set_kernel(k, "px_k_conv");
    px_kc_buf(k, x);
    px_kc_buf(k, w);
    px_kc_buf(k, b);
    px_kc_buf(k, y);
    px_kc_tensor(k, x);
    px_kc_tensor(k, w);
    px_lnn_tensor_opt(k, b);
    px_kc_tensor(k, y);
    px_kc_i64(k, group);
    emit_ints(k, win.s, win.strides);
    emit_ints(k, win.s, win.dil);
    emit_ints(k, win.s, win.pad_begin);
    px_kc_i64(k, read_by_conv_grad_weight(x)); /* keep the im2col columns for it */
    return 0;
}

/* Pool checks shared by MaxPool and AveragePool; fills win. */
static int pool_window(const px_node *n, const px_value *x, const px_value *y,
                       const px_dtype *types, window *win, px_diag *d) {
    if (px_lnn_check(n, x, "input X", types, d) || px_lnn_check(n, y, "output Y", types, d) ||
        check_spatial(n, x, y, d))
        return -1;
    if (y->shape.dims[1] != x->shape.dims[1])
        return px_lower_error(d, n, "output '%s' has %lld channels, X has %lld", y->name,
                              (long long)y->shape.dims[1], (long long)x->shape.dims[1]);
    win->s = x->shape.rank - 2;
    if (!px_node_attr(n, "kernel_shape"))
        return px_lower_error(d, n, "missing required attribute 'kernel_shape'");
    if (px_lnn_axis_ints(n, "kernel_shape", win->s, 1, win->k, d)) return -1;
    return resolve_window(n, x, y, win, 1, d);
}

static const px_dtype maxpool_types[] = {PX_F32, PX_F64, PX_F16,      PX_BF16,
                                         PX_I8,  PX_U8,  PX_UNDEFINED};

/* buf: X, Y, Indices|NULL.  p: tensor X, tensor Y, kernel[s], strides[s],
 * dilations[s], pads_begin[s], storage_order (see px_k_maxpool). */
int px_lower_maxpool(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *x = px_lower_in(n, 0), *y = px_lower_out(n, 0), *idx = px_lower_out(n, 1);
    window win;
    if (pool_window(n, x, y, maxpool_types, &win, d)) return -1;
    int64_t order = px_attr_int(n, "storage_order", 0);
    if (order != 0 && order != 1)
        return px_lower_error(d, n, "attribute storage_order must be 0 or 1, got %lld",
                              (long long)order);
    if (idx) {
        static const px_dtype i64[] = {PX_I64, PX_UNDEFINED};
        if (px_lnn_check(n, idx, "output Indices", i64, d)) return -1;
        if (!px_lnn_same_dims(&idx->shape, &y->shape))
            return px_lower_error(d, n, "output Indices '%s' must have Y's shape", idx->name);
    }
    px_kc_set_kernel(k, "px_k_maxpool");
    px_kc_buf(k, x);
    px_kc_buf(k, y);
    px_kc_buf(k, idx);
    px_kc_tensor(k, x);
    px_kc_tensor(k, y);
    emit_ints(k, win.s, win.k);
    emit_ints(k, win.s, win.strides);
    emit_ints(k, win.s, win.dil);
    emit_ints(k, win.s, win.pad_begin);
    px_kc_i64(k, order);
    return 0;
}

/* buf: X, Y.  p: tensor X, tensor Y, kernel[s], strides[s], dilations[s],
 * pads_begin[s], pads_end[s], count_include_pad (see px_k_avgpool). */
int px_lower_avgpool(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *x = px_lower_in(n, 0), *y = px_lower_out(n, 0);
    window win;
    if (pool_window(n, x, y, px_lnn_float_types, &win, d)) return -1;
    int64_t include_pad = px_attr_int(n, "count_include_pad", 0);
    px_kc_set_kernel(k, "px_k_avgpool");
    px_kc_buf(k, x);
    px_kc_buf(k, y);
    px_kc_tensor(k, x);
    px_kc_tensor(k, y);
    emit_ints(k, win.s, win.k);
    emit_ints(k, win.s, win.strides);
    emit_ints(k, win.s, win.dil);
    emit_ints(k, win.s, win.pad_begin);
    emit_ints(k, win.s, win.pad_end);
    px_kc_i64(k, include_pad != 0);
    return 0;
}

/* GlobalAveragePool / GlobalMaxPool.  buf: X, Y.  p: tensor X, tensor Y. */
int px_lower_global_pool(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *x = px_lower_in(n, 0), *y = px_lower_out(n, 0);
    if (px_lnn_check(n, x, "input X", px_lnn_float_types, d) ||
        px_lnn_check(n, y, "output Y", px_lnn_float_types, d))
        return -1;
    int r = x->shape.rank;
    int ok = r >= 2 && y->shape.rank == r && y->dtype == x->dtype;
    for (int i = 0; ok && i < r; i++) ok = y->shape.dims[i] == (i < 2 ? x->shape.dims[i] : 1);
    if (!ok) {
        char a[256], b[256];
        return px_lower_error(d, n, "output '%s' %s %s does not fit input X %s %s", y->name,
                              px_dtype_name(y->dtype), px_shape_str(&y->shape, a, sizeof a),
                              px_dtype_name(x->dtype), px_shape_str(&x->shape, b, sizeof b));
    }
    px_kc_set_kernel(k,
                     n->op == PX_OP_GlobalMaxPool ? "px_k_global_maxpool" : "px_k_global_avgpool");
    px_kc_buf(k, x);
    px_kc_buf(k, y);
    px_kc_tensor(k, x);
    px_kc_tensor(k, y);
    return 0;
}
