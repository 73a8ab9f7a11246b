/* The gradient of InstanceNormalization: each (sample, channel) is
 * normalized over its spatial dims, then scaled and shifted per channel:
 * y = xhat * scale[c] + B[c]. The statistics are recomputed from x
 * (grad_normalize.c); dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
 * with g = dy * scale[c], and dscale = sum(dy * xhat), dB = sum(dy) over
 * the samples and the spatial dims. */
#include "grad_internal.h"

int px_grad_instancenorm(px_ad *a, px_node *n, px_value *const *dy) {
    if (!dy[0]) return 0;
    px_value *x = n->inputs[0];
    int r = x->shape.rank;
    if (r < 3) return px_ad_error(a, n, "input must have rank >= 3, has %d", r);
    int64_t spatial[PX_MAX_RANK], all[PX_MAX_RANK], cdims[PX_MAX_RANK];
    int ns = 0, na = 0;
    double count = 1;
    for (int i = 0; i < r; i++) {
        cdims[i] = i == 1 ? x->shape.dims[1] : 1;
        if (i == 1) continue;
        all[na++] = i;
        if (i == 0) continue;
        spatial[ns++] = i;
        count *= (double)x->shape.dims[i];
    }
    px_ad_norm nm = px_ad_normalize(a, x, ns, spatial, count, px_attr_float(n, "epsilon", 1e-5f));
    if (px_ad_wants(a, n, 0)) {
        px_shape cs = px_shape_make(r, cdims); /* [1, C, 1, ...]: scale per channel */
        px_value *g = px_ad_2(a, "Mul", dy[0], px_ad_reshape(a, n->inputs[1], &cs));
        if (px_ad_accum(a, n, 0, px_ad_normalize_grad(a, &nm, g))) return -1;
    }
    if (px_ad_wants(a, n, 1) &&
        px_ad_accum(a, n, 1, px_ad_reduce_sum(a, px_ad_2(a, "Mul", dy[0], nm.xhat), na, all, 0)))
        return -1;
    if (px_ad_wants(a, n, 2) && px_ad_accum(a, n, 2, px_ad_reduce_sum(a, dy[0], na, all, 0)))
        return -1;
    return 0;
}
