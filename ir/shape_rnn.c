/* Shape functions of the recurrent ops LSTM, GRU and RNN (layout attribute
 * from opset 14: 0 = sequence-major, 1 = batch-major). */
#include "shape_util.h"

#include <string.h>

/* Checks dim i of v (when both are known) against `want`; `what` names it. */
static int want_dim(const px_node *n, px_diag *d, const px_value *v, int i, int64_t want,
                    const char *what) {
    if (!v || v->shape.rank < 0 || want < 0 || v->shape.dims[i] < 0) return 0;
    if (v->shape.dims[i] == want) return 0;
    char b[256];
    return px_su_error(d, n, "%s '%s' has shape %s: dim %d should be %lld", what, v->name,
                       px_shape_str(&v->shape, b, sizeof b), i, (long long)want);
}

static int want_rank(const px_node *n, px_diag *d, const px_value *v, int rank, const char *what) {
    if (!v || v->shape.rank < 0 || v->shape.rank == rank) return 0;
    return px_su_error(d, n, "%s '%s' must have rank %d, has %d", what, v->name, rank,
                       v->shape.rank);
}

/* Shared by the three ops; gates: 4 (LSTM), 3 (GRU), 1 (RNN). */
static int recurrent(px_graph *g, px_node *n, px_diag *d, int gates, int max_in) {
    (void)g;
    px_value *x, *w, *r;
    if (px_su_arity(n, 3, max_in, d) || px_su_need(n, 0, "X", d, &x) ||
        px_su_need(n, 1, "W", d, &w) || px_su_need(n, 2, "R", d, &r))
        return -1;
    if (px_su_want_float(n, d, x, "X") || px_su_same_dtype(n, d, x, w) ||
        px_su_same_dtype(n, d, x, r))
        return -1;
    const char *dir = px_attr_string(n, "direction", "forward");
    int64_t nd;
    if (!strcmp(dir, "forward") || !strcmp(dir, "reverse"))
        nd = 1;
    else if (!strcmp(dir, "bidirectional"))
        nd = 2;
    else
        return px_su_error(d, n, "unknown direction '%s'", dir);
    int64_t layout = px_attr_int(n, "layout", 0);
    if (layout != 0 && layout != 1)
        return px_su_error(d, n, "layout must be 0 or 1, got %lld", (long long)layout);
    if (want_rank(n, d, x, 3, "X") || want_rank(n, d, w, 3, "W") || want_rank(n, d, r, 3, "R"))
        return -1;
    int64_t h = px_attr_int(n, "hidden_size", -1);
    if (px_node_attr(n, "hidden_size") && h < 1)
        return px_su_error(d, n, "hidden_size must be >= 1, got %lld", (long long)h);
    if (h < 0 && r->shape.rank == 3) h = r->shape.dims[2];
    if (h < 0 && w->shape.rank == 3 && w->shape.dims[1] >= 0) h = w->shape.dims[1] / gates;
    px_value *b = px_su_in(n, 3), *seq_lens = px_su_in(n, 4), *h0 = px_su_in(n, 5);
    px_value *c0 = gates == 4 ? px_su_in(n, 6) : NULL, *peep = gates == 4 ? px_su_in(n, 7) : NULL;
    int64_t gh = h >= 0 ? gates * h : -1;
    int64_t in_size = x->shape.rank == 3 ? x->shape.dims[2] : -1;
    if (want_dim(n, d, w, 0, nd, "W") || want_dim(n, d, w, 1, gh, "W") ||
        want_dim(n, d, w, 2, in_size, "W") || want_dim(n, d, r, 0, nd, "R") ||
        want_dim(n, d, r, 1, gh, "R") || want_dim(n, d, r, 2, h, "R"))
        return -1;
    if (want_rank(n, d, b, 2, "B") || want_dim(n, d, b, 0, nd, "B") ||
        want_dim(n, d, b, 1, gh >= 0 ? 2 * gh : -1, "B"))
        return -1;
    if (seq_lens && seq_lens->dtype != PX_I32)
        return px_su_error(d, n, "sequence_lens '%s' must be int32, got %s", seq_lens->name,
                           px_dtype_name(seq_lens->dtype));
    if (want_rank(n, d, peep, 2, "P") || want_dim(n, d, peep, 1, h >= 0 ? 3 * h : -1, "P"))
        return -1;
    /* X is [seq, batch, input] (layout 0) or [batch, seq, input] */
    px_shape xs = x->shape.rank == 3 ? x->shape : px_su_unknown_rank(3);
    int seq_i = layout ? 1 : 0, batch_i = layout ? 0 : 1;
    px_value *states[2] = {h0, c0};
    for (int i = 0; i < 2; i++) {
        px_value *s = states[i];
        const char *what = i ? "initial_c" : "initial_h";
        if (s && (want_rank(n, d, s, 3, what) || want_dim(n, d, s, layout ? 1 : 0, nd, what) ||
                  want_dim(n, d, s, 2, h, what) ||
                  want_dim(n, d, s, layout ? 0 : 1, xs.dims[batch_i], what)))
            return -1;
    }
    px_shape y = px_su_unknown_rank(4), yh = px_su_unknown_rank(3);
    if (layout == 0) {
        px_su_copy_dim(&y, 0, &xs, seq_i);
        px_su_set_dim(&y, 1, nd);
        px_su_copy_dim(&y, 2, &xs, batch_i);
        px_su_set_dim(&yh, 0, nd);
        px_su_copy_dim(&yh, 1, &xs, batch_i);
    } else {
        px_su_copy_dim(&y, 0, &xs, batch_i);
        px_su_copy_dim(&y, 1, &xs, seq_i);
        px_su_set_dim(&y, 2, nd);
        px_su_copy_dim(&yh, 0, &xs, batch_i);
        px_su_set_dim(&yh, 1, nd);
    }
    y.dims[3] = h;
    yh.dims[2] = h;
    if (px_su_set(n, 0, x->dtype, &y, d) || px_su_set(n, 1, x->dtype, &yh, d)) return -1;
    if (gates == 4 && px_su_set(n, 2, x->dtype, &yh, d)) return -1;
    return 0;
}

int px_shape_lstm(px_graph *g, px_node *n, px_diag *d) {
    return recurrent(g, n, d, 4, 8);
}

int px_shape_gru(px_graph *g, px_node *n, px_diag *d) {
    return recurrent(g, n, d, 3, 6);
}

int px_shape_rnn(px_graph *g, px_node *n, px_diag *d) {
    return recurrent(g, n, d, 1, 6);
}
