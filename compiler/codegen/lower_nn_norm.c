/* BatchNormalization and LayerNormalization -> px_k_batchnorm, px_k_layernorm
 * (runtime/kernels/nn_norm.c); BatchNormalizationGrad -> px_k_batchnorm_grad
 * (runtime/kernels/nn_batchnorm_grad.c). */
#include "lower_nn_internal.h"

#include <string.h>

/* buf: X, scale, B, input_mean, input_var, Y, running_mean|NULL, running_var|NULL.
 * p: tensor X, N, channels, inner, tensors scale/B/mean/var, tensor running_mean|absent,
 *    tensor running_var|absent, training, epsilon, momentum (see px_k_batchnorm). */
int px_lower_batchnorm(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    static const char *const names[4] = {"input scale", "input B", "input mean", "input var"};
    const px_value *x = px_lower_in(n, 0), *y = px_lower_out(n, 0), *stat[4];
    int64_t opset = px_lower_opset(g);
    if (px_lnn_check(n, x, "input X", px_lnn_float_types, d) ||
        px_lnn_check(n, y, "output Y", px_lnn_float_types, d))
        return -1;
    if (x->shape.rank < 2)
        return px_lower_error(d, n, "input X must have rank >= 2 (N, C, ...), has %d",
                              x->shape.rank);
    if (y->dtype != x->dtype || !px_lnn_same_dims(&y->shape, &x->shape))
        return px_lower_error(d, n, "output Y '%s' must have X's dtype and shape", y->name);
    /* opset 7-8 spatial=0: statistics per (C, D1, ..., Dk) instead of per C */
    int spatial = opset >= 9 || px_attr_int(n, "spatial", 1) != 0;
    int64_t N = x->shape.dims[0], C = x->shape.dims[1], inner = 1;
    for (int i = 2; i < x->shape.rank; i++) inner *= x->shape.dims[i];
    if (!spatial) {
        C *= inner;
        inner = 1;
    }
    for (int i = 0; i < 4; i++) {
        stat[i] = px_lower_in(n, 1 + i);
        if (px_lnn_check(n, stat[i], names[i], px_lnn_float_types, d)) return -1;
        if (px_shape_numel(&stat[i]->shape) != C)
            return px_lower_error(d, n, "%s '%s' must hold %lld values (one per %s)", names[i],
                                  stat[i]->name, (long long)C, spatial ? "channel" : "activation");
    }
    /* training mode and its extra outputs changed across opsets */
    int training;
    const px_value *run_mean = NULL, *run_var = NULL;
    if (opset >= 14) {
        training = px_attr_int(n, "training_mode", 0) != 0;
        run_mean = px_lower_out(n, 1);
        run_var = px_lower_out(n, 2);
        if (!training && (run_mean || run_var))
            return px_lower_error(d, n, "outputs running_mean/running_var need training_mode=1");
    } else {
        run_mean = px_lower_out(n, 1);
        run_var = px_lower_out(n, 2);
        if (px_lower_out(n, 3) || px_lower_out(n, 4))
            return px_lower_error(d, n,
                                  "outputs saved_mean/saved_var of BatchNormalization before "
                                  "opset 14 are not supported by the code generator");
        training = run_mean || run_var;
        if (training && opset <= 6 && px_attr_int(n, "is_test", 0) != 0)
            return px_lower_error(d, n, "is_test=1 but training outputs mean/var are requested");
    }
    const px_value *runs[2] = {run_mean, run_var};
    for (int i = 0; i < 2; i++) {
        if (!runs[i]) continue;
        if (px_lnn_check(n, runs[i], i ? "output running_var" : "output running_mean",
                         px_lnn_float_types, d))
            return -1;
        if (px_shape_numel(&runs[i]->shape) != C)
            return px_lower_error(d, n, "output '%s' must hold %lld values", runs[i]->name,
                                  (long long)C);
    }
    double eps = px_attr_float(n, "epsilon", 1e-5f), momentum = px_attr_float(n, "momentum", 0.9f);
    px_kc_set_kernel(k, "px_k_batchnorm");
    px_kc_buf(k, x);
    for (int i = 0; i < 4; i++) px_kc_buf(k, stat[i]);
    px_kc_buf(k, y);
    px_kc_buf(k, run_mean);
    px_kc_buf(k, run_var);
    px_kc_tensor(k, x);
    px_kc_i64(k, N);
    px_kc_i64(k, C);
    px_kc_i64(k, inner);
    for (int i = 0; i < 4; i++) px_kc_tensor(k, stat[i]);
    px_lnn_tensor_opt(k, run_mean);
    px_lnn_tensor_opt(k, run_var);
    px_kc_i64(k, training);
    px_kc_f64(k, eps);
    px_kc_f64(k, momentum);
    return 0;
}

/* BatchNormalizationGrad (passes/grad_conv.c): float or double throughout.
 * buf: dY, X, scale, dX|NULL, dScale|NULL, dB|NULL.
 * p:   tensor X, N, C, inner, epsilon (see px_k_batchnorm_grad). */
int px_lower_batchnorm_grad(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    static const px_dtype exact[] = {PX_F32, PX_F64, PX_UNDEFINED};
    const px_value *dy = px_lower_in(n, 0), *x = px_lower_in(n, 1), *scale = px_lower_in(n, 2);
    if (px_lnn_check(n, x, "input X", exact, d) || px_lnn_check(n, dy, "input dY", exact, d) ||
        px_lnn_check(n, scale, "input scale", exact, d))
        return -1;
    if (x->shape.rank < 2)
        return px_lower_error(d, n, "input X must have rank >= 2 (N, C, ...), has %d",
                              x->shape.rank);
    int64_t N = x->shape.dims[0], C = x->shape.dims[1], inner = 1;
    for (int i = 2; i < x->shape.rank; i++) inner *= x->shape.dims[i];
    if (dy->dtype != x->dtype || scale->dtype != x->dtype ||
        !px_lnn_same_dims(&dy->shape, &x->shape) || px_shape_numel(&scale->shape) != C)
        return px_lower_error(d, n,
                              "dY must be shaped like X and scale hold C = %lld values, "
                              "all of X's dtype",
                              (long long)C);
    for (int i = 0; i < 3; i++) {
        const px_value *o = px_lower_out(n, i);
        if (o && (o->dtype != x->dtype || px_shape_numel(&o->shape) != (i ? C : N * C * inner)))
            return px_lower_error(d, n, "output %d '%s' must be shaped like %s, of X's dtype", i,
                                  o->name, i ? "scale" : "X");
    }
    px_kc_set_kernel(k, "px_k_batchnorm_grad");
    px_kc_buf(k, dy);
    px_kc_buf(k, x);
    px_kc_buf(k, scale);
    for (int i = 0; i < 3; i++) px_kc_buf(k, px_lower_out(n, i));
    px_kc_tensor(k, x);
    px_kc_i64(k, N);
    px_kc_i64(k, C);
    px_kc_i64(k, inner);
    px_kc_f64(k, px_attr_float(n, "epsilon", 1e-5f));
    return 0;
}

/* Element strides of v over the normalized dims X[axis:] when v broadcasts
 * unidirectionally to them (0 on broadcast dims). */
static int broadcast_strides(const px_node *n, const px_value *x, int axis, const px_value *v,
                             const char *what, int64_t *strides, px_diag *d) {
    int nd = x->shape.rank - axis, rv = v->shape.rank;
    char s[256];
    if (rv > nd)
        return px_lower_error(d, n, "%s '%s' with shape %s has more dims than X[%d:]", what,
                              v->name, px_shape_str(&v->shape, s, sizeof s), axis);
    int64_t st = 1;
    for (int i = nd - 1; i >= 0; i--) {
        int iv = i - (nd - rv);
        int64_t dv = iv >= 0 ? v->shape.dims[iv] : 1, dx = x->shape.dims[axis + i];
        if (dv != 1 && dv != dx)
            return px_lower_error(d, n, "%s '%s' with shape %s does not broadcast to X[%d:]", what,
                                  v->name, px_shape_str(&v->shape, s, sizeof s), axis);
        strides[i] = dv == 1 ? 0 : st;
        st *= dv;
    }
    return 0;
}

/* buf: X, Scale, B|NULL, Y, Mean|NULL, InvStdDev|NULL.
 * p: tensor X, axis, epsilon, dtype Scale, scale_strides[], dtype B|0, b_strides[],
 *    tensor Y, stash dtype (see px_k_layernorm). */
int px_lower_layernorm(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *x = px_lower_in(n, 0), *scale = px_lower_in(n, 1), *b = px_lower_in(n, 2),
                   *y = px_lower_out(n, 0), *mean = px_lower_out(n, 1), *inv = px_lower_out(n, 2);
    if (px_lnn_check(n, x, "input X", px_lnn_float_types, d) ||
        px_lnn_check(n, scale, "input Scale", px_lnn_float_types, d) ||
        (b && px_lnn_check(n, b, "input B", px_lnn_float_types, d)) ||
        px_lnn_check(n, y, "output Y", px_lnn_float_types, d) ||
        (mean && px_lnn_check(n, mean, "output Mean", px_lnn_float_types, d)) ||
        (inv && px_lnn_check(n, inv, "output InvStdDev", px_lnn_float_types, d)))
        return -1;
    int r = x->shape.rank;
    int64_t axis = px_attr_int(n, "axis", -1);
    if (axis < -r || axis >= r)
        return px_lower_error(d, n, "attribute axis %lld is out of range for rank %d",
                              (long long)axis, r);
    if (axis < 0) axis += r;
    if (y->dtype != x->dtype || !px_lnn_same_dims(&y->shape, &x->shape))
        return px_lower_error(d, n, "output Y '%s' must have X's dtype and shape", y->name);
    /* the kernel accumulates in double, at least as precise as any stash_type */
    int64_t stash = px_attr_int(n, "stash_type", PX_F32);
    if (stash != PX_F32 && stash != PX_F64 && stash != PX_F16 && stash != PX_BF16)
        return px_lower_error(d, n, "attribute stash_type %lld is not a floating-point type",
                              (long long)stash);
    int64_t outer = 1;
    for (int i = 0; i < axis; i++) outer *= x->shape.dims[i];
    if ((mean && px_shape_numel(&mean->shape) != outer) ||
        (inv && px_shape_numel(&inv->shape) != outer) || (mean && inv && mean->dtype != inv->dtype))
        return px_lower_error(d, n, "outputs Mean/InvStdDev must hold %lld values of one dtype",
                              (long long)outer);
    int64_t s_str[PX_MAX_RANK], b_str[PX_MAX_RANK];
    memset(b_str, 0, sizeof b_str);
    if (broadcast_strides(n, x, (int)axis, scale, "Scale", s_str, d) ||
        (b && broadcast_strides(n, x, (int)axis, b, "B", b_str, d)))
        return -1;
    int nd = r - (int)axis;
    px_kc_set_kernel(k, "px_k_layernorm");
    px_kc_buf(k, x);
    px_kc_buf(k, scale);
    px_kc_buf(k, b);
    px_kc_buf(k, y);
    px_kc_buf(k, mean);
    px_kc_buf(k, inv);
    px_kc_tensor(k, x);
    px_kc_i64(k, axis);
    px_kc_f64(k, px_attr_float(n, "epsilon", 1e-5f));
    px_kc_i64(k, scale->dtype);
    px_kc_ints(k, nd, s_str);
    px_kc_i64(k, b ? b->dtype : 0);
    px_kc_ints(k, nd, b_str);
    px_kc_tensor(k, y);
    px_kc_i64(k, mean ? mean->dtype : inv ? inv->dtype : 0);
    return 0;
}
