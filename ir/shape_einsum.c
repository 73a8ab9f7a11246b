/* Shape function of Einsum, in its general form (ellipsis, diagonals): each
 * output index takes the size its letter has in the inputs (a 1 broadcasts),
 * the ellipsis dims broadcast across the operands that have them. The
 * compiler itself rewrites only the plain form (passes/einsum_rewrite.c). */
#include "einsum_eq.h"
#include "shape_util.h"

#include <string.h>

/* Dim of x that letter position k of a term with its ellipsis at ell
 * (n_ell dims) stands for. */
static int dim_of(int k, int ell, int n_ell) {
    return ell >= 0 && k >= ell ? k + n_ell : k;
}

int px_shape_einsum(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    const char *eq = px_attr_string(n, "equation", NULL);
    if (!eq) return px_su_error(d, n, "Einsum needs an 'equation' attribute");
    px_einsum_eq e;
    char why[160];
    if (px_einsum_parse(eq, 1, &e, why, sizeof why))
        return px_su_error(d, n, "Einsum equation '%s': %s", eq, why);
    if (px_su_arity(n, e.n_ops, e.n_ops, d)) return -1;
    if (n->n_inputs != e.n_ops)
        return px_su_error(d, n, "Einsum equation '%s' names %d operands, the node has %d inputs",
                           eq, e.n_ops, n->n_inputs);
    px_value *x0 = NULL;
    int n_letters = (int)strlen(e.out), ell_known = 1;
    px_shape ell = px_shape_make(0, NULL), letters = px_su_unknown_rank(n_letters);
    for (int o = 0; o < n_letters; o++) letters.dims[o] = -2; /* not yet seen */
    for (int i = 0; i < e.n_ops; i++) {
        px_value *x;
        if (px_su_need(n, i, "an Einsum operand", d, &x)) return -1;
        if (i == 0)
            x0 = x;
        else if (px_su_same_dtype(n, d, x0, x))
            return -1;
        if (x->shape.rank < 0) {
            ell_known &= e.ell[i] < 0;
            continue;
        }
        int k = (int)strlen(e.ops[i]), n_ell = x->shape.rank - k;
        if (n_ell < 0 || (e.ell[i] < 0 && n_ell != 0))
            return px_su_error(d, n,
                               "Einsum equation '%s': operand %d has rank %d, its term '%s' "
                               "has %d indices",
                               eq, i, x->shape.rank, e.ops[i], k);
        if (e.ell[i] >= 0) {
            px_shape part = px_shape_make(n_ell, x->shape.dims + e.ell[i]);
            for (int j = 0; j < n_ell; j++) part.sym_id[j] = x->shape.sym_id[e.ell[i] + j];
            px_shape b;
            if (px_su_broadcast(n, d, &ell, &part, &b)) return -1;
            ell = b;
        }
        for (int o = 0; o < n_letters; o++) {
            const char *at = strchr(e.ops[i], e.out[o]);
            if (!at) continue;
            int dim = dim_of((int)(at - e.ops[i]), e.ell[i], n_ell);
            if (letters.dims[o] == -2 || letters.dims[o] == 1)
                px_su_copy_dim(&letters, o, &x->shape, dim);
        }
    }
    for (int o = 0; o < n_letters; o++)
        if (letters.dims[o] == -2) px_su_set_dim(&letters, o, -1);
    px_shape out = px_shape_unknown();
    if (e.out_ell < 0 || ell_known) {
        int n_ell = e.out_ell < 0 ? 0 : ell.rank;
        if (n_letters + n_ell > PX_MAX_RANK)
            return px_su_error(d, n, "Einsum equation '%s': output rank over %d", eq, PX_MAX_RANK);
        out = px_su_unknown_rank(n_letters + n_ell);
        for (int o = 0; o < n_letters; o++)
            px_su_copy_dim(&out, dim_of(o, e.out_ell, n_ell), &letters, o);
        for (int j = 0; j < n_ell; j++) px_su_copy_dim(&out, e.out_ell + j, &ell, j);
    }
    return px_su_set(n, 0, x0->dtype, &out, d);
}
