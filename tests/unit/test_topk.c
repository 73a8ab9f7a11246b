/* TopK: values and indices against hand-computed answers (largest and
 * smallest, ties giving the lower index first as ONNX specifies, an inner
 * axis, float32 and int64 inputs), the errors for a K that is too large or
 * not constant, and the gradient of Values (and of GatherElements, which
 * shares its scatter) against finite differences. */
#include "gradcheck.h"
#include "passes.h"
#include "plan.h"
#include "shape_infer.h"

#include <criterion/criterion.h>
#include <string.h>

static px_value *k_const(tg *t, int64_t k) {
    int64_t one = 1;
    px_shape s = px_shape_make(1, &one);
    px_tensor *kt = px_tensor_new(PX_I64, &s, &t->d);
    px_tensor_set_i64(kt, 0, k);
    return px_graph_add_constant(t->g, "K", kt);
}

static px_value *init(tg *t, const char *name, px_dtype dt, int rank, const int64_t *dims,
                      const double *v) {
    px_shape s = px_shape_make(rank, dims);
    px_value *x = px_graph_add_value(t->g, name, dt, &s, &t->d);
    px_tensor *xt = px_tensor_new(dt, &s, &t->d);
    for (int64_t i = 0; i < px_shape_numel(&s); i++) px_tensor_set_f64(xt, i, v[i]);
    px_graph_add_initializer(t->g, x, xt);
    return x;
}

static px_node *topk(tg *t, px_value *x, px_value *k, int64_t axis, int largest) {
    px_value *in[2] = {x, k};
    px_node *n = tg_node(t, "TopK", 2, in, 2);
    px_node_set_attr_int(n, "axis", axis);
    px_node_set_attr_int(n, "largest", largest);
    tg_out(t, n);
    return n;
}

/* Runs t's graph (outputs Values, Indices) and compares with want_v, want_i. */
static void expect(tg *t, int64_t n, const double *want_v, const int64_t *want_i) {
    px_plan plan;
    cr_assert_eq(px_plan_build(t->g, &plan, &t->d), 0, "%s", t->d.text);
    px_tensor **o = NULL;
    tg_run_loss(t, &plan, &o);
    cr_assert_eq(px_tensor_numel(o[0]), n);
    cr_assert_eq(o[1]->dtype, PX_I64);
    for (int64_t i = 0; i < n; i++) {
        cr_assert_eq(px_tensor_get_f64(o[0], i), want_v[i], "value %ld", (long)i);
        cr_assert_eq(px_tensor_get_i64(o[1], i), want_i[i], "index %ld", (long)i);
    }
    tg_free_outs(t, o);
    px_plan_free(&plan);
}

static void rows_case(int largest, const double *want_v, const int64_t *want_i) {
    tg *t = tg_new();
    int64_t dims[2] = {3, 5};
    const double x[15] = {1, 3, 3, 2, 3, 5, 4, 5, 4, 0, 0, 0, 0, 0, 0};
    px_node *n = topk(t, init(t, "x", PX_F64, 2, dims, x), k_const(t, 3), -1, largest);
    cr_assert_eq(n->outputs[0]->shape.dims[1], 3);
    cr_assert_eq(n->outputs[1]->dtype, PX_I64);
    px_graph_add_output(t->g, n->outputs[0]);
    px_graph_add_output(t->g, n->outputs[1]);
    expect(t, 9, want_v, want_i);
    tg_free(t);
}

Test(topk, largest_ties_lower_index_first) {
    rows_case(1, (double[]){3, 3, 3, 5, 5, 4, 0, 0, 0}, (int64_t[]){1, 2, 4, 0, 2, 1, 0, 1, 2});
}

Test(topk, smallest_ties_lower_index_first) {
    rows_case(0, (double[]){1, 2, 3, 0, 4, 4, 0, 0, 0}, (int64_t[]){0, 3, 1, 4, 1, 3, 0, 1, 2});
}

Test(topk, axis0_float32) {
    tg *t = tg_new();
    int64_t dims[2] = {4, 2};
    const double x[8] = {1, 8, 4, 2, 3, 7, 4, 9};
    px_node *n = topk(t, init(t, "x", PX_F32, 2, dims, x), k_const(t, 2), 0, 1);
    px_graph_add_output(t->g, n->outputs[0]);
    px_graph_add_output(t->g, n->outputs[1]);
    expect(t, 4, (double[]){4, 9, 4, 8}, (int64_t[]){1, 3, 3, 0});
    tg_free(t);
}

Test(topk, int64_smallest) {
    tg *t = tg_new();
    int64_t dims[1] = {4};
    const double x[4] = {3, -1, 7, -1};
    px_node *n = topk(t, init(t, "x", PX_I64, 1, dims, x), k_const(t, 3), 0, 0);
    px_graph_add_output(t->g, n->outputs[0]);
    px_graph_add_output(t->g, n->outputs[1]);
    expect(t, 3, (double[]){-1, -1, 3}, (int64_t[]){1, 3, 0});
    tg_free(t);
}

Test(topk, k_larger_than_axis_is_an_error) {
    tg *t = tg_new();
    int64_t dims[2] = {2, 3};
    px_value *x = init(t, "x", PX_F64, 2, dims, (double[]){0, 1, 2, 3, 4, 5});
    px_value *in[2] = {x, k_const(t, 4)};
    px_node *n = tg_node(t, "TopK", 2, in, 2);
    cr_assert_eq(px_infer_node(t->g, n, &t->d), -1);
    cr_assert(strstr(t->d.text, "TopK") && strstr(t->d.text, "K = 4 exceeds"), "%s", t->d.text);
    tg_free(t);
}

Test(topk, runtime_k_is_refused_when_lowering) {
    tg *t = tg_new();
    int64_t dims[2] = {2, 3}, one = 1;
    px_value *x = init(t, "x", PX_F64, 2, dims, (double[]){0, 1, 2, 3, 4, 5});
    px_shape ks = px_shape_make(1, &one);
    px_value *k = px_graph_add_value(t->g, "k_in", PX_I64, &ks, &t->d);
    px_graph_add_input(t->g, k);
    px_node *n = topk(t, x, k, 1, 1);
    cr_assert_eq(n->outputs[0]->shape.dims[1], -1);
    px_graph_add_output(t->g, n->outputs[0]);
    px_plan plan;
    cr_assert_eq(px_plan_build(t->g, &plan, &t->d), -1);
    cr_assert(strstr(t->d.text, "k_in"), "%s", t->d.text);
    tg_free(t);
}

/* loss = sum(R * Values): the gradient of w is R at the selected positions. */
static void grad_case(int64_t axis, int largest) {
    tg *t = tg_new();
    int64_t dims[3] = {3, 6, 2};
    px_shape s = px_shape_make(3, dims);
    px_value *w = px_graph_add_value(t->g, "w", PX_F64, &s, &t->d);
    px_graph_add_initializer(t->g, w, tg_rand_tensor(PX_F64, 3, dims, -1, 1));
    px_node *n = topk(t, w, k_const(t, 2), axis, largest);
    px_value *v = n->outputs[0];
    px_value *r = px_graph_add_constant(
        t->g, "R", tg_rand_tensor(PX_F64, v->shape.rank, v->shape.dims, -1, 1));
    px_node *sum = tg_node(t, "ReduceSum", 1, (px_value *[]){tg_op2(t, "Mul", v, r)}, 1);
    px_node_set_attr_int(sum, "keepdims", 0);
    px_graph_add_output(t->g, tg_out(t, sum));
    tg_fd_err e = tg_check_grads(t, 1, 0, 64, 1e-6, 1e-8, 1e-6);
    cr_assert_lt(e.abs, 1e-6);
    tg_free(t);
}

Test(topk, gradient_last_axis_largest) {
    grad_case(1, 1);
}
Test(topk, gradient_first_axis_smallest) {
    grad_case(0, 0);
}

Test(topk, gather_elements_gradient_with_repeated_indices) {
    tg *t = tg_new();
    int64_t dims[2] = {3, 4}, idims[2] = {3, 3};
    px_shape s = px_shape_make(2, dims), is = px_shape_make(2, idims);
    px_value *w = px_graph_add_value(t->g, "w", PX_F64, &s, &t->d);
    px_graph_add_initializer(t->g, w, tg_rand_tensor(PX_F64, 2, dims, -1, 1));
    px_tensor *it = px_tensor_new(PX_I64, &is, &t->d);
    const int64_t idx[9] = {0, 3, 3, -1, 2, 0, 1, 1, 1}; /* repeats add up */
    for (int i = 0; i < 9; i++) px_tensor_set_i64(it, i, idx[i]);
    px_value *iv = px_graph_add_constant(t->g, "idx", it);
    px_node *ge = tg_node(t, "GatherElements", 2, (px_value *[]){w, iv}, 1);
    px_node_set_attr_int(ge, "axis", 1);
    px_value *y = tg_out(t, ge);
    px_value *r = px_graph_add_constant(t->g, "R", tg_rand_tensor(PX_F64, 2, idims, -1, 1));
    px_node *sum = tg_node(t, "ReduceSum", 1, (px_value *[]){tg_op2(t, "Mul", y, r)}, 1);
    px_node_set_attr_int(sum, "keepdims", 0);
    px_graph_add_output(t->g, tg_out(t, sum));
    tg_check_grads(t, 1, 0, 64, 1e-6, 1e-8, 1e-6);
    tg_free(t);
}

Test(topk, opset9_attribute_k) {
    tg *t = tg_new();
    px_graph_set_opset(t->g, "", 9);
    int64_t dims[2] = {2, 3};
    px_value *x = init(t, "x", PX_F64, 2, dims, (double[]){0, 2, 1, 5, 3, 4});
    px_node *n = tg_node(t, "TopK", 1, &x, 2);
    px_node_set_attr_int(n, "k", 2);
    tg_out(t, n);
    px_graph_add_output(t->g, n->outputs[0]);
    px_graph_add_output(t->g, n->outputs[1]);
    expect(t, 4, (double[]){2, 1, 5, 4}, (int64_t[]){1, 2, 0, 2});
    tg_free(t);
}
