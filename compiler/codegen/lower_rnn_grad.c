/* Lowerings of the recurrent backward ops LSTMGrad, GRUGrad and RNNGrad
 * (made by passes/grad_rnn.c, shapes in ir/shape_rnn_grad.c) to
 * px_k_lstm_grad, px_k_gru_grad and px_k_rnn_grad
 * (runtime/kernels/rnn_grad.c, whose comment at px_k_lstm_grad documents buf
 * and p). Every shape is checked here so the kernel can trust them. */
#include "lower.h"

#include <ctype.h>
#include <limits.h>
#include <string.h>

/* Activation codes of enum px_rnn_act_kind (runtime/kernels/rnn_internal.h;
 * the runtime cannot be included here). */
enum { ACT_SIGMOID = 0, ACT_TANH = 1, ACT_RELU = 2 };

static int same_nocase(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
    return *a == *b;
}

/* v (absent allowed when optional) is static with dtype dt and shape dims[rank]. */
static int check(const px_node *n, const px_value *v, const char *what, int optional, px_dtype dt,
                 int rank, const int64_t *dims, px_diag *d) {
    char s[256], w[256];
    if (!v) return optional ? 0 : px_lower_error(d, n, "missing %s", what);
    px_shape want = px_shape_make(rank, dims);
    if (v->dtype != dt || !px_shape_is_static(&v->shape) || !px_shape_equal(&v->shape, &want))
        return px_lower_error(d, n, "%s '%s' is %s %s, expected %s %s", what, v->name,
                              px_dtype_name(v->dtype), px_shape_str(&v->shape, s, sizeof s),
                              px_dtype_name(dt), px_shape_str(&want, w, sizeof w));
    return 0;
}

static int fits_blas(const px_node *n, int64_t v, const char *what, px_diag *d) {
    if (v > INT_MAX)
        return px_lower_error(d, n, "%s = %lld exceeds the BLAS limit %d", what, (long long)v,
                              INT_MAX);
    return 0;
}

int px_lower_rnn_grad(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    int gates = n->op == PX_OP_LSTMGrad ? 4 : n->op == PX_OP_GRUGrad ? 3 : 1;
    const px_value *in[11], *out[6];
    for (int i = 0; i < 11; i++) in[i] = px_lower_in(n, i);
    for (int i = 0; i < 6; i++) out[i] = px_lower_out(n, i);
    const px_value *x = in[0], *r = in[2];
    char s[256];
    if (!x || !in[1] || !r) return px_lower_error(d, n, "needs inputs X, W and R");
    if (x->dtype != PX_F32 && x->dtype != PX_F64)
        return px_lower_error(d, n, "X '%s' has dtype %s; the kernel supports float and double",
                              x->name, px_dtype_name(x->dtype));
    if (!px_shape_is_static(&x->shape) || x->shape.rank != 3 || !px_shape_is_static(&r->shape) ||
        r->shape.rank != 3)
        return px_lower_error(d, n, "X '%s' (%s) and R must have static 3-D shapes", x->name,
                              px_shape_str(&x->shape, s, sizeof s));
    if (gates != 4 && (in[5] || in[9] || out[5]))
        return px_lower_error(d, n, "%s has no cell state (initial_c, dY_c, dinitial_c)",
                              n->op_type);
    const char *dir = px_attr_string(n, "direction", "forward");
    int64_t direction = !strcmp(dir, "forward")         ? 0
                        : !strcmp(dir, "reverse")       ? 1
                        : !strcmp(dir, "bidirectional") ? 2
                                                        : -1;
    if (direction < 0) return px_lower_error(d, n, "unknown direction '%s'", dir);
    int64_t nd = direction == 2 ? 2 : 1, layout = px_attr_int(n, "layout", 0);
    if (layout != 0 && layout != 1)
        return px_lower_error(d, n, "layout must be 0 or 1, got %lld", (long long)layout);
    int64_t seq = x->shape.dims[layout ? 1 : 0], batch = x->shape.dims[layout ? 0 : 1];
    int64_t input = x->shape.dims[2], hidden = r->shape.dims[2], gh = gates * hidden;
    if (px_attr_int(n, "hidden_size", hidden) != hidden || hidden < 1)
        return px_lower_error(d, n, "hidden_size does not match R '%s' (%s)", r->name,
                              px_shape_str(&r->shape, s, sizeof s));
    px_dtype dt = x->dtype;
    int64_t w_dims[3] = {nd, gh, input}, r_dims[3] = {nd, gh, hidden}, b_dims[2] = {nd, 2 * gh};
    int64_t st[3] = {layout ? batch : nd, layout ? nd : batch, hidden};
    int64_t y[4] = {seq, nd, batch, hidden};
    if (layout) {
        y[0] = batch;
        y[1] = seq;
        y[2] = nd;
    }
    if (check(n, in[1], "W", 0, dt, 3, w_dims, d) || check(n, r, "R", 0, dt, 3, r_dims, d) ||
        check(n, in[3], "B", 1, dt, 2, b_dims, d) ||
        check(n, in[4], "initial_h", 1, dt, 3, st, d) ||
        check(n, in[5], "initial_c", 1, dt, 3, st, d) || check(n, in[6], "Y", 1, dt, 4, y, d) ||
        check(n, in[7], "dY", 1, dt, 4, y, d) || check(n, in[8], "dY_h", 1, dt, 3, st, d) ||
        check(n, in[9], "dY_c", 1, dt, 3, st, d) ||
        check(n, in[10], "sequence_lens", 1, PX_I32, 1, &batch, d) ||
        check(n, out[0], "dX", 1, dt, 3, x->shape.dims, d) ||
        check(n, out[1], "dW", 1, dt, 3, w_dims, d) ||
        check(n, out[2], "dR", 1, dt, 3, r_dims, d) ||
        check(n, out[3], "dB", 1, dt, 2, b_dims, d) ||
        check(n, out[4], "dinitial_h", 1, dt, 3, st, d) ||
        check(n, out[5], "dinitial_c", 1, dt, 3, st, d))
        return -1;
    /* per-step products of layout 1 step over rows seq apart */
    if (fits_blas(n, seq * batch, "seq_length*batch_size", d) ||
        fits_blas(n, seq * gh, "seq_length*gates*hidden_size", d) ||
        fits_blas(n, seq * (input > hidden ? input : hidden), "seq_length*input_size", d))
        return -1;
    int64_t codes[2] = {ACT_TANH, ACT_TANH};
    const px_attr *acts = px_node_attr(n, "activations");
    if (acts) {
        if (gates != 1 || acts->kind != PX_ATTR_STRINGS || acts->n != nd)
            return px_lower_error(d, n, "attribute 'activations' must name %lld RNN activations",
                                  (long long)nd);
        for (int i = 0; i < nd; i++) {
            const char *a = acts->strings[i].data ? acts->strings[i].data : "";
            codes[i] = same_nocase(a, "Tanh")      ? ACT_TANH
                       : same_nocase(a, "Sigmoid") ? ACT_SIGMOID
                       : same_nocase(a, "Relu")    ? ACT_RELU
                                                   : -1;
            if (codes[i] < 0)
                return px_lower_error(d, n, "activation '%s' has no gradient kernel", a);
        }
    }
    static const char *const kernels[5] = {"", "px_k_rnn_grad", "", "px_k_gru_grad",
                                           "px_k_lstm_grad"};
    px_kc_set_kernel(k, kernels[gates]);
    for (int i = 0; i < 11; i++) px_kc_buf(k, in[i]);
    for (int i = 0; i < 6; i++) px_kc_buf(k, out[i]);
    px_kc_i64(k, dt);
    px_kc_i64(k, direction);
    px_kc_i64(k, layout);
    px_kc_i64(k, seq);
    px_kc_i64(k, batch);
    px_kc_i64(k, input);
    px_kc_i64(k, hidden);
    px_kc_i64(k, gates == 3 && px_attr_int(n, "linear_before_reset", 0) != 0);
    for (int i = 0; i < nd; i++) px_kc_i64(k, codes[i]);
    return 0;
}
