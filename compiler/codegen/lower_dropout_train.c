/* Lowerings of the training-mode Dropout ops made by autodiff
 * (passes/grad_dropout.c): DropoutTrain -> px_k_dropout_train, DropoutGrad
 * -> px_k_dropout_grad (runtime/kernels/dropout_train.c documents buf and p). */
#include "lower.h"

int px_lower_dropout_train(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    int fwd = n->op == PX_OP_DropoutTrain;
    const px_value *x = px_lower_in(n, 0), *y = px_lower_out(n, 0),
                   *mask = fwd ? px_lower_out(n, 1) : NULL;
    char s[256];
    if (!x || !y) return px_lower_error(d, n, "needs one input and output 0");
    if (x->dtype != PX_F32 && x->dtype != PX_F64)
        return px_lower_error(d, n, "input '%s' has dtype %s; the kernel supports float and double",
                              x->name, px_dtype_name(x->dtype));
    if (!px_shape_is_static(&x->shape) || !px_shape_equal(&x->shape, &y->shape) ||
        y->dtype != x->dtype ||
        (mask && (!px_shape_equal(&mask->shape, &x->shape) ||
                  (mask->dtype != PX_BOOL && mask->dtype != x->dtype))))
        return px_lower_error(d, n, "input '%s' (%s) and the outputs must match in static shape",
                              x->name, px_shape_str(&x->shape, s, sizeof s));
    double ratio = px_attr_float(n, "ratio", -1);
    if (!(ratio >= 0 && ratio < 1))
        return px_lower_error(d, n, "attribute 'ratio' must be in [0, 1), got %g", ratio);
    px_kc_set_kernel(k, fwd ? "px_k_dropout_train" : "px_k_dropout_grad");
    px_kc_buf(k, x);
    px_kc_buf(k, y);
    if (fwd) px_kc_buf(k, mask);
    px_kc_i64(k, x->dtype);
    px_kc_i64(k, px_shape_numel(&x->shape));
    px_kc_f64(k, ratio);
    px_kc_i64(k, px_attr_int(n, "seed_key", 0));
    if (fwd) px_kc_i64(k, mask ? mask->dtype : 0);
    return 0;
}
