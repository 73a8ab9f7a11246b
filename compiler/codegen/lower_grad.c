/* Lowerings of the ai.parallax backward ops made by autodiff to the kernels
 * of runtime/kernels/grad.c (whose comments document buf and p):
 * GatherGrad -> px_k_gather_grad, SoftmaxCrossEntropyLossGrad ->
 * px_k_sce_loss_grad, NegativeLogLikelihoodLossGrad -> px_k_nll_loss_grad,
 * GatherGradDense -> px_k_gather_grad_dense, GatherElementsGrad ->
 * px_k_gather_elements_grad; ConvGradInput, ConvGradWeight,
 * MaxPoolGrad, AveragePoolGrad -> runtime/kernels/grad_conv.c. */
#include "lower.h"
#include "lower_nn_internal.h"
#include "px_enums.h"

#include <string.h>

static int want_float(const px_node *n, const px_value *v, const char *what, px_diag *d) {
    if (v->dtype != PX_F32 && v->dtype != PX_F64)
        return px_lower_error(d, n, "%s '%s' has dtype %s; the kernel supports float and double",
                              what, v->name, px_dtype_name(v->dtype));
    return 0;
}

static int want_index(const px_node *n, const px_value *v, const char *what, px_diag *d) {
    if (v->dtype != PX_I32 && v->dtype != PX_I64)
        return px_lower_error(d, n, "%s '%s' has dtype %s; the kernel supports int32 and int64",
                              what, v->name, px_dtype_name(v->dtype));
    return 0;
}

int px_lower_gather_grad(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *dy = px_lower_in(n, 0), *idx = px_lower_in(n, 1);
    if (!dy || !idx || n->n_outputs != 3 || !n->outputs[0] || !n->outputs[1] || !n->outputs[2])
        return px_lower_error(d, n, "needs inputs dY, indices and outputs unique, values, count");
    if (want_float(n, dy, "dY", d) || want_index(n, idx, "indices", d)) return -1;
    if (n->outputs[1]->dtype != dy->dtype)
        return px_lower_error(d, n, "values must have dY's dtype %s", px_dtype_name(dy->dtype));
    px_kc_set_kernel(k, "px_k_gather_grad");
    px_kc_buf(k, dy);
    px_kc_buf(k, idx);
    for (int i = 0; i < 3; i++) px_kc_buf(k, n->outputs[i]);
    px_kc_tensor(k, dy);
    px_kc_tensor(k, idx);
    px_kc_i64(k, px_attr_int(n, "rows", 0));
    return 0;
}

/* The kernel call shared by the gradients that scatter dY into zeros of
 * dX's shape at indices along axis: buf dY, indices, dX; p tensor dY,
 * tensor indices, tensor dX, axis. */
static int scatter_grad_call(px_kcall *k, const char *kernel, const px_value *dy,
                             const px_value *idx, const px_value *dx, int64_t axis) {
    px_kc_set_kernel(k, kernel);
    px_kc_buf(k, dy);
    px_kc_buf(k, idx);
    px_kc_buf(k, dx);
    px_kc_tensor(k, dy);
    px_kc_tensor(k, idx);
    px_kc_tensor(k, dx);
    px_kc_i64(k, axis);
    return 0;
}

int px_lower_gather_elements_grad(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *dy = px_lower_in(n, 0), *idx = px_lower_in(n, 1), *dx = px_lower_out(n, 0);
    if (!dy || !idx || !dx) return px_lower_error(d, n, "needs inputs dY, indices and output dX");
    if (want_float(n, dy, "dY", d) || want_index(n, idx, "indices", d)) return -1;
    int64_t axis = px_attr_int(n, "axis", 0);
    if (axis < 0 || axis >= dx->shape.rank || dx->dtype != dy->dtype ||
        dy->shape.rank != dx->shape.rank || !px_shape_equal(&dy->shape, &idx->shape))
        return px_lower_error(d, n, "axis %lld, shapes or dtype of dY, indices and dX do not fit",
                              (long long)axis);
    return scatter_grad_call(k, "px_k_gather_elements_grad", dy, idx, dx, axis);
}

int px_lower_gather_grad_dense(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *dy = px_lower_in(n, 0), *idx = px_lower_in(n, 1), *dx = px_lower_out(n, 0);
    if (!dy || !idx || !dx) return px_lower_error(d, n, "needs inputs dY, indices and output dX");
    if (want_float(n, dy, "dY", d) || want_index(n, idx, "indices", d)) return -1;
    int64_t axis = px_attr_int(n, "axis", 0);
    if (axis < 0 || axis >= dx->shape.rank || dx->dtype != dy->dtype)
        return px_lower_error(d, n, "axis %lld or dtype of dX does not fit", (long long)axis);
    return scatter_grad_call(k, "px_k_gather_grad_dense", dy, idx, dx, axis);
}

int px_lower_loss_grad(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    const px_value *dl = px_lower_in(n, 0), *x = px_lower_in(n, 1), *lab = px_lower_in(n, 2),
                   *w = px_lower_in(n, 3), *dx = px_lower_out(n, 0);
    if (!dl || !x || !lab || !dx)
        return px_lower_error(d, n, "needs inputs dLoss, X, labels and output dX");
    if (want_float(n, x, "X", d) || want_index(n, lab, "labels", d)) return -1;
    if (dl->dtype != x->dtype || dx->dtype != x->dtype || (w && w->dtype != x->dtype))
        return px_lower_error(d, n, "dLoss, weights and dX must have X's dtype %s",
                              px_dtype_name(x->dtype));
    if (x->shape.rank < 2) return px_lower_error(d, n, "X must have rank >= 2 ([N, C, ...])");
    const char *red = px_attr_string(n, "reduction", "mean");
    int64_t r = px_reduction_from_name(red);
    if (r < 0)
        return px_lower_error(d, n, "attribute 'reduction' is '%s'; expected none, sum or mean",
                              red);
    const px_attr *ig = px_node_attr(n, "ignore_index");
    /* Paired with its forward node, dX already holds softmax(X) and X is not
     * read (so it is not kept alive until here). */
    int paired = n->op == PX_OP_SoftmaxCrossEntropyLossGrad && px_lnn_sce_forward_partner(g, n);
    px_kc_set_kernel(k, paired                                       ? "px_k_sce_loss_grad_probs"
                        : n->op == PX_OP_SoftmaxCrossEntropyLossGrad ? "px_k_sce_loss_grad"
                                                                     : "px_k_nll_loss_grad");
    px_kc_buf(k, dl);
    px_kc_buf(k, paired ? NULL : x);
    px_kc_buf(k, lab);
    px_kc_buf(k, w);
    px_kc_buf(k, dx);
    px_kc_buf(k, px_lower_in(n, 4)); /* the LossDenominator's output, or none */
    px_kc_tensor(k, dl);
    px_kc_tensor(k, x);
    px_kc_tensor(k, lab);
    if (w)
        px_kc_tensor(k, w);
    else {
        px_shape s = px_shape_scalar();
        px_kc_shape(k, 0, &s);
    }
    px_kc_i64(k, r);
    px_kc_i64(k, ig ? 1 : 0);
    px_kc_i64(k, ig ? ig->i : 0);
    px_kc_i64(k, px_lower_in(n, 4) != NULL);
    return 0;
}

/* One list attribute of exactly n values >= lo. */
static int window_ints(const px_node *n, const char *name, int want, int64_t lo, int64_t *out,
                       px_diag *d) {
    int cnt = 0;
    const int64_t *v = px_attr_ints(n, name, &cnt);
    if (!v || cnt != want)
        return px_lower_error(d, n, "attribute '%s' must have %d values", name, want);
    for (int i = 0; i < want; i++) {
        if (v[i] < lo)
            return px_lower_error(d, n, "attribute '%s'[%d] = %lld is below %lld", name, i,
                                  (long long)v[i], (long long)lo);
        out[i] = v[i];
    }
    return 0;
}

/* ConvGradInput / ConvGradWeight / MaxPoolGrad / AveragePoolGrad, whose
 * geometry the autodiff rule made explicit (passes/grad_conv.c).
 * buf: dY, A (W for ConvGradInput, X for ConvGradWeight and MaxPoolGrad,
 *      NULL for AveragePoolGrad), out (dX or dW).
 * p:   tensor dY, tensor A (AveragePoolGrad: out's again), tensor out,
 *      flag (group for conv, count_include_pad for AveragePoolGrad, else 0),
 *      kernel[s], strides[s], dilations[s], pads_begin[s], pads_end[s]
 *      with s = rank(out) - 2 (see runtime/kernels/grad_conv.c). */
int px_lower_window_grad(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    int avg = n->op == PX_OP_AveragePoolGrad;
    const px_value *dy = px_lower_in(n, 0), *in = avg ? NULL : px_lower_in(n, 1),
                   *out = px_lower_out(n, 0);
    if (!dy || !out || (!avg && !in))
        return px_lower_error(d, n, "needs inputs dY%s and one output", avg ? "" : " and X/W");
    if (want_float(n, dy, "dY", d)) return -1;
    if (out->dtype != dy->dtype || (in && in->dtype != dy->dtype))
        return px_lower_error(d, n, "all tensors must have dY's dtype %s",
                              px_dtype_name(dy->dtype));
    int r = out->shape.rank, s = r - 2;
    if (r < 3 || r > 5 || dy->shape.rank != r || (in && in->shape.rank != r))
        return px_lower_error(d, n, "tensors must share one rank of 3 to 5, the output has %d", r);
    int64_t kern[3], st[3], dil[3], pads[6], flag = 0;
    if (window_ints(n, "kernel_shape", s, 1, kern, d) || window_ints(n, "strides", s, 1, st, d) ||
        window_ints(n, "dilations", s, 1, dil, d) || window_ints(n, "pads", 2 * s, 0, pads, d))
        return -1;
    const char *kernel = "px_k_maxpool_grad";
    if (n->op == PX_OP_ConvGradInput || n->op == PX_OP_ConvGradWeight) {
        const px_value *x = n->op == PX_OP_ConvGradInput ? out : in,
                       *w = n->op == PX_OP_ConvGradInput ? in : out;
        flag = px_attr_int(n, "group", 1);
        if (flag < 1 || x->shape.dims[1] != w->shape.dims[1] * flag || w->shape.dims[0] % flag ||
            dy->shape.dims[1] != w->shape.dims[0] || dy->shape.dims[0] != x->shape.dims[0])
            return px_lower_error(d, n, "group %lld does not fit the channels of X, W and dY",
                                  (long long)flag);
        for (int i = 0; i < s; i++)
            if (w->shape.dims[2 + i] != kern[i])
                return px_lower_error(d, n, "kernel_shape[%d] = %lld but W has %lld", i,
                                      (long long)kern[i], (long long)w->shape.dims[2 + i]);
        kernel = n->op == PX_OP_ConvGradInput ? "px_k_conv_grad_input" : "px_k_conv_grad_weight";
    } else {
        const px_value *x = avg ? out : in;
        if (dy->shape.dims[0] != x->shape.dims[0] || dy->shape.dims[1] != x->shape.dims[1] ||
            out->shape.dims[0] != x->shape.dims[0])
            return px_lower_error(d, n, "dY and X must share N and C");
        if (avg) {
            flag = px_attr_int(n, "count_include_pad", 0) != 0;
            kernel = "px_k_avgpool_grad";
        }
    }
    px_kc_set_kernel(k, kernel);
    px_kc_buf(k, dy);
    px_kc_buf(k, in);
    px_kc_buf(k, out);
    px_kc_tensor(k, dy);
    px_kc_tensor(k, in ? in : out);
    px_kc_tensor(k, out);
    px_kc_i64(k, flag);
    px_kc_ints(k, s, kern);
    px_kc_ints(k, s, st);
    px_kc_ints(k, s, dil);
    px_kc_ints(k, 2 * s, pads);
    return 0;
}
