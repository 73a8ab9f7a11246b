/* Shape function of Einsum: each output index takes the size its letter has
 * in the inputs, which must agree (a 1 broadcasts). */
#include "einsum_eq.h"
#include "shape_util.h"

#include <string.h>

int px_shape_einsum(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    const char *eq = px_attr_string(n, "equation", NULL);
    if (!eq) return px_su_error(d, n, "Einsum needs an 'equation' attribute");
    px_einsum_eq e;
    char why[160];
    if (px_einsum_parse(eq, &e, why, sizeof why))
        return px_su_error(d, n, "Einsum equation '%s': %s", eq, why);
    if (px_su_arity(n, e.n_ops, e.n_ops, d)) return -1;
    if (n->n_inputs != e.n_ops)
        return px_su_error(d, n, "Einsum equation '%s' names %d operands, the node has %d inputs",
                           eq, e.n_ops, n->n_inputs);
    px_value *x0 = NULL;
    px_shape out = px_su_unknown_rank((int)strlen(e.out));
    for (int o = 0; e.out[o]; o++) out.dims[o] = -2; /* not yet seen */
    for (int i = 0; i < e.n_ops; i++) {
        px_value *x;
        if (px_su_need(n, i, "an Einsum operand", d, &x)) return -1;
        if (i == 0)
            x0 = x;
        else if (px_su_same_dtype(n, d, x0, x))
            return -1;
        if (x->shape.rank < 0) continue;
        if (x->shape.rank != (int)strlen(e.ops[i]))
            return px_su_error(d, n,
                               "Einsum equation '%s': operand %d has rank %d, its term '%s' "
                               "has %d indices",
                               eq, i, x->shape.rank, e.ops[i], (int)strlen(e.ops[i]));
        for (int o = 0; e.out[o]; o++) {
            const char *at = strchr(e.ops[i], e.out[o]);
            if (!at) continue;
            int k = (int)(at - e.ops[i]);
            if (out.dims[o] == -2 || out.dims[o] == 1) px_su_copy_dim(&out, o, &x->shape, k);
        }
    }
    for (int o = 0; e.out[o]; o++)
        if (out.dims[o] == -2) px_su_set_dim(&out, o, -1);
    return px_su_set(n, 0, x0->dtype, &out, d);
}
