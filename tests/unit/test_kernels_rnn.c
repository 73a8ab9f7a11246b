/* The recurrent kernels (LSTM, GRU, RNN) and the training optimizers
 * (Adagrad, Momentum, Adam), each run through its lowering: a one-node graph
 * is lowered with px_lower_node and the kernel is called with the
 * parameters the lowering wrote. Recurrent results are compared with a
 * naive per-step, per-batch-entry implementation written here in double
 * (plain dot products, no GEMM); optimizer results with hand-computed steps.
 * Also: the vectorizable exp/tanh against libm, and the lowerings' refusals. */
#include "graph.h"
#include "kernels/rnn_math.h"
#include "lower.h"
#include "px_kernel.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rng_state = 2024;
static double rnd(void) { /* uniform in [-1, 1) */
    rng_state = rng_state * 1664525u + 1013904223u;
    return (double)(rng_state >> 8) / (double)(1u << 23) - 1.0;
}

/* ---------- running one lowered node ---------- */

/* Data of the graph's values, by value id. */
typedef struct bound {
    void *data[64];
} bound;

static char *copy_str(const char *s) {
    char *c = malloc(strlen(s) + 1);
    return strcpy(c, s);
}

static px_diag *new_diag(void) {
    px_diag *d = malloc(sizeof *d);
    px_diag_init(d);
    return d;
}

/* Lowers n and calls its kernel with the buffers bound to the values. */
static void run_node(px_graph *g, px_node *n, bound *b) {
    px_diag *d = new_diag();
    px_kcall k;
    cr_assert_eq(px_lower_node(g, n, &k, d), 0, "%s", d->text);
    px_kernel_fn fn = px_kernel_find(k.kernel);
    cr_assert_not_null(fn, "kernel %s is not registered", k.kernel);
    void *bufs[PX_KCALL_MAX_BUFS];
    for (int i = 0; i < k.n_bufs; i++) bufs[i] = k.bufs[i] ? b->data[k.bufs[i]->id] : NULL;
    fn(bufs, k.params);
    px_kcall_free(&k);
    free(d);
}

static px_value *value(px_graph *g, const char *name, px_dtype dt, int rank, const int64_t *dims) {
    px_shape s = px_shape_make(rank, dims);
    px_value *v = px_graph_new_value(g, name, dt, &s);
    cr_assert_not_null(v);
    cr_assert_lt(v->id, 64);
    return v;
}

/* ---------- recurrent cells: a naive reference ---------- */

enum {
    ACT_SIGMOID,
    ACT_TANH,
    ACT_RELU,
    ACT_AFFINE,
    ACT_LEAKY,
    ACT_THRESH,
    ACT_STANH,
    ACT_HSIG,
    ACT_ELU,
    ACT_SOFTSIGN,
    ACT_SOFTPLUS
};
static const char *const act_names[] = {
    "Sigmoid",    "Tanh",        "Relu", "Affine",   "LeakyRelu", "ThresholdedRelu",
    "ScaledTanh", "HardSigmoid", "Elu",  "Softsign", "Softplus"};
static const int act_alpha[] = {0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0};
static const int act_beta[] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0};

static double ref_act(int k, double a, double b, double x) {
    switch (k) {
    case ACT_SIGMOID: return 1 / (1 + exp(-x));
    case ACT_TANH: return tanh(x);
    case ACT_RELU: return x > 0 ? x : 0;
    case ACT_AFFINE: return a * x + b;
    case ACT_LEAKY: return x >= 0 ? x : a * x;
    case ACT_THRESH: return x > a ? x : 0;
    case ACT_STANH: return a * tanh(b * x);
    case ACT_HSIG: return fmax(0, fmin(1, a * x + b));
    case ACT_ELU: return x >= 0 ? x : a * (exp(x) - 1);
    case ACT_SOFTSIGN: return x / (1 + fabs(x));
    case ACT_SOFTPLUS: return log(1 + exp(x));
    }
    return NAN;
}

typedef struct rcase {
    const char *op; /* "LSTM", "GRU", "RNN" */
    int gates, n_acts;
    const char *direction;
    int layout;
    int64_t S, B, I, H;
    int has_b, has_lens, has_h0, has_c0, has_p;
    int32_t lens[8];
    double clip; /* 0: none */
    int variant; /* input_forget / linear_before_reset */
    int n_given; /* activations given explicitly (0: defaults) */
    int acts[6];
    double alpha[6], beta[6]; /* per activation slot, where it takes one */
    px_dtype dt;
} rcase;

typedef struct rdata { /* inputs and outputs in double */
    double *x, *w, *r, *b, *h0, *c0, *p, *y, *yh, *yc;
} rdata;

static double clipv(double v, double c) {
    return c > 0 ? fmax(-c, fmin(c, v)) : v;
}

/* The ONNX equations, one batch entry and one step at a time. */
static void reference(const rcase *c, const int *acts, const double *al, const double *be,
                      const rdata *in, rdata *o) {
    int nd = !strcmp(c->direction, "bidirectional") ? 2 : 1;
    int64_t S = c->S, B = c->B, I = c->I, H = c->H, G = c->gates;
    memset(o->y, 0, (size_t)(S * nd * B * H) * sizeof(double));
    double h[64], cc[64], hn[64], gate[4][64];
    for (int d = 0; d < nd; d++) {
        int rev = nd == 2 ? d == 1 : !strcmp(c->direction, "reverse");
        const int *ak = acts + d * c->n_acts;
        const double *aa = al + d * c->n_acts, *ab = be + d * c->n_acts;
        const double *W = in->w + d * G * H * I, *R = in->r + d * G * H * H;
        const double *Wb = in->b ? in->b + d * 2 * G * H : NULL, *Rb = Wb ? Wb + G * H : NULL;
        for (int64_t b = 0; b < B; b++) {
            int64_t so = c->layout ? (b * nd + d) * H : (d * B + b) * H;
            for (int64_t j = 0; j < H; j++) {
                h[j] = in->h0 ? in->h0[so + j] : 0;
                cc[j] = in->c0 ? in->c0[so + j] : 0;
            }
            int64_t len = c->has_lens ? c->lens[b] : S;
            for (int64_t k = 0; k < len; k++) {
                int64_t t = rev ? len - 1 - k : k;
                const double *x = in->x + (c->layout ? b * S + t : t * B + b) * I;
                /* gate q row j: W x + R h + biases (GRU's h gate done below) */
                for (int q = 0; q < G; q++)
                    for (int64_t j = 0; j < H; j++) {
                        int64_t row = q * H + j;
                        double s = Wb ? Wb[row] : 0;
                        for (int64_t i = 0; i < I; i++) s += W[row * I + i] * x[i];
                        int gru_h = G == 3 && q == 2;
                        if (!gru_h) {
                            s += Rb ? Rb[row] : 0;
                            for (int64_t i = 0; i < H; i++) s += R[row * H + i] * h[i];
                        }
                        gate[q][j] = s;
                    }
                if (G == 4) { /* i o f c */
                    const double *P = in->p ? in->p + d * 3 * H : NULL;
                    for (int64_t j = 0; j < H; j++) {
                        double ig = ref_act(ak[0], aa[0], ab[0],
                                            clipv(gate[0][j] + (P ? P[j] * cc[j] : 0), c->clip));
                        double fg =
                            ref_act(ak[0], aa[0], ab[0],
                                    clipv(gate[2][j] + (P ? P[2 * H + j] * cc[j] : 0), c->clip));
                        if (c->variant) fg = 1 - ig;
                        double cg = ref_act(ak[1], aa[1], ab[1], clipv(gate[3][j], c->clip));
                        cc[j] = fg * cc[j] + ig * cg;
                        double og =
                            ref_act(ak[0], aa[0], ab[0],
                                    clipv(gate[1][j] + (P ? P[H + j] * cc[j] : 0), c->clip));
                        hn[j] = og * ref_act(ak[2], aa[2], ab[2], cc[j]);
                    }
                } else if (G == 3) { /* z r h */
                    double z[64], r[64];
                    for (int64_t j = 0; j < H; j++) {
                        z[j] = ref_act(ak[0], aa[0], ab[0], clipv(gate[0][j], c->clip));
                        r[j] = ref_act(ak[0], aa[0], ab[0], clipv(gate[1][j], c->clip));
                    }
                    for (int64_t j = 0; j < H; j++) {
                        int64_t row = 2 * H + j;
                        double rh = 0, hr = 0, rbh = Rb ? Rb[row] : 0;
                        for (int64_t i = 0; i < H; i++) {
                            rh += R[row * H + i] * (r[i] * h[i]); /* (r*H) Rh^T */
                            hr += R[row * H + i] * h[i];          /* H Rh^T */
                        }
                        double pre = gate[2][j] + (c->variant ? r[j] * (hr + rbh) : rh + rbh);
                        double hh = ref_act(ak[1], aa[1], ab[1], clipv(pre, c->clip));
                        hn[j] = (1 - z[j]) * hh + z[j] * h[j];
                    }
                } else {
                    for (int64_t j = 0; j < H; j++)
                        hn[j] = ref_act(ak[0], aa[0], ab[0], clipv(gate[0][j], c->clip));
                }
                memcpy(h, hn, (size_t)H * sizeof(double));
                int64_t yo = (c->layout ? (b * S + t) * nd + d : (t * nd + d) * B + b) * H;
                memcpy(o->y + yo, h, (size_t)H * sizeof(double));
            }
            memcpy(o->yh + so, h, (size_t)H * sizeof(double));
            if (o->yc) memcpy(o->yc + so, cc, (size_t)H * sizeof(double));
        }
    }
}

static double *rand_vec(int64_t n, double scale) {
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = scale * rnd();
    return v;
}

/* Buffer of dtype dt holding v (converted). */
static void *to_dt(const double *v, int64_t n, px_dtype dt) {
    void *p = malloc((size_t)(n > 0 ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++) {
        if (dt == PX_F32)
            ((float *)p)[i] = (float)v[i];
        else
            ((double *)p)[i] = v[i];
    }
    return p;
}

static double get_dt(const void *p, px_dtype dt, int64_t i) {
    return dt == PX_F32 ? ((const float *)p)[i] : ((const double *)p)[i];
}

static void expect_close(const char *what, const void *got, px_dtype dt, const double *want,
                         int64_t n, double atol, double rtol) {
    for (int64_t i = 0; i < n; i++) {
        double g = get_dt(got, dt, i);
        cr_assert(fabs(g - want[i]) <= atol + rtol * fabs(want[i]),
                  "%s[%lld] = %.9g, reference %.9g", what, (long long)i, g, want[i]);
    }
}

/* Builds the node, runs kernel and reference, compares Y, Y_h (and Y_c). */
static void check_case(const rcase *c) {
    int nd = !strcmp(c->direction, "bidirectional") ? 2 : 1;
    int64_t S = c->S, B = c->B, I = c->I, H = c->H, G = c->gates, L = c->layout;
    int is_lstm = G == 4;
    px_dtype dt = c->dt;
    int64_t xd[3] = {L ? B : S, L ? S : B, I}, wd[3] = {nd, G * H, I}, rd[3] = {nd, G * H, H};
    int64_t bd[2] = {nd, 2 * G * H}, ld[1] = {B}, sd[3] = {L ? B : nd, L ? nd : B, H};
    int64_t pd[2] = {nd, 3 * H}, yd[4] = {S, nd, B, H};
    if (L) {
        yd[0] = B;
        yd[1] = S;
        yd[2] = nd;
    }
    int64_t ny = S * nd * B * H, ns = nd * B * H;
    rdata in = {0}, ref = {0};
    in.x = rand_vec(S * B * I, 1.0);
    in.w = rand_vec(nd * G * H * I, 0.6);
    in.r = rand_vec(nd * G * H * H, 0.6);
    if (c->has_b) in.b = rand_vec(nd * 2 * G * H, 0.5);
    if (c->has_h0) in.h0 = rand_vec(ns, 0.8);
    if (c->has_c0) in.c0 = rand_vec(ns, 0.8);
    if (c->has_p) in.p = rand_vec(nd * 3 * H, 0.5);
    ref.y = malloc((size_t)ny * sizeof(double));
    ref.yh = malloc((size_t)ns * sizeof(double));
    ref.yc = is_lstm ? malloc((size_t)ns * sizeof(double)) : NULL;

    /* the activations as given to the node and as the reference sees them */
    int n_slots = nd * c->n_acts, acts[6];
    double al[6], be[6];
    static const int dflt[3][3] = {
        {ACT_TANH}, {ACT_SIGMOID, ACT_TANH}, {ACT_SIGMOID, ACT_TANH, ACT_TANH}};
    for (int i = 0; i < n_slots; i++) {
        acts[i] = c->n_given ? c->acts[i] : dflt[c->n_acts - 1][i % c->n_acts];
        al[i] = (float)c->alpha[i]; /* attributes are float32 */
        be[i] = (float)c->beta[i];
    }
    rcase cf = *c;
    cf.clip = (float)c->clip;
    reference(&cf, acts, al, be, &in, &ref);

    px_graph *g = px_graph_new("rnn");
    px_graph_set_opset(g, "", 14);
    px_value *vin[8] = {0}, *vout[3] = {0};
    bound bd_ = {0};
    vin[0] = value(g, "X", dt, 3, xd);
    vin[1] = value(g, "W", dt, 3, wd);
    vin[2] = value(g, "R", dt, 3, rd);
    if (c->has_b) vin[3] = value(g, "B", dt, 2, bd);
    if (c->has_lens) vin[4] = value(g, "sequence_lens", PX_I32, 1, ld);
    if (c->has_h0) vin[5] = value(g, "initial_h", dt, 3, sd);
    if (c->has_c0) vin[6] = value(g, "initial_c", dt, 3, sd);
    if (c->has_p) vin[7] = value(g, "P", dt, 2, pd);
    vout[0] = value(g, "Y", dt, 4, yd);
    vout[1] = value(g, "Y_h", dt, 3, sd);
    if (is_lstm) vout[2] = value(g, "Y_c", dt, 3, sd);
    const double *src[8] = {in.x, in.w, in.r, in.b, NULL, in.h0, in.c0, in.p};
    int64_t cnt[8] = {S * B * I, nd * G * H * I, nd * G * H * H, nd * 2 * G * H, B, ns,
                      ns,        nd * 3 * H};
    for (int i = 0; i < 8; i++)
        if (vin[i]) bd_.data[vin[i]->id] = i == 4 ? (void *)c->lens : to_dt(src[i], cnt[i], dt);
    for (int i = 0; i < 3; i++)
        if (vout[i]) {
            bd_.data[vout[i]->id] = malloc((size_t)(i ? ns : ny) * 8);
            memset(bd_.data[vout[i]->id], 0x7f, (size_t)(i ? ns : ny) * 8); /* garbage */
        }
    int n_in = is_lstm ? 8 : 6;
    while (n_in > 3 && !vin[n_in - 1]) n_in--;
    px_node *n = px_graph_add_node(g, c->op, "", "cell", n_in, vin, is_lstm ? 3 : 2, vout);
    px_node_set_attr_int(n, "hidden_size", H);
    px_node_set_attr_string(n, "direction", c->direction);
    px_node_set_attr_int(n, "layout", L);
    if (c->clip > 0) px_node_set_attr_float(n, "clip", (float)c->clip);
    if (c->variant) px_node_set_attr_int(n, is_lstm ? "input_forget" : "linear_before_reset", 1);
    if (c->n_given) {
        px_attr *a = px_node_add_attr(n, "activations", PX_ATTR_STRINGS);
        a->n = n_slots;
        a->strings = calloc((size_t)n_slots, sizeof *a->strings);
        float fa[6], fb[6];
        int na = 0, nb = 0;
        for (int i = 0; i < n_slots; i++) {
            const char *s = act_names[acts[i]];
            a->strings[i].len = strlen(s);
            a->strings[i].data = copy_str(s);
            /* the ONNX lists hold only the values of activations that take them */
            if (act_alpha[acts[i]]) fa[na++] = (float)c->alpha[i];
            if (act_beta[acts[i]]) fb[nb++] = (float)c->beta[i];
        }
        if (na) px_node_set_attr_floats(n, "activation_alpha", na, fa);
        if (nb) px_node_set_attr_floats(n, "activation_beta", nb, fb);
    }
    run_node(g, n, &bd_);

    double atol = dt == PX_F32 ? 2e-5 : 1e-12, rtol = dt == PX_F32 ? 2e-4 : 1e-10;
    expect_close("Y", bd_.data[vout[0]->id], dt, ref.y, ny, atol, rtol);
    expect_close("Y_h", bd_.data[vout[1]->id], dt, ref.yh, ns, atol, rtol);
    if (is_lstm) expect_close("Y_c", bd_.data[vout[2]->id], dt, ref.yc, ns, atol, rtol);

    for (int i = 0; i < 8; i++)
        if (vin[i] && i != 4) free(bd_.data[vin[i]->id]);
    for (int i = 0; i < 3; i++)
        if (vout[i]) free(bd_.data[vout[i]->id]);
    double *owned[] = {in.x, in.w, in.r, in.b, in.h0, in.c0, in.p, ref.y, ref.yh, ref.yc};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) free(owned[i]);
    px_graph_free(g);
}

Test(kernels_rnn, lstm_bidirectional_seq_lens_peepholes_vs_naive) {
    rcase c = {"LSTM", 4, 3, "bidirectional", 0, 5, 4, 3,   6,   1,   1,
               1,      1, 1, {5, 3, 1, 0},    0, 0, 0, {0}, {0}, {0}, PX_F32};
    check_case(&c);
    c.dt = PX_F64;
    check_case(&c);
}

Test(kernels_rnn, lstm_batch_major_reverse_defaults_vs_naive) {
    rcase c = {"LSTM", 4, 3, "reverse", 1, 7, 3, 5,   8,   0,   0,
               0,      0, 0, {0},       0, 0, 0, {0}, {0}, {0}, PX_F32};
    check_case(&c);
    c.layout = 0;
    c.direction = "forward";
    c.has_b = 1;
    check_case(&c);
}

Test(kernels_rnn, lstm_activations_clip_input_forget_vs_naive) {
    /* forward: HardSigmoid, ScaledTanh, Softsign; reverse: Sigmoid, Elu, Softplus */
    rcase c = {"LSTM",
               4,
               3,
               "bidirectional",
               1,
               4,
               3,
               4,
               5,
               1,
               1,
               1,
               1,
               1,
               {2, 4, 3},
               0.9,
               1,
               6,
               {ACT_HSIG, ACT_STANH, ACT_SOFTSIGN, ACT_SIGMOID, ACT_ELU, ACT_SOFTPLUS},
               {0.3, 0.9, 0, 0, 0.7, 0},
               {0.4, 1.1, 0, 0, 0, 0},
               PX_F64};
    check_case(&c);
    c.dt = PX_F32;
    check_case(&c);
}

Test(kernels_rnn, gru_both_reset_modes_bidirectional_seq_lens_vs_naive) {
    rcase c = {"GRU", 3, 2, "bidirectional", 0, 6, 4, 3,   5,   1,   1,
               1,     0, 0, {6, 2, 4, 1},    0, 0, 0, {0}, {0}, {0}, PX_F32};
    check_case(&c);
    c.variant = 1; /* linear_before_reset */
    check_case(&c);
    c.dt = PX_F64;
    check_case(&c);
    c.variant = 0;
    check_case(&c);
}

Test(kernels_rnn, gru_batch_major_activations_clip_vs_naive) {
    rcase c = {"GRU",
               3,
               2,
               "reverse",
               1,
               5,
               2,
               4,
               7,
               1,
               1,
               1,
               0,
               0,
               {3, 5},
               1.5,
               1,
               2,
               {ACT_HSIG, ACT_LEAKY},
               {0.25, 0.05},
               {0.45, 0},
               PX_F32};
    check_case(&c);
}

Test(kernels_rnn, rnn_activations_vs_naive) {
    rcase c = {"RNN",
               1,
               1,
               "bidirectional",
               0,
               6,
               3,
               4,
               5,
               1,
               1,
               1,
               0,
               0,
               {6, 0, 3},
               0,
               0,
               2,
               {ACT_RELU, ACT_AFFINE},
               {0, 0.5},
               {0, 0.1},
               PX_F32};
    check_case(&c);
    c.acts[0] = ACT_THRESH;
    c.alpha[0] = 0.2;
    c.acts[1] = ACT_TANH;
    c.layout = 1;
    check_case(&c);
    rcase dflt = {"RNN", 1, 1, "forward", 0, 4, 2, 3,   4,   1,   0,
                  1,     0, 0, {0},       0, 0, 0, {0}, {0}, {0}, PX_F64};
    check_case(&dflt);
}

Test(kernels_rnn, lstm_language_model_shape_vs_naive) {
    /* the LSTM of examples/lstm_lm: batch 8, seq 16, input 32, hidden 64 */
    rcase c = {"LSTM", 4, 3, "forward", 0, 16, 8, 32,  64,  1,   0,
               1,      1, 0, {0},       0, 0,  0, {0}, {0}, {0}, PX_F32};
    check_case(&c);
}

/* ---------- the vectorizable exp / tanh ---------- */

Test(kernels_rnn, fast_exp_tanh_sigmoid_match_libm) {
    double worst_exp = 0, worst_tanh = 0, worst_sig = 0;
    for (int i = 0; i <= 200000; i++) {
        float x = -90.0f + 180.0f * (float)i / 200000.0f;
        if (x > -87.0f && x < 88.0f) {
            double e = exp((double)x), re = fabs(px_rnn_expf(x) - e) / e;
            worst_exp = fmax(worst_exp, re);
        }
        double t = tanh((double)x), rt = fabs(px_rnn_tanhf(x) - t) / fmax(fabs(t), 1e-30);
        worst_tanh = fmax(worst_tanh, rt);
        double s = 1 / (1 + exp(-(double)x));
        worst_sig = fmax(worst_sig, fabs(px_rnn_sigmoidf(x) - s) / fmax(s, 1e-30) * (s > 1e-30));
    }
    for (int i = 1; i <= 1000; i++) { /* tiny arguments: tanh(x) ~ x */
        float x = (float)i * 1e-6f;
        worst_tanh = fmax(worst_tanh, fabs(px_rnn_tanhf(x) - tanh((double)x)) / tanh((double)x));
    }
    cr_expect_lt(worst_exp, 3e-7, "exp relative error %g", worst_exp);
    cr_expect_lt(worst_tanh, 5e-7, "tanh relative error %g", worst_tanh);
    cr_expect_lt(worst_sig, 5e-7, "sigmoid relative error %g", worst_sig);
    cr_expect(isnan(px_rnn_tanhf(NAN)) && isnan(px_rnn_sigmoidf(NAN)));
    cr_expect_eq(px_rnn_tanhf(100.0f), 1.0f);
    cr_expect_eq(px_rnn_tanhf(-100.0f), -1.0f);
    cr_expect_eq(px_rnn_sigmoidf(100.0f), 1.0f);
    cr_expect_lt(px_rnn_sigmoidf(-100.0f), 1e-37f);
}

/* ---------- optimizers ---------- */

/* A node of domain ai.onnx.preview.training over `count` tensors of 3
 * elements, with the given data (inputs in order R, T, X.., G.., state..). */
typedef struct opt_run {
    px_graph *g;
    px_node *n;
    bound b;
    px_value *in[16], *out[12];
} opt_run;

static void opt_build(opt_run *o, const char *op, int count, int n_states, px_dtype dt,
                      const double *r, int64_t t, const double *xgs /* [groups][count][3] */) {
    memset(o, 0, sizeof *o);
    o->g = px_graph_new("opt");
    px_graph_set_opset(o->g, "ai.onnx.preview.training", 1);
    int64_t d3[1] = {3};
    int groups = 2 + n_states, n_in = 2 + groups * count, n_out = (1 + n_states) * count;
    o->in[0] = value(o->g, "R", dt, 0, NULL);
    o->in[1] = value(o->g, "T", PX_I64, 0, NULL);
    o->b.data[o->in[0]->id] = to_dt(r, 1, dt);
    int64_t *tp = malloc(sizeof *tp);
    *tp = t;
    o->b.data[o->in[1]->id] = tp;
    for (int i = 2; i < n_in; i++) {
        o->in[i] = value(o->g, "in", dt, 1, d3);
        o->b.data[o->in[i]->id] = to_dt(xgs + (i - 2) * 3, 3, dt);
    }
    for (int i = 0; i < n_out; i++) {
        o->out[i] = value(o->g, "out", dt, 1, d3);
        o->b.data[o->out[i]->id] = calloc(3, 8);
    }
    o->n =
        px_graph_add_node(o->g, op, "ai.onnx.preview.training", "opt", n_in, o->in, n_out, o->out);
    cr_assert_neq(o->n->op, PX_OP_UNKNOWN);
}

static void opt_free(opt_run *o) {
    for (int i = 0; i < o->g->n_values; i++) free(o->b.data[i]);
    px_graph_free(o->g);
}

Test(kernels_rnn, adagrad_two_tensors_by_hand) {
    double r = 0.5, data[] = {/* X1 */ 1,   -2,  3,    /* X2 */ 0.5, 0,    -1,
                              /* G1 */ 0.1, 0.2, -0.3, /* G2 */ 1,   -1,   0,
                              /* H1 */ 0,   1,   2,    /* H2 */ 0.5, 0.25, 4};
    for (int pass = 0; pass < 2; pass++) {
        px_dtype dt = pass ? PX_F64 : PX_F32;
        opt_run o;
        opt_build(&o, "Adagrad", 2, 1, dt, &r, 3, data);
        px_node_set_attr_float(o.n, "decay_factor", 0.25f);
        px_node_set_attr_float(o.n, "epsilon", 0.125f);
        px_node_set_attr_float(o.n, "norm_coefficient", 0.5f);
        run_node(o.g, o.n, &o.b);
        double rate = 0.5 / (1 + 3 * 0.25);
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < 3; j++) {
                double x = data[k * 3 + j], g = 0.5 * x + data[6 + k * 3 + j];
                double h = data[12 + k * 3 + j] + g * g;
                double xn = x - rate * g / (sqrt(h) + 0.125);
                cr_expect(fabs(get_dt(o.b.data[o.out[k]->id], dt, j) - xn) < 1e-6, "X%d[%d]", k, j);
                cr_expect(fabs(get_dt(o.b.data[o.out[2 + k]->id], dt, j) - h) < 1e-6, "H%d[%d]", k,
                          j);
            }
        opt_free(&o);
    }
}

Test(kernels_rnn, momentum_standard_and_nesterov_by_hand) {
    double r = 0.1, data[] = {/* X */ 1, 2,           -3,  /* G */ 0.5, -0.5,
                              1,         /* V */ 0.2, 0.4, -0.6};
    for (int mode = 0; mode < 2; mode++)
        for (int64_t t = 0; t < 2; t++) {
            opt_run o;
            opt_build(&o, "Momentum", 1, 1, PX_F32, &r, t, data);
            px_node_set_attr_float(o.n, "alpha", 0.9f);
            px_node_set_attr_float(o.n, "beta", 0.5f);
            px_node_set_attr_float(o.n, "norm_coefficient", 0.01f);
            px_node_set_attr_string(o.n, "mode", mode ? "nesterov" : "standard");
            run_node(o.g, o.n, &o.b);
            double beta = t > 0 ? 0.5 : 1.0; /* the first step takes the whole gradient */
            for (int j = 0; j < 3; j++) {
                double x = data[j], g = 0.01 * x + data[3 + j];
                double v = 0.9 * data[6 + j] + beta * g;
                double xn = mode ? x - 0.1 * (g + 0.9 * v) : x - 0.1 * v;
                cr_expect(fabs(get_dt(o.b.data[o.out[0]->id], PX_F32, j) - xn) < 1e-6,
                          "mode %d T %lld X[%d]", mode, (long long)t, j);
                cr_expect(fabs(get_dt(o.b.data[o.out[1]->id], PX_F32, j) - v) < 1e-6,
                          "mode %d T %lld V[%d]", mode, (long long)t, j);
            }
            opt_free(&o);
        }
}

Test(kernels_rnn, adam_bias_correction_and_post_norm_by_hand) {
    double r = 0.01, data[] = {/* X */ 1,   -1,  2,    /* G */ 0.3,  -0.2, 0.1,
                               /* V */ 0.1, 0.1, -0.1, /* H */ 0.01, 0.04, 0.09};
    for (int64_t t = 0; t < 6; t += 5) {
        opt_run o;
        opt_build(&o, "Adam", 1, 2, PX_F64, &r, t, data);
        px_node_set_attr_float(o.n, "alpha", 0.8f);
        px_node_set_attr_float(o.n, "beta", 0.9f);
        px_node_set_attr_float(o.n, "epsilon", 1e-3f);
        px_node_set_attr_float(o.n, "norm_coefficient", 0.1f);
        px_node_set_attr_float(o.n, "norm_coefficient_post", 0.05f);
        run_node(o.g, o.n, &o.b);
        double a = 0.8f, b = 0.9f; /* attributes are float32 in ONNX */
        double rate = t > 0 ? r * sqrt(1 - pow(b, 5)) / (1 - pow(a, 5)) : r;
        for (int j = 0; j < 3; j++) {
            double x = data[j], g = (double)0.1f * x + data[3 + j];
            double v = a * data[6 + j] + (1 - a) * g, h = b * data[9 + j] + (1 - b) * g * g;
            double xn = (1 - (double)0.05f) * (x - rate * v / (sqrt(h) + (double)1e-3f));
            cr_expect(fabs(get_dt(o.b.data[o.out[0]->id], PX_F64, j) - xn) < 1e-12, "T %lld X[%d]",
                      (long long)t, j);
            cr_expect(fabs(get_dt(o.b.data[o.out[1]->id], PX_F64, j) - v) < 1e-12, "V[%d]", j);
            cr_expect(fabs(get_dt(o.b.data[o.out[2]->id], PX_F64, j) - h) < 1e-12, "H[%d]", j);
        }
        opt_free(&o);
    }
}

Test(kernels_rnn, adam_defaults_in_place) {
    /* X_new written over X, V_new over V, H_new over H (an in-place plan) */
    float x[3] = {1, 2, 3}, g[3] = {0.5f, -0.5f, 2}, v[3] = {0, 0, 0}, h[3] = {0, 0, 0}, r = 0.1f;
    int64_t t = 1;
    px_graph *gr = px_graph_new("opt");
    int64_t d3[1] = {3};
    px_value *in[6] = {value(gr, "R", PX_F32, 0, NULL), value(gr, "T", PX_I64, 0, NULL),
                       value(gr, "X", PX_F32, 1, d3),   value(gr, "G", PX_F32, 1, d3),
                       value(gr, "V", PX_F32, 1, d3),   value(gr, "H", PX_F32, 1, d3)};
    px_value *out[3] = {value(gr, "Xn", PX_F32, 1, d3), value(gr, "Vn", PX_F32, 1, d3),
                        value(gr, "Hn", PX_F32, 1, d3)};
    px_node *n = px_graph_add_node(gr, "Adam", "ai.onnx.preview.training", "adam", 6, in, 3, out);
    bound b = {0};
    b.data[in[0]->id] = &r;
    b.data[in[1]->id] = &t;
    b.data[in[2]->id] = b.data[out[0]->id] = x;
    b.data[in[3]->id] = g;
    b.data[in[4]->id] = b.data[out[1]->id] = v;
    b.data[in[5]->id] = b.data[out[2]->id] = h;
    run_node(gr, n, &b);
    /* defaults alpha 0.9, beta 0.999, epsilon 1e-6: at T=1 with zero state the
     * step is r * sqrt(1-beta)/(1-alpha) * (1-alpha) g / (sqrt(1-beta)|g| + eps) ~ r*sign(g) */
    const float x0[3] = {1, 2, 3}, g0[3] = {0.5f, -0.5f, 2};
    for (int j = 0; j < 3; j++) {
        double a = 0.9f, be = 0.999f, vv = (1 - a) * g0[j], hh = (1 - be) * g0[j] * g0[j];
        double rate = 0.1f * sqrt(1 - be) / (1 - a);
        double xn = x0[j] - rate * vv / (sqrt(hh) + (double)1e-6f);
        cr_expect(fabs(x[j] - xn) < 1e-6, "X[%d] = %g, want %g", j, x[j], xn);
        cr_expect(fabs(v[j] - vv) < 1e-7 && fabs(h[j] - hh) < 1e-7, "state %d", j);
    }
    px_graph_free(gr);
}

/* ---------- lowering refusals ---------- */

Test(kernels_rnn, lowerings_refuse_bad_attributes_and_dtypes) {
    px_diag *d = new_diag();
    px_graph *g = px_graph_new("bad");
    px_graph_set_opset(g, "", 14);
    int64_t xd[3] = {2, 1, 3}, wd[3] = {1, 8, 3}, rd[3] = {1, 8, 2}, yhd[3] = {1, 1, 2};
    px_value *in[3] = {value(g, "X", PX_F32, 3, xd), value(g, "W", PX_F32, 3, wd),
                       value(g, "R", PX_F32, 3, rd)};
    px_value *outs[2] = {NULL, value(g, "Y_h", PX_F32, 3, yhd)};
    px_kcall k;
    px_node *n = px_graph_add_node(g, "LSTM", "", "lstm_bad_act", 3, in, 2, outs);
    px_attr *a = px_node_add_attr(n, "activations", PX_ATTR_STRINGS);
    a->n = 3;
    a->strings = calloc(3, sizeof *a->strings);
    const char *names[3] = {"Sigmoid", "Swish", "Tanh"};
    for (int i = 0; i < 3; i++) {
        a->strings[i].data = copy_str(names[i]);
        a->strings[i].len = strlen(names[i]);
    }
    cr_assert_eq(px_lower_node(g, n, &k, d), -1);
    cr_assert(strstr(d->text, "lstm_bad_act") && strstr(d->text, "Swish"), "%s", d->text);

    px_diag_init(d); /* GRU with LSTM-sized weights: shapes checked */
    px_value *outs2[2] = {NULL, value(g, "Y_h2", PX_F32, 3, yhd)};
    px_node *gru = px_graph_add_node(g, "GRU", "", "gru_bad_w", 3, in, 2, outs2);
    cr_assert_eq(px_lower_node(g, gru, &k, d), -1);
    cr_assert(strstr(d->text, "gru_bad_w") && strstr(d->text, "W"), "%s", d->text);

    px_diag_init(d); /* float16 is not supported by the kernel */
    px_value *inh[3] = {value(g, "Xh", PX_F16, 3, xd), value(g, "Wh", PX_F16, 3, wd),
                        value(g, "Rh", PX_F16, 3, rd)};
    px_value *outs3[2] = {NULL, value(g, "Y_h3", PX_F16, 3, yhd)};
    px_node *half = px_graph_add_node(g, "LSTM", "", "lstm_half", 3, inh, 2, outs3);
    cr_assert_eq(px_lower_node(g, half, &k, d), -1);
    cr_assert(strstr(d->text, "lstm_half") && strstr(d->text, "float16"), "%s", d->text);

    px_diag_init(d); /* clip must be positive */
    px_value *outs4[2] = {NULL, value(g, "Y_h4", PX_F32, 3, yhd)};
    px_node *cl = px_graph_add_node(g, "LSTM", "", "lstm_clip", 3, in, 2, outs4);
    px_node_set_attr_float(cl, "clip", -1.0f);
    cr_assert_eq(px_lower_node(g, cl, &k, d), -1);
    cr_assert(strstr(d->text, "lstm_clip") && strstr(d->text, "clip"), "%s", d->text);

    px_diag_init(d); /* Momentum's mode is required */
    px_graph_set_opset(g, "ai.onnx.preview.training", 1);
    int64_t d2[1] = {2};
    px_value *min[5] = {value(g, "r", PX_F32, 0, NULL), value(g, "t", PX_I64, 0, NULL),
                        value(g, "x", PX_F32, 1, d2), value(g, "gx", PX_F32, 1, d2),
                        value(g, "v", PX_F32, 1, d2)};
    px_value *mout[2] = {value(g, "xn", PX_F32, 1, d2), value(g, "vn", PX_F32, 1, d2)};
    px_node *m =
        px_graph_add_node(g, "Momentum", "ai.onnx.preview.training", "mom", 5, min, 2, mout);
    px_node_set_attr_float(m, "alpha", 0.9f);
    px_node_set_attr_float(m, "beta", 1.0f);
    px_node_set_attr_float(m, "norm_coefficient", 0.0f);
    cr_assert_eq(px_lower_node(g, m, &k, d), -1);
    cr_assert(strstr(d->text, "mom") && strstr(d->text, "mode"), "%s", d->text);
    px_diag_init(d);
    px_node_set_attr_string(m, "mode", "heavy-ball");
    cr_assert_eq(px_lower_node(g, m, &k, d), -1);
    cr_assert(strstr(d->text, "heavy-ball"), "%s", d->text);
    px_diag_init(d);
    px_node_set_attr_string(m, "mode", "nesterov");
    cr_assert_eq(px_lower_node(g, m, &k, d), 0, "%s", d->text);
    cr_assert_str_eq(k.kernel, "px_k_momentum");
    px_kcall_free(&k);

    px_diag_init(d); /* G with another shape than X */
    int64_t d3[1] = {3};
    px_value *gbad = value(g, "gbad", PX_F32, 1, d3);
    px_value *min2[5] = {min[0], min[1], min[2], gbad, min[4]};
    px_value *mout2[2] = {value(g, "xn2", PX_F32, 1, d2), value(g, "vn2", PX_F32, 1, d2)};
    px_node *m2 = px_graph_add_node(g, "Momentum", "ai.onnx.preview.training", "mom_shape", 5, min2,
                                    2, mout2);
    px_node_set_attr_float(m2, "alpha", 0.9f);
    px_node_set_attr_float(m2, "beta", 1.0f);
    px_node_set_attr_float(m2, "norm_coefficient", 0.0f);
    px_node_set_attr_string(m2, "mode", "standard");
    cr_assert_eq(px_lower_node(g, m2, &k, d), -1);
    cr_assert(strstr(d->text, "mom_shape") && strstr(d->text, "gbad"), "%s", d->text);
    px_graph_free(g);
    free(d);
}
