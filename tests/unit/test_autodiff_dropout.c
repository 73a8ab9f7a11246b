/* Training-mode Dropout (passes/grad_dropout.c, runtime/kernels/dropout_train.c):
 * the rewrite pass (passes/dropout_rewrite.c) turns it into ai.parallax DropoutTrain, whose mask is
 * a function of (px_train.dropout_seed, px_train.t, node, element); the gradient regenerates that
 * mask. Checked here: the gradient against central finite differences at a fixed step (float64), dX
 * = dY * mask / (1 - ratio) exactly against the forward's own mask output, the kept fraction, the
 * same mask for the same (seed, step) and different masks for another step,
 * seed or node, the identity for ratio 0 and inference Dropout, the opset 6
 * form (is_test = 0), and the refusal of a run-time training_mode. */
#include "autodiff.h"
#include "dropout_rewrite.h"
#include "gradcheck.h"
#include "interp.h"
#include "plan.h"
#include "px_train.h"
#include "shape_infer.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static px_value *param(tg *t, px_dtype dt, const char *name, int rank, const int64_t *dims) {
    px_shape s = px_shape_make(rank, dims);
    px_value *v = px_graph_add_value(t->g, name, dt, &s, &t->d);
    cr_assert_not_null(v);
    px_graph_add_initializer(t->g, v, tg_rand_tensor(dt, rank, dims, -1, 1));
    return v;
}

static px_value *scalar_const(tg *t, px_dtype dt, double v) {
    px_shape s = px_shape_scalar();
    px_tensor *x = px_tensor_new(dt, &s, &t->d);
    px_tensor_set_f64(x, 0, v);
    return px_graph_add_constant(t->g, "c", x);
}

/* Dropout(x, ratio, training_mode) named `name` with outputs y and mask. */
static px_node *dropout(tg *t, const char *name, px_value *x, double ratio, int training) {
    px_value *in[3] = {x, scalar_const(t, x->dtype, ratio), scalar_const(t, PX_BOOL, training)};
    px_value *outs[2];
    px_shape u = px_shape_unknown();
    for (int i = 0; i < 2; i++) outs[i] = px_graph_new_value(t->g, name, PX_UNDEFINED, &u);
    px_node *n = px_graph_add_node(t->g, "Dropout", "", name, 3, in, 2, outs);
    cr_assert_eq(px_infer_node(t->g, n, &t->d), 0, "%s", t->d.text);
    return n;
}

/* sum(R * y) with R random (into *r_out when not NULL) */
static px_value *weighted_sum(tg *t, px_value *y, px_value **r_out) {
    px_value *r = px_graph_add_constant(
        t->g, "R", tg_rand_tensor(y->dtype, y->shape.rank, y->shape.dims, -1, 1));
    if (r_out) *r_out = r;
    px_node *s = tg_node(t, "ReduceSum", 1, (px_value *[]){tg_op2(t, "Mul", y, r)}, 1);
    px_node_set_attr_int(s, "keepdims", 0);
    return tg_out(t, s);
}

static int count_op(const px_graph *g, px_op op) {
    int c = 0;
    for (int k = 0; k < g->n_nodes; k++) c += !g->nodes[k]->dead && g->nodes[k]->op == op;
    return c;
}

/* Differentiates, adds every gradient as an output, plans. */
static void differentiate(tg *t, px_grads *gr, px_plan *plan, int n_expect) {
    /* the training pipeline's order: the rewrite pass, then autodiff */
    cr_assert_eq(px_pass_dropout_rewrite(t->g, &t->d), 0, "%s", t->d.text);
    cr_assert_eq(px_pass_autodiff(t->g, NULL, gr, &t->d), 0, "%s", t->d.text);
    cr_assert_eq(gr->n, n_expect);
    for (int i = 0; i < gr->n; i++) px_graph_add_output(t->g, gr->items[i].grad);
    cr_assert_eq(px_graph_verify(t->g, &t->d), 0, "%s", t->d.text);
    cr_assert_eq(px_plan_build(t->g, plan, &t->d), 0, "%s", t->d.text);
}

/* Finite differences of loss = sum(R * tanh(Dropout(x))) at a fixed step: the
 * mask is then fixed and the loss smooth in x. */
Test(autodiff_dropout, gradient_matches_finite_differences) {
    px_train.dropout_seed = 1234;
    px_train.t = 7;
    tg *t = tg_new();
    px_value *x = param(t, PX_F64, "x", 3, (int64_t[]){4, 5, 6});
    px_node *n = dropout(t, "drop", x, 0.3, 1);
    px_graph_add_output(t->g, weighted_sum(t, tg_op1(t, "Tanh", n->outputs[0]), NULL));
    px_grads gr;
    px_plan plan;
    differentiate(t, &gr, &plan, 1);
    cr_assert_eq(count_op(t->g, PX_OP_DropoutTrain), 1);
    cr_assert_eq(count_op(t->g, PX_OP_DropoutGrad), 1);
    cr_assert_eq(count_op(t->g, PX_OP_Dropout), 0);
    px_tensor **o;
    tg_run_loss(t, &plan, &o);
    double *w = x->data->data, worst = 0;
    int zeros = 0;
    for (int64_t j = 0; j < px_tensor_numel(x->data); j++) {
        double orig = w[j], eps = 1e-6;
        w[j] = orig + eps;
        double lp = tg_run_loss(t, &plan, NULL);
        w[j] = orig - eps;
        double lm = tg_run_loss(t, &plan, NULL);
        w[j] = orig;
        double fd = (lp - lm) / (2 * eps), ad = px_tensor_get_f64(o[1], j);
        zeros += ad == 0;
        worst = fmax(worst, fabs(ad - fd));
        cr_expect(fabs(ad - fd) <= 1e-7 + 1e-6 * fabs(fd), "d loss / d x[%lld]: %.12g vs fd %.12g",
                  (long long)j, ad, fd);
    }
    /* 120 elements, ratio 0.3: some dropped, most kept */
    cr_expect(zeros > 10 && zeros < 60, "%d of 120 gradients are zero", zeros);
    fprintf(stderr, "dropout gradcheck: max |autodiff - fd| %.2e, %d of 120 dropped\n", worst,
            zeros);
    tg_free_outs(t, o);
    px_plan_free(&plan);
    px_grads_free(&gr);
    tg_free(t);
}

/* Forward and backward of one float32 Dropout: y = x*mask/(1-r), dX =
 * R*mask/(1-r) exactly, the kept fraction near 1 - r. Returns the mask. */
static uint8_t *run_once(double ratio, const char *name, uint64_t seed, int64_t step) {
    px_train.dropout_seed = seed;
    px_train.t = step;
    enum { N = 20000 };
    tg *t = tg_new();
    px_value *x = param(t, PX_F32, "x", 2, (int64_t[]){N / 100, 100});
    px_node *n = dropout(t, name, x, ratio, 1);
    px_value *y = n->outputs[0], *mask = n->outputs[1];
    px_value *r;
    px_graph_add_output(t->g, weighted_sum(t, y, &r));
    px_graph_add_output(t->g, y);
    px_graph_add_output(t->g, mask);
    px_grads gr;
    px_plan plan;
    differentiate(t, &gr, &plan, 1);
    px_tensor **o;
    tg_run_loss(t, &plan, &o);
    uint8_t *m = malloc(N);
    const float *xv = x->data->data, *rv = r->data->data, *yv = o[1]->data, *dx = o[3]->data;
    cr_assert_eq(o[2]->dtype, PX_BOOL);
    memcpy(m, o[2]->data, N);
    float scale = (float)(1.0 / (1.0 - (float)ratio));
    int kept = 0;
    for (int i = 0; i < N; i++) {
        kept += m[i];
        cr_assert_eq(yv[i], m[i] ? xv[i] * scale : 0.0f, "y[%d]", i);
        cr_assert_eq(dx[i], m[i] ? rv[i] * scale : 0.0f, "dx[%d]", i);
    }
    /* binomial: 5 standard deviations */
    double want = (1 - ratio) * N, sd = sqrt(N * ratio * (1 - ratio));
    cr_expect(fabs(kept - want) <= 5 * sd + 1, "kept %d of %d, expected about %.0f", kept, N, want);
    tg_free_outs(t, o);
    px_plan_free(&plan);
    px_grads_free(&gr);
    tg_free(t);
    return m;
}

static double differ(const uint8_t *a, const uint8_t *b) {
    int c = 0;
    for (int i = 0; i < 20000; i++) c += a[i] != b[i];
    return c / 20000.0;
}

Test(autodiff_dropout, mask_is_a_function_of_seed_step_and_node) {
    uint8_t *a = run_once(0.3, "drop", 5, 3), *same = run_once(0.3, "drop", 5, 3);
    uint8_t *next = run_once(0.3, "drop", 5, 4), *seed = run_once(0.3, "drop", 6, 3);
    uint8_t *node = run_once(0.3, "other", 5, 3);
    cr_expect_eq(differ(a, same), 0.0, "the same step drew another mask");
    /* independent masks differ in 2 r (1 - r) = 42% of the elements */
    cr_expect(fabs(differ(a, next) - 0.42) < 0.03, "step: %.3f differ", differ(a, next));
    cr_expect(fabs(differ(a, seed) - 0.42) < 0.03, "seed: %.3f differ", differ(a, seed));
    cr_expect(fabs(differ(a, node) - 0.42) < 0.03, "node: %.3f differ", differ(a, node));
    free(a);
    free(same);
    free(next);
    free(seed);
    free(node);
    free(run_once(0.9, "drop", 5, 3)); /* a large ratio keeps about 10% */
}

/* ratio 0 in training mode and inference Dropout are the identity. */
Test(autodiff_dropout, identity_forms) {
    for (int form = 0; form < 2; form++) {
        tg *t = tg_new();
        px_value *x = param(t, PX_F64, "x", 2, (int64_t[]){3, 4});
        px_node *n = form ? dropout(t, "drop", x, 0.5, 0) : dropout(t, "drop", x, 0.0, 1);
        px_value *r;
        px_graph_add_output(t->g, weighted_sum(t, n->outputs[0], &r));
        px_grads gr;
        px_plan plan;
        differentiate(t, &gr, &plan, 1);
        cr_assert_eq(count_op(t->g, PX_OP_DropoutTrain), 0);
        px_tensor **o;
        tg_run_loss(t, &plan, &o);
        for (int j = 0; j < 12; j++)
            cr_expect_eq(px_tensor_get_f64(o[1], j), px_tensor_get_f64(r->data, j));
        tg_free_outs(t, o);
        px_plan_free(&plan);
        px_grads_free(&gr);
        tg_free(t);
    }
}

/* Opset 6: training mode is is_test = 0 and the ratio an attribute; the
 * mask has the data's type. */
Test(autodiff_dropout, opset6_is_test) {
    px_train.dropout_seed = 99;
    px_train.t = 1;
    tg *t = tg_new();
    px_graph_set_opset(t->g, "", 6);
    px_value *x = param(t, PX_F64, "x", 2, (int64_t[]){10, 10});
    px_value *outs[2];
    px_shape u = px_shape_unknown();
    for (int i = 0; i < 2; i++) outs[i] = px_graph_new_value(t->g, "d", PX_UNDEFINED, &u);
    px_node *n = px_graph_add_node(t->g, "Dropout", "", "d6", 1, &x, 2, outs);
    px_node_set_attr_float(n, "ratio", 0.25f);
    cr_assert_eq(px_infer_node(t->g, n, &t->d), 0, "%s", t->d.text);
    px_graph_add_output(t->g, weighted_sum(t, outs[0], NULL));
    px_graph_add_output(t->g, outs[1]);
    px_grads gr;
    px_plan plan;
    differentiate(t, &gr, &plan, 1);
    cr_assert_eq(count_op(t->g, PX_OP_DropoutTrain), 1);
    px_tensor **o;
    tg_run_loss(t, &plan, &o);
    cr_assert_eq(o[1]->dtype, PX_F64);
    int kept = 0;
    for (int j = 0; j < 100; j++) {
        double m = px_tensor_get_f64(o[1], j), g = px_tensor_get_f64(o[2], j);
        cr_assert(m == 0 || m == 1);
        kept += m == 1;
        if (m == 0) cr_expect_eq(g, 0.0);
    }
    cr_expect(kept > 55 && kept < 95, "kept %d of 100 at ratio 0.25", kept);
    tg_free_outs(t, o);
    px_plan_free(&plan);
    px_grads_free(&gr);
    tg_free(t);
}

/* training_mode as a run-time input cannot be compiled. */
Test(autodiff_dropout, refuses_runtime_training_mode) {
    tg *t = tg_new();
    px_value *x = param(t, PX_F64, "x", 1, (int64_t[]){4});
    px_shape sc = px_shape_scalar();
    px_value *tm = px_graph_add_value(t->g, "train_flag", PX_BOOL, &sc, &t->d);
    px_graph_add_input(t->g, tm);
    px_value *in[3] = {x, scalar_const(t, PX_F64, 0.5), tm};
    px_node *n = tg_node(t, "Dropout", 3, in, 1);
    px_graph_add_output(t->g, weighted_sum(t, tg_out(t, n), NULL));
    px_grads gr;
    cr_assert_eq(px_pass_autodiff(t->g, NULL, &gr, &t->d), -1);
    cr_assert(strstr(t->d.text, "train_flag") && strstr(t->d.text, "run time"), "%s", t->d.text);
    tg_free(t);
}
