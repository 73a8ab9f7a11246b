/* Shape function of InstanceNormalization: Y is X (N, C, D1, ...), and
 * scale and B are [C] of X's dtype. */
#include "shape_util.h"

int px_shape_instancenorm(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    static const char *const what[2] = {"scale", "B"};
    px_value *x, *p[2];
    if (px_su_arity(n, 3, 3, d) || px_su_need(n, 0, "input", d, &x)) return -1;
    if (px_su_want_float(n, d, x, "input")) return -1;
    int r = x->shape.rank;
    if (r >= 0 && r < 3)
        return px_su_error(d, n, "input '%s' must have rank >= 3 (N, C, D1, ...), has %d", x->name,
                           r);
    for (int i = 0; i < 2; i++) {
        if (px_su_need(n, i + 1, what[i], d, &p[i]) || px_su_same_dtype(n, d, x, p[i])) return -1;
        const px_shape *ps = &p[i]->shape;
        if (ps->rank < 0 || r < 0) continue;
        if (ps->rank != 1 ||
            !(px_su_dim_same(ps, 0, &x->shape, 1) || ps->dims[0] < 0 || x->shape.dims[1] < 0)) {
            char a[256], b[256];
            return px_su_error(d, n, "%s '%s' has shape %s, expected [C] for input shape %s",
                               what[i], p[i]->name, px_shape_str(ps, a, sizeof a),
                               px_shape_str(&x->shape, b, sizeof b));
        }
    }
    return px_su_set(n, 0, x->dtype, &x->shape, d);
}
