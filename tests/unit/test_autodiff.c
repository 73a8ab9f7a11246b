/* Autodiff (passes/autodiff.c, grad_*.c): for each gradient rule a tiny
 * float64 graph whose loss is sum(R * op(...)) with a random constant R,
 * differentiated by the pass, lowered and run in-process; every gradient
 * coordinate is compared with a central finite difference of the loss
 * (eps 1e-6). Row sets (sparse variables) are densified here and compared
 * the same way. The example models run the same check after folding with
 * --batch 4, promoted to float64 for tight differences. */
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

static px_tensor *rand_tensor(int rank, const int64_t *dims, double lo, double hi) {
    px_shape s = px_shape_make(rank, dims);
    px_diag d;
    px_diag_init(&d);
    px_tensor *x = px_tensor_new(PX_F64, &s, &d);
    for (int64_t i = 0; i < px_tensor_numel(x); i++)
        px_tensor_set_f64(x, i, lo + (hi - lo) * tg_urand());
    return x;
}

/* A trainable float64 initializer with values in [lo, hi). */
static px_value *param(tg *t, const char *name, int rank, const int64_t *dims, double lo,
                       double hi) {
    px_shape s = px_shape_make(rank, dims);
    px_value *v = px_graph_add_value(t->g, name, PX_F64, &s, &t->d);
    cr_assert_not_null(v);
    px_graph_add_initializer(t->g, v, rand_tensor(rank, dims, lo, hi));
    return v;
}

static px_value *cints(tg *t, int n, const int64_t *v) {
    int64_t dim = n;
    px_shape s = px_shape_make(1, &dim);
    px_tensor *x = px_tensor_new(PX_I64, &s, &t->d);
    for (int i = 0; i < n; i++) px_tensor_set_i64(x, i, v[i]);
    return px_graph_add_constant(t->g, "c", x);
}

static px_value *cscalar(tg *t, double v) {
    px_shape s = px_shape_scalar();
    px_tensor *x = px_tensor_new(PX_F64, &s, &t->d);
    px_tensor_set_f64(x, 0, v);
    return px_graph_add_constant(t->g, "c", x);
}

/* A runtime int64 input holding vals. */
static px_value *index_input(tg *t, const char *name, int rank, const int64_t *dims,
                             const int64_t *vals) {
    px_shape s = px_shape_make(rank, dims);
    px_value *v = px_graph_add_value(t->g, name, PX_I64, &s, &t->d);
    px_graph_add_input(t->g, v);
    px_tensor *x = px_tensor_new(PX_I64, &s, &t->d);
    for (int64_t i = 0; i < px_tensor_numel(x); i++) px_tensor_set_i64(x, i, vals[i]);
    t->in[t->g->n_inputs - 1] = x;
    return v;
}

/* loss = sum(R * y) with R random, made the first graph output. */
static void set_loss(tg *t, px_value *y) {
    if (y->shape.rank != 0) {
        px_value *r =
            px_graph_add_constant(t->g, "R", rand_tensor(y->shape.rank, y->shape.dims, -1, 1));
        px_value *m = tg_op2(t, "Mul", y, r);
        px_node *s = tg_node(t, "ReduceSum", 1, &m, 1);
        px_node_set_attr_int(s, "keepdims", 0);
        y = tg_out(t, s);
    }
    px_graph_add_output(t->g, y);
}

/* ---------- running and checking ---------- */

#define CHECK(t, n, ns) tg_check_grads(t, n, ns, 200, 1e-6, 1e-6, 1e-5)

/* ---------- elementwise ---------- */

/* y = op(a, b) with b broadcast along dim 0 ([3,4] with [4]). */
static void binary_case(const char *op, double lo, double hi) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 2, (int64_t[]){3, 4}, lo, hi);
    px_value *b = param(t, "b", 1, (int64_t[]){4}, lo, hi);
    set_loss(t, tg_op2(t, op, a, b));
    CHECK(t, 2, 0);
    tg_free(t);
}

Test(autodiff, add_broadcast) {
    binary_case("Add", -1, 1);
}
Test(autodiff, sub_broadcast) {
    binary_case("Sub", -1, 1);
}
Test(autodiff, mul_broadcast) {
    binary_case("Mul", -1, 1);
}
Test(autodiff, div_broadcast) {
    binary_case("Div", 0.5, 2);
}

/* keepdims-style broadcast: [3,1] against [1,4] */
Test(autodiff, mul_broadcast_both_sides) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 2, (int64_t[]){3, 1}, -1, 1);
    px_value *b = param(t, "b", 2, (int64_t[]){1, 4}, -1, 1);
    set_loss(t, tg_op2(t, "Mul", a, b));
    CHECK(t, 2, 0);
    tg_free(t);
}

static void unary_case(const char *op, double lo, double hi) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 2, (int64_t[]){2, 5}, lo, hi);
    set_loss(t, tg_op1(t, op, a));
    CHECK(t, 1, 0);
    tg_free(t);
}

Test(autodiff, neg) {
    unary_case("Neg", -1, 1);
}
Test(autodiff, abs) {
    unary_case("Abs", -1, 1);
}
Test(autodiff, exp) {
    unary_case("Exp", -1, 1);
}
Test(autodiff, log) {
    unary_case("Log", 0.5, 2);
}
Test(autodiff, sqrt) {
    unary_case("Sqrt", 0.5, 2);
}
Test(autodiff, relu) {
    unary_case("Relu", -1, 1);
}
Test(autodiff, sigmoid) {
    unary_case("Sigmoid", -2, 2);
}
Test(autodiff, tanh) {
    unary_case("Tanh", -2, 2);
}
Test(autodiff, identity) {
    unary_case("Identity", -1, 1);
}

Test(autodiff, pow_constant_exponent) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 2, (int64_t[]){2, 3}, 0.5, 2);
    set_loss(t, tg_op2(t, "Pow", a, cscalar(t, 2.5)));
    CHECK(t, 1, 0);
    tg_free(t);
}

/* A value used three times: the gradients must be summed. */
Test(autodiff, several_uses_summed) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 1, (int64_t[]){6}, -1, 1);
    px_value *y = tg_op2(t, "Mul", tg_op2(t, "Mul", a, a), tg_op1(t, "Tanh", a));
    set_loss(t, y);
    CHECK(t, 1, 0);
    tg_free(t);
}

/* ---------- matrix products ---------- */

Test(autodiff, matmul_2d) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 2, (int64_t[]){3, 4}, -1, 1);
    px_value *b = param(t, "b", 2, (int64_t[]){4, 5}, -1, 1);
    set_loss(t, tg_op2(t, "MatMul", a, b));
    CHECK(t, 2, 0);
    tg_free(t);
}

/* batched A [2,3,4] against a shared B [4,5]: dB sums over the batch. */
Test(autodiff, matmul_batched_broadcast) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 3, (int64_t[]){2, 3, 4}, -1, 1);
    px_value *b = param(t, "b", 2, (int64_t[]){4, 5}, -1, 1);
    set_loss(t, tg_op2(t, "MatMul", a, b));
    CHECK(t, 2, 0);
    tg_free(t);
}

/* Differentiates t's loss, makes every gradient an output and plans the
 * graph: the calls the tests below inspect. */
static void plan_with_gradients(tg *t, px_grads *gr, px_plan *plan) {
    cr_assert_eq(px_pass_autodiff(t->g, NULL, gr, &t->d), 0, "%s", t->d.text);
    for (int i = 0; i < gr->n; i++) px_graph_add_output(t->g, gr->items[i].grad);
    cr_assert_eq(px_plan_build(t->g, plan, &t->d), 0, "%s", t->d.text);
}

/* The same product's plan: dA = dY @ B^T reads B through BLAS's transpose
 * flag and dB = sum over the batch of A_b^T dY_b is one GEMM over the batch
 * rows, so no Transpose, batched MatMul or batch ReduceSum call is left
 * (compiler/codegen/lower_matmul_fold.c). The values are the finite-
 * difference check of matmul_batched_broadcast. */
Test(autodiff, matmul_batched_gradients_fold_into_gemm) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 3, (int64_t[]){2, 3, 4}, -1, 1);
    px_value *b = param(t, "b", 2, (int64_t[]){4, 5}, -1, 1);
    set_loss(t, tg_op2(t, "MatMul", a, b));
    px_grads gr;
    px_plan plan;
    plan_with_gradients(t, &gr, &plan);
    int gemms = 0, sums = 0, matmuls = 0;
    for (int c = 0; c < plan.n_calls; c++) {
        const char *k = plan.calls[c].kernel;
        cr_expect(strcmp(k, "px_k_transpose"), "call %d is a transpose (node %s)", c,
                  plan.calls[c].node->name);
        gemms += !strcmp(k, "px_k_gemm");
        sums += !strcmp(k, "px_k_reduce_sum");
        matmuls += !strcmp(k, "px_k_matmul");
    }
    cr_expect_eq(gemms, 2, "%d GEMMs, expected dA and dB", gemms);
    cr_expect_eq(sums, 1, "%d ReduceSum calls, expected only the loss's", sums);
    cr_expect_eq(matmuls, 1, "%d MatMul calls, expected only the forward product", matmuls);
    px_plan_free(&plan);
    px_grads_free(&gr);
    tg_free(t);
}

/* Two stacks, a [2,3,4] @ Transpose(b [2,5,4]) (the sampled softmax's
 * logits): finite differences, then the plan. The forward reads b through
 * the transpose flag, dA reads b through both transposes and dB =
 * Transpose(a^T dY) is computed as dY^T a: one px_k_gemm_batched each, no
 * Transpose or MatMul call. */
static void stacks_graph(tg *t) {
    px_value *a = param(t, "a", 3, (int64_t[]){2, 3, 4}, -1, 1);
    px_value *b = param(t, "b", 3, (int64_t[]){2, 5, 4}, -1, 1);
    px_node *tr = tg_node(t, "Transpose", 1, &b, 1);
    px_node_set_attr_ints(tr, "perm", 3, (int64_t[]){0, 2, 1});
    set_loss(t, tg_op2(t, "MatMul", a, tg_out(t, tr)));
}

Test(autodiff, matmul_stacks_transposed_operand) {
    tg *t = tg_new();
    stacks_graph(t);
    CHECK(t, 2, 0);
    tg_free(t);
}

Test(autodiff, matmul_stacks_transposes_fold_into_batched_gemm) {
    tg *t = tg_new();
    stacks_graph(t);
    px_grads gr;
    px_plan plan;
    plan_with_gradients(t, &gr, &plan);
    int batched = 0;
    for (int c = 0; c < plan.n_calls; c++) {
        const char *k = plan.calls[c].kernel;
        cr_expect(strcmp(k, "px_k_transpose") && strcmp(k, "px_k_matmul"),
                  "call %d is %s (node %s)", c, k, plan.calls[c].node->name);
        batched += !strcmp(k, "px_k_gemm_batched");
    }
    cr_expect_eq(batched, 3, "%d batched GEMMs, expected the forward, dA and dB", batched);
    px_plan_free(&plan);
    px_grads_free(&gr);
    tg_free(t);
}

/* A batched Linear layer, tanh(x @ W^T + b) with x [2,3,4], W [5,4] (as
 * PyTorch exports it: a Transpose of W), b [5]. */
static const px_node *linear_graph(tg *t) {
    px_value *x = param(t, "x", 3, (int64_t[]){2, 3, 4}, -1, 1);
    px_value *w = param(t, "w", 2, (int64_t[]){5, 4}, -1, 1);
    px_value *b = param(t, "b", 1, (int64_t[]){5}, -1, 1);
    px_node *tr = tg_node(t, "Transpose", 1, &w, 1);
    px_node_set_attr_ints(tr, "perm", 2, (int64_t[]){1, 0});
    px_value *y = tg_op2(t, "Add", b, tg_op2(t, "MatMul", x, tg_out(t, tr)));
    set_loss(t, tg_op1(t, "Tanh", y));
    return y->producer;
}

Test(autodiff, linear_bias_transpose) {
    tg *t = tg_new();
    linear_graph(t);
    CHECK(t, 3, 0);
    tg_free(t);
}

/* The same layer's plan: the forward product is one GEMM that reads W
 * through the transpose flag and starts from the bias rows, and dx reads W
 * through both transposes (no MatMul call, the Add is a GEMM); the one
 * Transpose left is the gradient of W's Transpose (a copy of dW^T). Its
 * values are checked by linear_bias_transpose. */
Test(autodiff, linear_bias_transpose_folds_into_gemm) {
    tg *t = tg_new();
    const px_node *add = linear_graph(t);
    px_grads gr;
    px_plan plan;
    plan_with_gradients(t, &gr, &plan);
    int gemms = 0, add_calls = 0, transposes = 0;
    for (int c = 0; c < plan.n_calls; c++) {
        const char *k = plan.calls[c].kernel;
        add_calls += plan.calls[c].node == add;
        transposes += !strcmp(k, "px_k_transpose");
        cr_expect(strcmp(k, "px_k_matmul"), "call %d is %s (node %s)", c, k,
                  plan.calls[c].node->name);
        gemms += !strcmp(k, "px_k_gemm");
        if (plan.calls[c].node == add) cr_expect_str_eq(k, "px_k_gemm");
    }
    cr_expect_eq(add_calls, 1, "the Add node has %d calls", add_calls);
    cr_expect_eq(transposes, 1, "%d transposes, expected only dW's", transposes);
    cr_expect_geq(gemms, 3, "%d GEMMs, expected the forward, dx and dW", gemms);
    px_plan_free(&plan);
    px_grads_free(&gr);
    tg_free(t);
}

static void gemm_case(int ta, int tb, double alpha, double beta, int c_rank) {
    tg *t = tg_new();
    int64_t M = 3, K = 4, N = 2;
    px_value *a = param(t, "a", 2, ta ? (int64_t[]){K, M} : (int64_t[]){M, K}, -1, 1);
    px_value *b = param(t, "b", 2, tb ? (int64_t[]){N, K} : (int64_t[]){K, N}, -1, 1);
    px_value *c = c_rank == 2 ? param(t, "c", 2, (int64_t[]){M, N}, -1, 1)
                              : param(t, "c", 1, (int64_t[]){N}, -1, 1);
    px_value *in[3] = {a, b, c};
    px_node *n = tg_node(t, "Gemm", 3, in, 1);
    px_node_set_attr_int(n, "transA", ta);
    px_node_set_attr_int(n, "transB", tb);
    px_node_set_attr_float(n, "alpha", (float)alpha);
    px_node_set_attr_float(n, "beta", (float)beta);
    set_loss(t, tg_out(t, n));
    CHECK(t, 3, 0);
    tg_free(t);
}

Test(autodiff, gemm_plain) {
    gemm_case(0, 0, 1.0, 1.0, 2);
}
Test(autodiff, gemm_transA) {
    gemm_case(1, 0, 0.5, 2.0, 1);
}
Test(autodiff, gemm_transB) {
    gemm_case(0, 1, 1.5, 0.25, 1);
}
Test(autodiff, gemm_both) {
    gemm_case(1, 1, -1.0, 1.0, 2);
}

/* ---------- reductions ---------- */

static void reduce_case(const char *op, int n_axes, const int64_t *axes, int keepdims) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 3, (int64_t[]){2, 3, 4}, -1, 1);
    px_value *in[2] = {a, n_axes ? cints(t, n_axes, axes) : NULL};
    px_node *n;
    if (!strcmp(op, "ReduceMean")) { /* axes an attribute until opset 18 */
        n = tg_node(t, op, 1, in, 1);
        if (n_axes) px_node_set_attr_ints(n, "axes", n_axes, axes);
    } else
        n = tg_node(t, op, n_axes ? 2 : 1, in, 1);
    px_node_set_attr_int(n, "keepdims", keepdims);
    set_loss(t, tg_out(t, n));
    CHECK(t, 1, 0);
    tg_free(t);
}

Test(autodiff, reduce_sum_axes_keepdims) {
    reduce_case("ReduceSum", 2, (int64_t[]){0, 2}, 1);
}
Test(autodiff, reduce_sum_axis_nokeep) {
    reduce_case("ReduceSum", 1, (int64_t[]){-2}, 0);
}
Test(autodiff, reduce_sum_all) {
    reduce_case("ReduceSum", 0, NULL, 0);
}
Test(autodiff, reduce_mean_axes) {
    reduce_case("ReduceMean", 1, (int64_t[]){1}, 0);
}
Test(autodiff, reduce_mean_all_keepdims) {
    reduce_case("ReduceMean", 0, NULL, 1);
}

/* ---------- shape ops ---------- */

Test(autodiff, reshape_transpose) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 2, (int64_t[]){4, 6}, -1, 1);
    px_value *r = tg_op2(t, "Reshape", a, cints(t, 3, (int64_t[]){2, 3, 4}));
    px_node *n = tg_node(t, "Transpose", 1, &r, 1);
    px_node_set_attr_ints(n, "perm", 3, (int64_t[]){2, 0, 1});
    set_loss(t, tg_op1(t, "Tanh", tg_out(t, n)));
    CHECK(t, 1, 0);
    tg_free(t);
}

Test(autodiff, squeeze_unsqueeze_flatten) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 3, (int64_t[]){2, 1, 3}, -1, 1);
    px_value *s = tg_op2(t, "Squeeze", a, cints(t, 1, (int64_t[]){1}));
    px_value *u = tg_op2(t, "Unsqueeze", s, cints(t, 1, (int64_t[]){0}));
    px_node *f = tg_node(t, "Flatten", 1, &u, 1);
    px_node_set_attr_int(f, "axis", 2);
    set_loss(t, tg_op1(t, "Sigmoid", tg_out(t, f)));
    CHECK(t, 1, 0);
    tg_free(t);
}

Test(autodiff, concat) {
    tg *t = tg_new();
    px_value *in[3] = {param(t, "a", 2, (int64_t[]){2, 3}, -1, 1),
                       param(t, "b", 2, (int64_t[]){2, 1}, -1, 1),
                       param(t, "c", 2, (int64_t[]){2, 2}, -1, 1)};
    px_node *n = tg_node(t, "Concat", 3, in, 1);
    px_node_set_attr_int(n, "axis", -1);
    set_loss(t, tg_op1(t, "Tanh", tg_out(t, n)));
    CHECK(t, 3, 0);
    tg_free(t);
}

Test(autodiff, slice) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 2, (int64_t[]){4, 5}, -1, 1);
    px_value *in[4] = {a, cints(t, 2, (int64_t[]){1, -4}), cints(t, 2, (int64_t[]){3, 100}),
                       cints(t, 2, (int64_t[]){0, 1})};
    set_loss(t, tg_op1(t, "Exp", tg_out(t, tg_node(t, "Slice", 4, in, 1))));
    CHECK(t, 1, 0);
    tg_free(t);
}

/* Slice with steps other than 1: torch.flip (step -1 over the whole axis),
 * step -2 from inside the axis, and step 3 with an offset, on a 3-D input. */
Test(autodiff, slice_steps) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 3, (int64_t[]){7, 4, 6}, -1, 1);
    px_value *in[5] = {a, cints(t, 3, (int64_t[]){-1, 5, 1}),
                       cints(t, 3, (int64_t[]){INT64_MIN, -100, 6}),
                       cints(t, 3, (int64_t[]){1, 2, 0}), cints(t, 3, (int64_t[]){-1, -2, 3})};
    set_loss(t, tg_op1(t, "Exp", tg_out(t, tg_node(t, "Slice", 5, in, 1))));
    CHECK(t, 1, 0);
    tg_free(t);
}

/* ScatterElements on axis 0 and on the last axis: data's overwritten
 * positions get no gradient (reduction none) or all of dy (add), updates get
 * dy at their targets. */
static void scatter_case(int64_t axis, const char *reduction) {
    tg *t = tg_new();
    int64_t idx0[8] = {2, 0, 1, 3, 0, 3, 2, 1}, idx1[8] = {4, 0, 2, 1, 3, 2, 0, 4};
    px_value *data = param(t, "data", 2, (int64_t[]){4, 5}, -1, 1);
    px_value *upd = param(t, "updates", 2, (int64_t[]){2, 4}, -1, 1);
    px_shape s = px_shape_make(2, (int64_t[]){2, 4});
    px_tensor *idx = px_tensor_new(PX_I64, &s, &t->d);
    for (int i = 0; i < 8; i++) px_tensor_set_i64(idx, i, (axis == 0 ? idx0 : idx1)[i]);
    px_value *in[3] = {data, px_graph_add_constant(t->g, "idx", idx), upd};
    px_node *n = tg_node(t, "ScatterElements", 3, in, 1);
    px_node_set_attr_int(n, "axis", axis);
    if (reduction) px_node_set_attr_string(n, "reduction", reduction);
    set_loss(t, tg_op1(t, "Tanh", tg_out(t, n)));
    CHECK(t, 2, 0);
    tg_free(t);
}

Test(autodiff, scatter_elements_axis0) {
    scatter_case(0, NULL);
}

Test(autodiff, scatter_elements_last_axis) {
    scatter_case(-1, NULL);
}

Test(autodiff, scatter_elements_add) {
    scatter_case(1, "add");
}

/* ---------- softmax and losses ---------- */

static void softmax_case(const char *op, int64_t axis) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 3, (int64_t[]){2, 3, 4}, -2, 2);
    px_node *n = tg_node(t, op, 1, &a, 1);
    px_node_set_attr_int(n, "axis", axis);
    set_loss(t, tg_out(t, n));
    CHECK(t, 1, 0);
    tg_free(t);
}

Test(autodiff, softmax_last) {
    softmax_case("Softmax", -1);
}
Test(autodiff, softmax_middle) {
    softmax_case("Softmax", 1);
}
Test(autodiff, logsoftmax) {
    softmax_case("LogSoftmax", 1);
}

/* scores [N=3, C=4, D=2], labels [3, 2] (one ignored), optional weights */
static void loss_case(const char *op, const char *reduction, int weights, int ignore) {
    tg *t = tg_new();
    px_value *x = param(t, "x", 3, (int64_t[]){3, 4, 2}, -2, 2);
    if (!strcmp(op, "NegativeLogLikelihoodLoss")) {
        px_node *ls = tg_node(t, "LogSoftmax", 1, &x, 1);
        px_node_set_attr_int(ls, "axis", 1);
        x = tg_out(t, ls);
    }
    px_value *lab = index_input(t, "labels", 2, (int64_t[]){3, 2}, (int64_t[]){0, 3, 2, 2, 1, 0});
    px_value *in[3] = {x, lab, NULL};
    if (weights) {
        px_shape s = px_shape_make(1, (int64_t[]){4});
        px_tensor *w = px_tensor_new(PX_F64, &s, &t->d);
        for (int i = 0; i < 4; i++) px_tensor_set_f64(w, i, 0.5 + 0.3 * i);
        in[2] = px_graph_add_constant(t->g, "w", w);
    }
    px_node *n = tg_node(t, op, weights ? 3 : 2, in, 1);
    px_node_set_attr_string(n, "reduction", reduction);
    if (ignore) px_node_set_attr_int(n, "ignore_index", 2);
    set_loss(t, tg_out(t, n));
    CHECK(t, 1, 0);
    tg_free(t);
}

Test(autodiff, sce_mean) {
    loss_case("SoftmaxCrossEntropyLoss", "mean", 0, 0);
}
Test(autodiff, sce_mean_weights_ignore) {
    loss_case("SoftmaxCrossEntropyLoss", "mean", 1, 1);
}
Test(autodiff, sce_sum_ignore) {
    loss_case("SoftmaxCrossEntropyLoss", "sum", 0, 1);
}
Test(autodiff, sce_none_weights) {
    loss_case("SoftmaxCrossEntropyLoss", "none", 1, 0);
}
Test(autodiff, nll_mean_weights_ignore) {
    loss_case("NegativeLogLikelihoodLoss", "mean", 1, 1);
}
Test(autodiff, nll_sum) {
    loss_case("NegativeLogLikelihoodLoss", "sum", 0, 0);
}
Test(autodiff, nll_none_ignore) {
    loss_case("NegativeLogLikelihoodLoss", "none", 0, 1);
}

/* ---------- Gather: row sets ---------- */

/* Table [7, 3] read twice with duplicates and a negative index: the row set
 * holds the 4 distinct rows {1, 2, 4, 6}, each summed over its uses. */
Test(autodiff, gather_row_set) {
    tg *t = tg_new();
    px_value *w = param(t, "table", 2, (int64_t[]){7, 3}, -1, 1);
    px_value *i1 = index_input(t, "i1", 2, (int64_t[]){2, 2}, (int64_t[]){4, 1, 4, -1});
    px_value *i2 = index_input(t, "i2", 1, (int64_t[]){3}, (int64_t[]){2, 6, 1});
    px_value *g1 = tg_op1(t, "Tanh", tg_op2(t, "Gather", w, i1));
    px_value *g2 = tg_op2(t, "Gather", w, i2);
    px_value *rin[2] = {g1, cints(t, 1, (int64_t[]){1})};
    px_node *r = tg_node(t, "ReduceSum", 2, rin, 1);
    px_node_set_attr_int(r, "keepdims", 0);
    px_value *in[2] = {tg_out(t, r), g2};
    px_node *c = tg_node(t, "Concat", 2, in, 1);
    px_node_set_attr_int(c, "axis", 0);
    set_loss(t, tg_out(t, c));
    CHECK(t, 1, 1);
    tg_free(t);
}

Test(autodiff, gather_row_set_count) {
    tg *t = tg_new();
    px_value *w = param(t, "table", 2, (int64_t[]){5, 2}, -1, 1);
    px_value *i1 = index_input(t, "i1", 1, (int64_t[]){5}, (int64_t[]){3, 0, 3, -2, 0});
    set_loss(t, tg_op2(t, "Gather", w, i1));
    px_grads gr;
    cr_assert_eq(px_pass_autodiff(t->g, NULL, &gr, &t->d), 0, "%s", t->d.text);
    cr_assert_eq(gr.n, 1);
    cr_assert_null(gr.items[0].grad);
    px_graph_add_output(t->g, gr.items[0].rows_index);
    px_graph_add_output(t->g, gr.items[0].rows_count);
    px_plan plan;
    cr_assert_eq(px_plan_build(t->g, &plan, &t->d), 0, "%s", t->d.text);
    px_tensor **o;
    tg_run_loss(t, &plan, &o);
    cr_assert_eq(px_tensor_get_i64(o[2], 0), 2, "rows 0 and 3 (3 = -2 + 5), got %lld",
                 (long long)px_tensor_get_i64(o[2], 0));
    cr_assert_eq(px_tensor_get_i64(o[1], 0), 0);
    cr_assert_eq(px_tensor_get_i64(o[1], 1), 3);
    tg_free_outs(t, o);
    px_plan_free(&plan);
    px_grads_free(&gr);
    tg_free(t);
}

/* Gather with constant indices on axis 1 (a dense variable) and Gather of
 * an intermediate value: dense scatter-add gradients. */
Test(autodiff, gather_dense) {
    tg *t = tg_new();
    px_value *w = param(t, "w", 3, (int64_t[]){2, 4, 3}, -1, 1);
    px_value *gin[2] = {w, cints(t, 3, (int64_t[]){3, -1, 0})};
    px_node *n = tg_node(t, "Gather", 2, gin, 1);
    px_node_set_attr_int(n, "axis", 1);
    px_value *gi = tg_out(t, n);
    px_value *e = tg_op1(t, "Exp", param(t, "v", 2, (int64_t[]){5, 3}, -1, 1));
    px_value *i2 = index_input(t, "i2", 1, (int64_t[]){4}, (int64_t[]){1, 4, 1, 0});
    px_value *ge = tg_op2(t, "Gather", e, i2);
    px_value *s = tg_op2(t, "ReduceSum", gi, cints(t, 2, (int64_t[]){0, 1}));
    px_value *s2 = tg_op2(t, "ReduceSum", ge, cints(t, 1, (int64_t[]){0}));
    set_loss(t, tg_op2(t, "Mul", tg_op1(t, "Tanh", s), tg_op1(t, "Sigmoid", s2)));
    CHECK(t, 2, 0);
    tg_free(t);
}

/* ---------- more elementwise, Where, Cast, Expand, Sum/Mean, LayerNorm ---------- */

Test(autodiff, reciprocal) {
    unary_case("Reciprocal", 0.5, 2);
}
Test(autodiff, sin) {
    unary_case("Sin", -2, 2);
}
Test(autodiff, cos) {
    unary_case("Cos", -2, 2);
}
Test(autodiff, softplus) {
    unary_case("Softplus", -2, 2);
}
Test(autodiff, erf) {
    unary_case("Erf", -1.5, 1.5);
}
Test(autodiff, leaky_relu) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 2, (int64_t[]){2, 5}, -1, 1);
    px_node *n = tg_node(t, "LeakyRelu", 1, &a, 1);
    px_node_set_attr_float(n, "alpha", 0.2f);
    set_loss(t, tg_out(t, n));
    CHECK(t, 1, 0);
    tg_free(t);
}

/* cond from a runtime input; x broadcast [4] against y [3,4] */
Test(autodiff, where_broadcast) {
    tg *t = tg_new();
    px_value *x = param(t, "x", 1, (int64_t[]){4}, -1, 1);
    px_value *y = param(t, "y", 2, (int64_t[]){3, 4}, -1, 1);
    px_value *m =
        index_input(t, "m", 2, (int64_t[]){3, 4}, (int64_t[]){0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0});
    px_value *c = tg_op2(t, "Greater", m, cints(t, 1, (int64_t[]){0}));
    px_value *in[3] = {c, x, y};
    set_loss(t, tg_out(t, tg_node(t, "Where", 3, in, 1)));
    CHECK(t, 2, 0);
    tg_free(t);
}

/* float64 -> float32 -> float64 round trip: the gradient is cast back;
 * float32 rounding limits the tolerance. */
Test(autodiff, cast_float) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 1, (int64_t[]){5}, -1, 1);
    px_node *c1 = tg_node(t, "Cast", 1, &a, 1);
    px_node_set_attr_int(c1, "to", PX_F32);
    px_value *f = tg_op1(t, "Exp", tg_out(t, c1));
    px_node *c2 = tg_node(t, "Cast", 1, &f, 1);
    px_node_set_attr_int(c2, "to", PX_F64);
    set_loss(t, tg_out(t, c2));
    tg_check_grads(t, 1, 0, 50, 1e-3, 1e-4, 1e-3);
    tg_free(t);
}

Test(autodiff, expand) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 2, (int64_t[]){3, 1}, -1, 1);
    set_loss(t, tg_op1(t, "Tanh", tg_op2(t, "Expand", a, cints(t, 3, (int64_t[]){2, 3, 4}))));
    CHECK(t, 1, 0);
    tg_free(t);
}

static void variadic_case(const char *op) {
    tg *t = tg_new();
    px_value *in[3] = {param(t, "a", 2, (int64_t[]){2, 3}, -1, 1),
                       param(t, "b", 1, (int64_t[]){3}, -1, 1),
                       param(t, "c", 2, (int64_t[]){2, 1}, -1, 1)};
    set_loss(t, tg_op1(t, "Tanh", tg_out(t, tg_node(t, op, 3, in, 1))));
    CHECK(t, 3, 0);
    tg_free(t);
}

Test(autodiff, sum_variadic) {
    variadic_case("Sum");
}
Test(autodiff, mean_variadic) {
    variadic_case("Mean");
}

static void layernorm_case(int64_t axis, int with_bias) {
    tg *t = tg_new();
    px_value *x = param(t, "x", 3, (int64_t[]){2, 3, 4}, -2, 2);
    int nd = axis == -1 ? 1 : 2;
    int64_t sd[2] = {3, 4};
    px_value *scale = param(t, "scale", nd, nd == 1 ? sd + 1 : sd, 0.5, 1.5);
    px_value *in[3] = {x, scale,
                       with_bias ? param(t, "bias", nd, nd == 1 ? sd + 1 : sd, -1, 1) : NULL};
    px_node *n = tg_node(t, "LayerNormalization", with_bias ? 3 : 2, in, 1);
    px_node_set_attr_int(n, "axis", axis);
    px_node_set_attr_float(n, "epsilon", 1e-3f);
    set_loss(t, tg_out(t, n));
    CHECK(t, with_bias ? 3 : 2, 0);
    tg_free(t);
}

Test(autodiff, layernorm_last_axis) {
    layernorm_case(-1, 1);
}
Test(autodiff, layernorm_two_axes) {
    layernorm_case(1, 0);
}

/* ---------- errors ---------- */

Test(autodiff, no_rule_names_the_node) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 1, (int64_t[]){4}, -1, 1);
    set_loss(t, tg_op1(t, "Floor", a));
    px_grads gr;
    cr_assert_eq(px_pass_autodiff(t->g, NULL, &gr, &t->d), -1);
    cr_assert(strstr(t->d.text, "Floor"), "%s", t->d.text);
    tg_free(t);
}

Test(autodiff, loss_must_be_scalar) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 1, (int64_t[]){4}, -1, 1);
    px_graph_add_output(t->g, tg_op1(t, "Exp", a));
    px_grads gr;
    cr_assert_eq(px_pass_autodiff(t->g, NULL, &gr, &t->d), -1);
    cr_assert(strstr(t->d.text, "no float scalar output"), "%s", t->d.text);
    px_train_spec spec = {.loss = "nope"};
    cr_assert_eq(px_pass_autodiff(t->g, &spec, &gr, &t->d), -1);
    cr_assert(strstr(t->d.text, "'nope'"), "%s", t->d.text);
    tg_free(t);
}

Test(autodiff, frozen_and_integer_inputs_skipped) {
    tg *t = tg_new();
    px_value *a = param(t, "a", 1, (int64_t[]){4}, -1, 1);
    px_value *b = param(t, "b", 1, (int64_t[]){4}, -1, 1);
    set_loss(t, tg_op2(t, "Mul", a, b));
    const char *freeze[1] = {"b"};
    px_train_spec spec = {.n_freeze = 1, .freeze = freeze};
    px_grads gr;
    cr_assert_eq(px_pass_autodiff(t->g, &spec, &gr, &t->d), 0, "%s", t->d.text);
    cr_assert_eq(gr.n, 1);
    cr_assert_eq(gr.items[0].var, a);
    px_grads_free(&gr);
    tg_free(t);
}

/* ---------- the example models ---------- */

static void example_case(const char *model, int n_vars, int n_sparse, int coords) {
    tg *t = tg_load_example(model, 4);
    tg_check_grads(t, n_vars, n_sparse, coords, 1e-6, 1e-7, 1e-5);
    tg_free(t);
}

Test(autodiff, example_mlp) {
    example_case("mlp", 6, 0, 8);
}
Test(autodiff, example_recommender) {
    example_case("recommender", 9, 3, 8);
}
/* LayerNormalization, attention (MatMul, Softmax, Where mask), a sparse
 * token embedding and a dense position embedding. */
Test(autodiff, example_transformer_lm) {
    example_case("transformer_lm", 28, 1, 3);
}
