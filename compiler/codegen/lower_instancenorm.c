/* InstanceNormalization -> px_k_instancenorm (runtime/kernels/nn_instancenorm.c). */
#include "lower_nn_internal.h"

/* buf: X, scale, B, Y.  p: tensor X, dtype scale, dtype B, epsilon (f64). */
int px_lower_instancenorm(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *x = px_lower_in(n, 0), *scale = px_lower_in(n, 1), *b = px_lower_in(n, 2),
                   *y = px_lower_out(n, 0);
    if (px_lnn_check(n, x, "input", px_lnn_float_types, d) ||
        px_lnn_check(n, scale, "input scale", px_lnn_float_types, d) ||
        px_lnn_check(n, b, "input B", px_lnn_float_types, d) ||
        px_lnn_check(n, y, "output", px_lnn_float_types, d))
        return -1;
    if (x->shape.rank < 3)
        return px_lower_error(d, n, "input '%s' must have rank >= 3, has %d", x->name,
                              x->shape.rank);
    if (y->dtype != x->dtype || !px_lnn_same_dims(&y->shape, &x->shape))
        return px_lower_error(d, n, "output '%s' must have the input's dtype and shape", y->name);
    for (int i = 1; i <= 2; i++) {
        const px_value *p = n->inputs[i];
        if (p->shape.rank != 1 || p->shape.dims[0] != x->shape.dims[1])
            return px_lower_error(d, n, "input '%s' must have shape [%lld]", p->name,
                                  (long long)x->shape.dims[1]);
    }
    px_kc_set_kernel(k, "px_k_instancenorm");
    px_kc_buf(k, x);
    px_kc_buf(k, scale);
    px_kc_buf(k, b);
    px_kc_buf(k, y);
    px_kc_tensor(k, x);
    px_kc_i64(k, scale->dtype);
    px_kc_i64(k, b->dtype);
    px_kc_f64(k, px_attr_float(n, "epsilon", 1e-5f));
    return 0;
}
