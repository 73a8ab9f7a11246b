/* The statistics part of the normalization gradients (grad_internal.h):
 * LayerNormalization and InstanceNormalization recompute their mean and
 * variance in the backward pass from primitive ops, over different axes. */
#include "grad_internal.h"

#include <string.h>

px_value *px_ad_mean_keep(px_ad *a, px_value *x, int n_axes, const int64_t *axes, double count) {
    return px_ad_2(a, "Mul", px_ad_reduce_sum(a, x, n_axes, axes, 1),
                   px_ad_scalar(a, x->dtype, 1.0 / count));
}

px_ad_norm px_ad_normalize(px_ad *a, px_value *x, int n_axes, const int64_t *axes, double count,
                           double eps) {
    px_ad_norm nm = {.n_axes = n_axes, .count = count};
    memcpy(nm.axes, axes, (size_t)n_axes * sizeof *axes);
    px_value *xc = px_ad_2(a, "Sub", x, px_ad_mean_keep(a, x, n_axes, axes, count));
    px_value *var = px_ad_mean_keep(a, px_ad_2(a, "Mul", xc, xc), n_axes, axes, count);
    nm.rstd = px_ad_1(a, "Reciprocal",
                      px_ad_1(a, "Sqrt", px_ad_2(a, "Add", var, px_ad_scalar(a, x->dtype, eps))));
    nm.xhat = px_ad_2(a, "Mul", xc, nm.rstd);
    return nm;
}

px_value *px_ad_normalize_grad(px_ad *a, const px_ad_norm *nm, px_value *g) {
    px_value *m1 = px_ad_mean_keep(a, g, nm->n_axes, nm->axes, nm->count);
    px_value *m2 =
        px_ad_mean_keep(a, px_ad_2(a, "Mul", g, nm->xhat), nm->n_axes, nm->axes, nm->count);
    px_value *t = px_ad_2(a, "Sub", px_ad_2(a, "Sub", g, m1), px_ad_2(a, "Mul", nm->xhat, m2));
    return px_ad_2(a, "Mul", nm->rstd, t);
}
