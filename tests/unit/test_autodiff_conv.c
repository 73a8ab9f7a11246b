/* Gradient rules of Conv and the pools (passes/grad_conv.c): for each rule
 * a tiny graph whose loss is sum(R * op(...)) with a random constant R,
 * differentiated by the autodiff pass, lowered and run in-process; every
 * gradient coordinate is compared with a central finite difference of the
 * loss. float64 throughout except the float32 cases: Conv and AveragePool
 * are linear in each input, so a large eps keeps float32 differences exact
 * up to rounding. Also: MaxPool ties go to the first maximum, and the CNN
 * example (Conv, Relu, MaxPool, Flatten, Gemm, SoftmaxCrossEntropyLoss)
 * differentiates after folding with --batch 2. Helpers copied from
 * test_autodiff.c. */
#include "autodiff.h"
#include "gradcheck.h"
#include "interp.h"
#include "onnx_io.h"
#include "passes.h"
#include "plan.h"
#include "shape_infer.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- graph building ---------- */

/* A trainable float64 initializer with values in [lo, hi). */
static px_dtype param_dtype = PX_F64; /* set by the float32 tests */
static px_value *param(tg *t, const char *name, int rank, const int64_t *dims, double lo,
                       double hi) {
    px_shape s = px_shape_make(rank, dims);
    px_value *v = px_graph_add_value(t->g, name, param_dtype, &s, &t->d);
    cr_assert_not_null(v);
    px_graph_add_initializer(t->g, v, tg_rand_tensor(param_dtype, rank, dims, lo, hi));
    return v;
}

/* loss = sum(R * y) with R random, made the first graph output. */
static void set_loss(tg *t, px_value *y) {
    if (y->shape.rank != 0) {
        px_value *r = px_graph_add_constant(
            t->g, "R", tg_rand_tensor(y->dtype, y->shape.rank, y->shape.dims, -1, 1));
        px_value *m = tg_op2(t, "Mul", y, r);
        px_node *s = tg_node(t, "ReduceSum", 1, &m, 1);
        px_node_set_attr_int(s, "keepdims", 0);
        y = tg_out(t, s);
    }
    px_graph_add_output(t->g, y);
}

/* ---------- running and checking ---------- */

/* Differentiates t's graph, checks that n_expect variables (all dense) got
 * a gradient and compares up to max_coords coordinates of each with central
 * finite differences. n_expect < 0: every float initializer. */
#define CHECK(t, n) tg_check_grads(t, n, 0, 300, 1e-6, 1e-6, 1e-5)
/* float32: only for ops linear in the perturbed input (Conv, AveragePool) */
#define CHECK_F32(t, n) tg_check_grads(t, n, 0, 300, 0.25, 2e-3, 2e-3)

static void set_ints(px_node *n, const char *name, int count, const int64_t *v) {
    px_node_set_attr_ints(n, name, count, v);
}

/* ---------- Conv ---------- */

typedef struct conv_case {
    int s;                      /* spatial dims */
    int64_t x[5], w[5];         /* X and W shapes */
    int64_t group, bias;        /* bias: 1 adds B */
    int64_t strides[2], dil[2]; /* 0: attribute absent */
    int64_t pads[4];            /* used when has_pads */
    int has_pads;
    const char *auto_pad; /* NULL: absent */
} conv_case;

static void run_conv(const conv_case *c, int f32) {
    param_dtype = f32 ? PX_F32 : PX_F64;
    tg *t = tg_new();
    px_value *in[3] = {param(t, "x", 2 + c->s, c->x, -1, 1), param(t, "w", 2 + c->s, c->w, -1, 1),
                       NULL};
    if (c->bias) in[2] = param(t, "b", 1, c->w, -1, 1);
    px_node *n = tg_node(t, "Conv", c->bias ? 3 : 2, in, 1);
    if (c->group != 1) px_node_set_attr_int(n, "group", c->group);
    if (c->strides[0]) set_ints(n, "strides", c->s, c->strides);
    if (c->dil[0]) set_ints(n, "dilations", c->s, c->dil);
    if (c->has_pads) set_ints(n, "pads", 2 * c->s, c->pads);
    if (c->auto_pad) px_node_set_attr_string(n, "auto_pad", c->auto_pad);
    set_loss(t, tg_out(t, n));
    if (f32)
        CHECK_F32(t, c->bias ? 3 : 2);
    else
        CHECK(t, c->bias ? 3 : 2);
    tg_free(t);
    param_dtype = PX_F64;
}

Test(autodiff_conv, conv2d_pads_bias) {
    conv_case c = {.s = 2,
                   .x = {2, 3, 5, 5},
                   .w = {4, 3, 3, 3},
                   .group = 1,
                   .bias = 1,
                   .pads = {1, 1, 1, 1},
                   .has_pads = 1};
    run_conv(&c, 0);
}

/* group 2, stride 2, dilation 2 on one axis, asymmetric pads */
Test(autodiff_conv, conv2d_group_strides_dilations) {
    conv_case c = {.s = 2,
                   .x = {2, 4, 7, 6},
                   .w = {6, 2, 2, 3},
                   .group = 2,
                   .bias = 1,
                   .strides = {2, 1},
                   .dil = {2, 1},
                   .pads = {1, 0, 0, 2},
                   .has_pads = 1};
    run_conv(&c, 0);
}

/* depthwise: group = channels */
Test(autodiff_conv, conv2d_depthwise) {
    conv_case c = {.s = 2,
                   .x = {1, 3, 4, 4},
                   .w = {3, 1, 3, 3},
                   .group = 3,
                   .pads = {1, 1, 1, 1},
                   .has_pads = 1};
    run_conv(&c, 0);
}

/* Unit strides and out == in with dilations and lopsided pads: the
 * shifted-plane im2col / col2im (runtime/kernels/conv_shift.h), whose
 * shifts here reach past whole rows. */
Test(autodiff_conv, conv2d_same_size_dilated_lopsided_pads) {
    conv_case c = {.s = 2,
                   .x = {2, 2, 6, 5},
                   .w = {3, 2, 3, 2},
                   .group = 1,
                   .bias = 1,
                   .dil = {2, 3},
                   .pads = {1, 2, 3, 1},
                   .has_pads = 1};
    run_conv(&c, 0);
}

Test(autodiff_conv, conv1d_same_upper_stride) {
    conv_case c = {.s = 1,
                   .x = {2, 2, 7},
                   .w = {3, 2, 3},
                   .group = 1,
                   .bias = 1,
                   .strides = {2},
                   .auto_pad = "SAME_UPPER"};
    run_conv(&c, 0);
}

Test(autodiff_conv, conv1d_same_lower_dilation) {
    conv_case c = {
        .s = 1, .x = {1, 2, 8}, .w = {2, 2, 2}, .group = 1, .dil = {3}, .auto_pad = "SAME_LOWER"};
    run_conv(&c, 0);
}

Test(autodiff_conv, conv2d_float32) {
    conv_case c = {.s = 2,
                   .x = {2, 4, 6, 5},
                   .w = {4, 2, 3, 2},
                   .group = 2,
                   .bias = 1,
                   .strides = {1, 2},
                   .pads = {1, 0, 1, 1},
                   .has_pads = 1};
    run_conv(&c, 1);
}

/* Only W trained (X a constant): no ConvGradInput is built. */
Test(autodiff_conv, conv_weight_only) {
    tg *t = tg_new();
    px_value *x =
        px_graph_add_constant(t->g, "x", tg_rand_tensor(PX_F64, 4, (int64_t[]){2, 2, 4, 4}, -1, 1));
    px_value *in[2] = {x, param(t, "w", 4, (int64_t[]){3, 2, 2, 2}, -1, 1)};
    set_loss(t, tg_op1(t, "Tanh", tg_out(t, tg_node(t, "Conv", 2, in, 1))));
    CHECK(t, 1);
    for (int k = 0; k < t->g->n_nodes; k++) cr_assert_neq(t->g->nodes[k]->op, PX_OP_ConvGradInput);
    tg_free(t);
}

/* ---------- pools ---------- */

static px_value *pool(tg *t, const char *op, px_value *x, int s, const int64_t *k,
                      const int64_t *strides, const int64_t *pads, int64_t ceil_mode,
                      int64_t include_pad) {
    px_node *n = tg_node(t, op, 1, &x, 1);
    set_ints(n, "kernel_shape", s, k);
    if (strides) set_ints(n, "strides", s, strides);
    if (pads) set_ints(n, "pads", 2 * s, pads);
    if (ceil_mode) px_node_set_attr_int(n, "ceil_mode", 1);
    if (include_pad) px_node_set_attr_int(n, "count_include_pad", 1);
    return tg_out(t, n);
}

Test(autodiff_conv, maxpool2d_overlapping_pads) {
    tg *t = tg_new();
    px_value *x = param(t, "x", 4, (int64_t[]){2, 2, 5, 6}, -1, 1);
    set_loss(t, pool(t, "MaxPool", x, 2, (int64_t[]){3, 3}, (int64_t[]){2, 2},
                     (int64_t[]){1, 1, 1, 0}, 0, 0));
    CHECK(t, 1);
    tg_free(t);
}

Test(autodiff_conv, maxpool1d_dilation_ceil) {
    tg *t = tg_new();
    px_value *x = param(t, "x", 3, (int64_t[]){2, 3, 9}, -1, 1);
    px_node *n = tg_node(t, "MaxPool", 1, &x, 1);
    set_ints(n, "kernel_shape", 1, (int64_t[]){2});
    set_ints(n, "strides", 1, (int64_t[]){2});
    set_ints(n, "dilations", 1, (int64_t[]){2});
    px_node_set_attr_int(n, "ceil_mode", 1);
    set_loss(t, tg_out(t, n));
    CHECK(t, 1);
    tg_free(t);
}

/* Equal values in a window: the whole gradient goes to the first one in
 * scan order (ONNX / PyTorch), as the forward's Indices output reports. */
Test(autodiff_conv, maxpool_ties_first_max) {
    tg *t = tg_new();
    px_value *x = param(t, "x", 4, (int64_t[]){1, 1, 3, 4}, -1, 1);
    double vals[12] = {0.5, 0.9, 0.9, 0.1, 0.9, 0.2, 0.3, 0.3, 0.0, 0.9, 0.3, 0.3};
    for (int i = 0; i < 12; i++) px_tensor_set_f64(x->data, i, vals[i]);
    /* windows 2x2 stride 1 over 3x4: 2x3 outputs */
    px_value *y = pool(t, "MaxPool", x, 2, (int64_t[]){2, 2}, NULL, NULL, 0, 0);
    px_node *sum = tg_node(t, "ReduceSum", 1, &y, 1);
    px_node_set_attr_int(sum, "keepdims", 0);
    px_graph_add_output(t->g, tg_out(t, sum));
    px_grads gr;
    cr_assert_eq(px_pass_autodiff(t->g, NULL, &gr, &t->d), 0, "%s", t->d.text);
    cr_assert_eq(gr.n, 1);
    px_graph_add_output(t->g, gr.items[0].grad);
    px_plan plan;
    cr_assert_eq(px_plan_build(t->g, &plan, &t->d), 0, "%s", t->d.text);
    px_tensor **o;
    tg_run_loss(t, &plan, &o);
    /* x = [.5 .9 .9 .1; .9 .2 .3 .3; 0 .9 .3 .3]; the six windows' first
     * maxima are x[1], x[1], x[2], x[4], x[9] and x[6] (all four equal). */
    double want[12] = {0, 2, 1, 0, 1, 0, 1, 0, 0, 1, 0, 0};
    for (int i = 0; i < 12; i++)
        cr_expect_eq(px_tensor_get_f64(o[1], i), want[i], "dX[%d] = %g, expected %g", i,
                     px_tensor_get_f64(o[1], i), want[i]);
    tg_free_outs(t, o);
    px_plan_free(&plan);
    px_grads_free(&gr);
    tg_free(t);
}

static void avgpool_case(int64_t include_pad, int64_t ceil_mode, int f32) {
    param_dtype = f32 ? PX_F32 : PX_F64;
    tg *t = tg_new();
    px_value *x = param(t, "x", 4, (int64_t[]){2, 2, 5, 6}, -1, 1);
    set_loss(t, pool(t, "AveragePool", x, 2, (int64_t[]){3, 2}, (int64_t[]){2, 2},
                     (int64_t[]){1, 0, 1, 1}, ceil_mode, include_pad));
    if (f32)
        CHECK_F32(t, 1);
    else
        CHECK(t, 1);
    tg_free(t);
    param_dtype = PX_F64;
}

Test(autodiff_conv, avgpool_exclude_pad) {
    avgpool_case(0, 0, 0);
}
Test(autodiff_conv, avgpool_include_pad) {
    avgpool_case(1, 0, 0);
}
Test(autodiff_conv, avgpool_include_pad_ceil) {
    avgpool_case(1, 1, 0);
}
Test(autodiff_conv, avgpool_exclude_pad_ceil_float32) {
    avgpool_case(0, 1, 1);
}

Test(autodiff_conv, avgpool1d) {
    tg *t = tg_new();
    px_value *x = param(t, "x", 3, (int64_t[]){2, 3, 7}, -1, 1);
    set_loss(t, tg_op1(t, "Tanh",
                       pool(t, "AveragePool", x, 1, (int64_t[]){3}, (int64_t[]){1},
                            (int64_t[]){2, 1}, 0, 0)));
    CHECK(t, 1);
    tg_free(t);
}

Test(autodiff_conv, global_average_pool) {
    tg *t = tg_new();
    px_value *x = param(t, "x", 4, (int64_t[]){2, 3, 4, 5}, -1, 1);
    set_loss(t, tg_op1(t, "Tanh", tg_op1(t, "GlobalAveragePool", x)));
    CHECK(t, 1);
    tg_free(t);
}

Test(autodiff_conv, global_max_pool) {
    tg *t = tg_new();
    px_value *x = param(t, "x", 3, (int64_t[]){2, 3, 6}, -1, 1);
    set_loss(t, tg_op1(t, "Tanh", tg_op1(t, "GlobalMaxPool", x)));
    CHECK(t, 1);
    tg_free(t);
}

/* Conv -> Relu -> MaxPool -> Conv -> GlobalAveragePool chain */
Test(autodiff_conv, conv_relu_pool_chain) {
    tg *t = tg_new();
    px_value *in[3] = {param(t, "x", 4, (int64_t[]){2, 2, 6, 6}, -1, 1),
                       param(t, "w1", 4, (int64_t[]){3, 2, 3, 3}, -1, 1),
                       param(t, "b1", 1, (int64_t[]){3}, -1, 1)};
    px_node *c1 = tg_node(t, "Conv", 3, in, 1);
    set_ints(c1, "pads", 4, (int64_t[]){1, 1, 1, 1});
    px_value *p = pool(t, "MaxPool", tg_op1(t, "Relu", tg_out(t, c1)), 2, (int64_t[]){2, 2},
                       (int64_t[]){2, 2}, NULL, 0, 0);
    px_value *in2[2] = {p, param(t, "w2", 4, (int64_t[]){2, 3, 2, 2}, -1, 1)};
    set_loss(t, tg_op1(t, "GlobalAveragePool", tg_out(t, tg_node(t, "Conv", 2, in2, 1))));
    CHECK(t, 4);
    tg_free(t);
}

/* ---------- the CNN example ---------- */

/* Folded at --batch 2, promoted to float64: every initializer gets a
 * gradient matching finite differences at sampled coordinates. */
Test(autodiff_conv, example_cnn) {
    tg *t = tg_load_example("cnn", 2);
    tg_check_grads(t, -1, 0, 6, 1e-6, 1e-7, 1e-5);
    tg_free(t);
}

/* ---------- Max, Min, Clip ---------- */

static void select_case(const char *op) {
    tg *t = tg_new();
    px_value *in[3] = {param(t, "a", 2, (int64_t[]){3, 4}, -1, 1),
                       param(t, "b", 1, (int64_t[]){4}, -1, 1),
                       param(t, "c", 2, (int64_t[]){3, 1}, -1, 1)};
    set_loss(t, tg_op1(t, "Tanh", tg_out(t, tg_node(t, op, 3, in, 1))));
    CHECK(t, 3);
    tg_free(t);
}

Test(autodiff_conv, max_variadic_broadcast) {
    select_case("Max");
}
Test(autodiff_conv, min_variadic_broadcast) {
    select_case("Min");
}

/* Max(a, a'): equal inputs split the gradient evenly (torch.maximum). */
Test(autodiff_conv, max_ties_split) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 1, (int64_t[]){3}, -1, 1);
    px_value *b = param(t, "b", 1, (int64_t[]){3}, -1, 1);
    for (int i = 0; i < 3; i++)
        px_tensor_set_f64(b->data, i, i == 1 ? -5.0 : px_tensor_get_f64(a->data, i));
    px_value *m = tg_op2(t, "Max", a, b);
    px_node *s = tg_node(t, "ReduceSum", 1, &m, 1);
    px_node_set_attr_int(s, "keepdims", 0);
    px_graph_add_output(t->g, tg_out(t, s));
    px_grads gr;
    cr_assert_eq(px_pass_autodiff(t->g, NULL, &gr, &t->d), 0, "%s", t->d.text);
    cr_assert_eq(gr.n, 2);
    px_graph_add_output(t->g, gr.items[0].grad);
    px_graph_add_output(t->g, gr.items[1].grad);
    px_plan plan;
    cr_assert_eq(px_plan_build(t->g, &plan, &t->d), 0, "%s", t->d.text);
    px_tensor **o;
    tg_run_loss(t, &plan, &o);
    double wa[3] = {0.5, 1, 0.5}, wb[3] = {0.5, 0, 0.5};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(px_tensor_get_f64(o[1], i), wa[i], "da[%d] = %g", i,
                     px_tensor_get_f64(o[1], i));
        cr_expect_eq(px_tensor_get_f64(o[2], i), wb[i], "db[%d] = %g", i,
                     px_tensor_get_f64(o[2], i));
    }
    tg_free_outs(t, o);
    px_plan_free(&plan);
    px_grads_free(&gr);
    tg_free(t);
}

/* bounds as inputs (opset 11+), one of them absent */
Test(autodiff_conv, clip_inputs) {
    tg *t = tg_new();
    px_value *x = param(t, "x", 2, (int64_t[]){4, 5}, -2, 2);
    px_shape sc = px_shape_scalar();
    px_tensor *lo = px_tensor_new(PX_F64, &sc, &t->d), *hi = px_tensor_new(PX_F64, &sc, &t->d);
    px_tensor_set_f64(lo, 0, -0.7);
    px_tensor_set_f64(hi, 0, 0.9);
    px_value *in[3] = {x, px_graph_add_constant(t->g, "lo", lo),
                       px_graph_add_constant(t->g, "hi", hi)};
    px_value *a = tg_out(t, tg_node(t, "Clip", 3, in, 1));
    px_value *in2[2] = {x, in[1]};
    px_value *b = tg_out(t, tg_node(t, "Clip", 2, in2, 1));
    set_loss(t, tg_op2(t, "Add", tg_op1(t, "Exp", a), b));
    CHECK(t, 1);
    tg_free(t);
}

/* bounds as attributes (opset 6) */
Test(autodiff_conv, clip_attributes) {
    tg *t = tg_new();
    px_graph_set_opset(t->g, "", 6);
    px_value *x = param(t, "x", 2, (int64_t[]){4, 5}, -2, 2);
    px_node *n = tg_node(t, "Clip", 1, &x, 1);
    px_node_set_attr_float(n, "min", -0.5f);
    px_node_set_attr_float(n, "max", 1.25f);
    set_loss(t, tg_out(t, n));
    CHECK(t, 1);
    tg_free(t);
}

/* ---------- BatchNormalization ---------- */

static void batchnorm_case(int training, int rank) {
    tg *t = tg_new();
    int64_t xs[4] = {3, 2, 4, 3}, c = 2;
    px_value *in[5] = {param(t, "x", rank, xs, -2, 2), param(t, "scale", 1, &c, 0.5, 1.5),
                       param(t, "bias", 1, &c, -1, 1), param(t, "mean", 1, &c, -0.5, 0.5),
                       param(t, "var", 1, &c, 0.5, 1.5)};
    px_node *n = tg_node(t, "BatchNormalization", 5, in, 1);
    px_node_set_attr_float(n, "epsilon", 1e-3f);
    if (training) px_node_set_attr_int(n, "training_mode", 1);
    set_loss(t, tg_op1(t, "Tanh", tg_out(t, n)));
    /* the running statistics get no gradient */
    CHECK(t, 3);
    tg_free(t);
}

Test(autodiff_conv, batchnorm_training) {
    batchnorm_case(1, 4);
}
Test(autodiff_conv, batchnorm_training_rank3) {
    batchnorm_case(1, 3);
}
Test(autodiff_conv, batchnorm_inference) {
    batchnorm_case(0, 4);
}

/* float32 MaxPool: piecewise linear, so a small eps (no maximum changes) */
Test(autodiff_conv, maxpool_float32) {
    param_dtype = PX_F32;
    tg *t = tg_new();
    px_value *x = param(t, "x", 4, (int64_t[]){2, 2, 5, 6}, -1, 1);
    px_value *y = pool(t, "MaxPool", x, 2, (int64_t[]){2, 3}, (int64_t[]){2, 2},
                       (int64_t[]){0, 1, 1, 1}, 1, 0);
    set_loss(t, tg_op2(t, "Add", y, tg_op1(t, "GlobalMaxPool", x)));
    tg_check_grads(t, 1, 0, 300, 1e-3, 2e-3, 2e-3);
    tg_free(t);
    param_dtype = PX_F64;
}
