/* Shape function of the ai.parallax recurrent backward ops made by autodiff
 * (passes/grad_rnn.c):
 *   LSTMGrad(X, W, R, B, initial_h, initial_c, Y, dY, dY_h, dY_c,
 *            sequence_lens) -> (dX, dW, dR, dB, dinitial_h, dinitial_c)
 *   GRUGrad / RNNGrad: the same eleven input slots (initial_c and dY_c absent),
 *       outputs without dinitial_c.
 * Attributes as the forward op: direction, layout, hidden_size (required),
 * GRU linear_before_reset, RNN activations. Inputs and outputs other than
 * X, W, R may be absent; each gradient has the shape of what it
 * differentiates, and dB = [num_directions, 2*gates*hidden] even without B
 * (states: [num_directions, batch, hidden], layout 1 [batch, num_directions,
 * hidden]). */
#include "shape_util.h"

#include <string.h>

/* v (when present with a known rank) has rank `rank` and dtype dt. */
static int want_like(const px_node *n, px_diag *d, const px_value *v, int rank, px_dtype dt,
                     const char *what) {
    if (!v) return 0;
    if (v->dtype != dt)
        return px_su_error(d, n, "%s '%s' has dtype %s, expected %s", what, v->name,
                           px_dtype_name(v->dtype), px_dtype_name(dt));
    if (v->shape.rank >= 0 && v->shape.rank != rank)
        return px_su_error(d, n, "%s '%s' must have rank %d, has %d", what, v->name, rank,
                           v->shape.rank);
    return 0;
}

int px_shape_rnn_grad(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x, *w, *r;
    int gates = n->op == PX_OP_LSTMGrad ? 4 : n->op == PX_OP_GRUGrad ? 3 : 1;
    if (px_su_arity(n, 3, 11, d) || px_su_need(n, 0, "X", d, &x) || px_su_need(n, 1, "W", d, &w) ||
        px_su_need(n, 2, "R", d, &r))
        return -1;
    if (px_su_want_float(n, d, x, "X") || px_su_same_dtype(n, d, x, w) ||
        px_su_same_dtype(n, d, x, r))
        return -1;
    if (n->n_outputs > (gates == 4 ? 6 : 5))
        return px_su_error(d, n, "has at most %d outputs, got %d", gates == 4 ? 6 : 5,
                           n->n_outputs);
    if (gates != 4 && (px_su_in(n, 5) || px_su_in(n, 9)))
        return px_su_error(d, n, "takes no initial_c or dY_c (inputs 5 and 9)");
    const char *dir = px_attr_string(n, "direction", "forward");
    int64_t nd;
    if (!strcmp(dir, "forward") || !strcmp(dir, "reverse"))
        nd = 1;
    else if (!strcmp(dir, "bidirectional"))
        nd = 2;
    else
        return px_su_error(d, n, "unknown direction '%s'", dir);
    int64_t layout = px_attr_int(n, "layout", 0), h = px_attr_int(n, "hidden_size", -1);
    if (layout != 0 && layout != 1)
        return px_su_error(d, n, "layout must be 0 or 1, got %lld", (long long)layout);
    if (h < 1) return px_su_error(d, n, "needs the attribute hidden_size (>= 1)");
    static const char *const what[10] = {"X",         "W", "R",  "B",    "initial_h",
                                         "initial_c", "Y", "dY", "dY_h", "dY_c"};
    static const int rank[10] = {3, 3, 3, 2, 3, 3, 4, 4, 3, 3};
    for (int i = 0; i < 10; i++)
        if (want_like(n, d, px_su_in(n, i), rank[i], x->dtype, what[i])) return -1;
    if (want_like(n, d, px_su_in(n, 10), 1, PX_I32, "sequence_lens")) return -1;
    px_shape xs = x->shape.rank == 3 ? x->shape : px_su_unknown_rank(3);
    px_shape bs = px_su_unknown_rank(2), st = px_su_unknown_rank(3);
    px_su_set_dim(&bs, 0, nd);
    px_su_set_dim(&bs, 1, 2 * gates * h);
    px_su_set_dim(&st, layout ? 1 : 0, nd);
    px_su_copy_dim(&st, layout ? 0 : 1, &xs, layout ? 0 : 1);
    px_su_set_dim(&st, 2, h);
    return px_su_set(n, 0, x->dtype, &x->shape, d) || px_su_set(n, 1, x->dtype, &w->shape, d) ||
           px_su_set(n, 2, x->dtype, &r->shape, d) || px_su_set(n, 3, x->dtype, &bs, d) ||
           px_su_set(n, 4, x->dtype, &st, d) || px_su_set(n, 5, x->dtype, &st, d);
}
