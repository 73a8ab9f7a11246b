/* Constant evaluator (per op, against hand-computed numbers) and constant
 * folding of PyTorch-style shape arithmetic. */
#include "const_eval.h"
#include "graph.h"
#include "onnx_io.h"
#include "passes.h"
#include "shape_infer.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

/* ---------- helpers ---------- */

static px_graph *G;
static px_diag D;

static void setup(void) {
    G = px_graph_new("t");
    px_graph_set_opset(G, "", 17);
    px_diag_init(&D);
}

static void teardown(void) {
    px_graph_free(G);
}

static px_tensor *mk(px_dtype t, int rank, const int64_t *dims) {
    px_shape s = px_shape_make(rank, dims);
    px_tensor *x = px_tensor_new(t, &s, &D);
    cr_assert_not_null(x, "%s", D.text);
    return x;
}

static px_tensor *ti64(int rank, const int64_t *dims, const int64_t *v) {
    px_tensor *x = mk(PX_I64, rank, dims);
    for (int64_t i = 0; i < px_tensor_numel(x); i++) ((int64_t *)x->data)[i] = v[i];
    return x;
}

static px_tensor *tf32(int rank, const int64_t *dims, const float *v) {
    px_tensor *x = mk(PX_F32, rank, dims);
    for (int64_t i = 0; i < px_tensor_numel(x); i++) ((float *)x->data)[i] = v[i];
    return x;
}

static px_tensor *scalar_i64(int64_t v) {
    return ti64(0, NULL, &v);
}

static px_tensor *vec_i64(int n, const int64_t *v) {
    int64_t dims[1] = {n};
    return ti64(1, dims, v);
}

/* A node with n_in (unconnected) inputs and n_out outputs, for the evaluator. */
static px_node *node(const char *op, int n_in, int n_out) {
    px_value *outs[4];
    for (int i = 0; i < n_out; i++) outs[i] = px_graph_new_value(G, "out", PX_UNDEFINED, NULL);
    px_node *n = px_graph_add_node(G, op, "", op, n_in, NULL, n_out, outs);
    cr_assert_not_null(n);
    return n;
}

/* Runs the evaluator; asserts the expected status; returns output 0. */
static px_tensor *eval_expect(px_node *n, px_tensor **in, int expect) {
    px_tensor *out[4] = {0};
    int st = px_const_eval_node(n, (const px_tensor *const *)in, out, &D);
    cr_assert_eq(st, expect, "%s: status %d, expected %d; diag: %s", n->op_type, st, expect,
                 D.text);
    for (int i = 1; i < 4 && i < n->n_outputs; i++) px_tensor_free(out[i]);
    return out[0];
}

static px_tensor *eval(px_node *n, px_tensor **in) {
    return eval_expect(n, in, PX_EVAL_OK);
}

static void free_all(px_tensor **t, int n) {
    for (int i = 0; i < n; i++) px_tensor_free(t[i]);
}

static void expect_shape(const px_tensor *t, int rank, const int64_t *dims) {
    cr_assert_eq(t->shape.rank, rank, "rank %d, expected %d", t->shape.rank, rank);
    for (int i = 0; i < rank; i++)
        cr_assert_eq(t->shape.dims[i], dims[i], "dim %d is %lld, expected %lld", i,
                     (long long)t->shape.dims[i], (long long)dims[i]);
}

static void expect_i64(const px_tensor *t, int n, const int64_t *v) {
    cr_assert_eq(px_tensor_numel(t), n, "numel %lld, expected %d", (long long)px_tensor_numel(t),
                 n);
    for (int i = 0; i < n; i++)
        cr_assert_eq(px_tensor_get_i64(t, i), v[i], "element %d is %lld, expected %lld", i,
                     (long long)px_tensor_get_i64(t, i), (long long)v[i]);
}

static void expect_f64(const px_tensor *t, int n, const double *v) {
    cr_assert_eq(px_tensor_numel(t), n);
    for (int i = 0; i < n; i++)
        cr_assert(fabs(px_tensor_get_f64(t, i) - v[i]) <= 1e-6 * (1 + fabs(v[i])),
                  "element %d is %g, expected %g", i, px_tensor_get_f64(t, i), v[i]);
}

TestSuite(const_eval, .init = setup, .fini = teardown);

/* ---------- Constant ---------- */

Test(const_eval, constant_all_attribute_forms) {
    px_node *n = node("Constant", 0, 1);
    px_node_set_attr_int(n, "value_int", 7);
    px_tensor *o = eval(n, NULL);
    expect_shape(o, 0, NULL);
    cr_assert_eq(o->dtype, PX_I64);
    expect_i64(o, 1, (int64_t[]){7});
    px_tensor_free(o);

    n = node("Constant", 0, 1);
    px_node_set_attr_floats(n, "value_floats", 2, (float[]){1.5f, -2});
    o = eval(n, NULL);
    cr_assert_eq(o->dtype, PX_F32);
    expect_shape(o, 1, (int64_t[]){2});
    expect_f64(o, 2, (double[]){1.5, -2});
    px_tensor_free(o);

    n = node("Constant", 0, 1);
    px_node_set_attr_float(n, "value_float", 0.25f);
    o = eval(n, NULL);
    expect_shape(o, 0, NULL);
    expect_f64(o, 1, (double[]){0.25});
    px_tensor_free(o);

    n = node("Constant", 0, 1);
    px_node_set_attr_ints(n, "value_ints", 3, (int64_t[]){4, -1, 0});
    o = eval(n, NULL);
    expect_i64(o, 3, (int64_t[]){4, -1, 0});
    px_tensor_free(o);

    n = node("Constant", 0, 1);
    px_node_set_attr_tensor(n, "value", ti64(1, (int64_t[]){2}, (int64_t[]){9, 8}));
    o = eval(n, NULL);
    expect_i64(o, 2, (int64_t[]){9, 8});
    px_tensor_free(o);

    n = node("Constant", 0, 1);
    px_attr *a = px_node_add_attr(n, "sparse_value", PX_ATTR_SPARSE_TENSOR);
    a->t = tf32(1, (int64_t[]){3}, (float[]){0, 5, 0});
    o = eval(n, NULL);
    expect_f64(o, 3, (double[]){0, 5, 0});
    px_tensor_free(o);

    n = node("Constant", 0, 1);
    px_node_set_attr_string(n, "value_string", "hi");
    o = eval(n, NULL);
    cr_assert_eq(o->dtype, PX_STRING);
    expect_shape(o, 0, NULL);
    cr_assert_str_eq(((px_bytes *)o->data)[0].data, "hi");
    px_tensor_free(o);

    n = node("Constant", 0, 1);
    a = px_node_add_attr(n, "value_strings", PX_ATTR_STRINGS);
    a->n = 2;
    a->strings = calloc(2, sizeof *a->strings);
    a->strings[0].data = strdup("a");
    a->strings[0].len = 1;
    a->strings[1].data = strdup("bc");
    a->strings[1].len = 2;
    o = eval(n, NULL);
    expect_shape(o, 1, (int64_t[]){2});
    cr_assert_str_eq(((px_bytes *)o->data)[1].data, "bc");
    px_tensor_free(o);
}

Test(const_eval, constant_without_value_is_an_error) {
    px_node *n = node("Constant", 0, 1);
    eval_expect(n, NULL, PX_EVAL_ERROR);
    cr_assert(strstr(D.text, "Constant") != NULL, "%s", D.text);
}

/* ---------- Shape, Size, Identity ---------- */

Test(const_eval, shape_with_start_end_and_size) {
    px_shape s = px_shape_make(4, (int64_t[]){2, 3, 5, 7});
    px_tensor desc = {.dtype = PX_F32, .shape = s}; /* data-less descriptor */
    px_tensor *in[1] = {&desc};
    px_node *n = node("Shape", 1, 1);
    px_tensor *o = eval(n, in);
    expect_i64(o, 4, (int64_t[]){2, 3, 5, 7});
    px_tensor_free(o);

    px_node_set_attr_int(n, "start", 1);
    px_node_set_attr_int(n, "end", -1);
    o = eval(n, in);
    expect_i64(o, 2, (int64_t[]){3, 5});
    px_tensor_free(o);

    px_node_set_attr_int(n, "start", -10); /* clamped to 0 */
    px_node_set_attr_int(n, "end", 100);   /* clamped to rank */
    o = eval(n, in);
    expect_i64(o, 4, (int64_t[]){2, 3, 5, 7});
    px_tensor_free(o);

    o = eval(node("Size", 1, 1), in);
    expect_shape(o, 0, NULL);
    expect_i64(o, 1, (int64_t[]){210});
    px_tensor_free(o);
}

Test(const_eval, identity_copies) {
    px_tensor *in[1] = {vec_i64(2, (int64_t[]){3, 4})};
    px_tensor *o = eval(node("Identity", 1, 1), in);
    expect_i64(o, 2, (int64_t[]){3, 4});
    cr_assert_neq(o->data, in[0]->data);
    px_tensor_free(o);
    free_all(in, 1);
}

/* ---------- Gather ---------- */

Test(const_eval, gather_axis0_scalar_and_negative_index) {
    px_tensor *in[2] = {vec_i64(4, (int64_t[]){10, 20, 30, 40}), scalar_i64(-1)};
    px_node *n = node("Gather", 2, 1);
    px_tensor *o = eval(n, in);
    expect_shape(o, 0, NULL);
    expect_i64(o, 1, (int64_t[]){40});
    px_tensor_free(o);
    px_tensor_free(in[1]);
    in[1] = vec_i64(3, (int64_t[]){2, 0, -3});
    o = eval(n, in);
    expect_i64(o, 3, (int64_t[]){30, 10, 20});
    px_tensor_free(o);
    free_all(in, 2);
}

Test(const_eval, gather_axis1_matrix_indices) {
    /* data 2x3 = [[1,2,3],[4,5,6]], indices [[2,0]] on axis 1 -> shape 2x1x2 */
    px_tensor *in[2] = {ti64(2, (int64_t[]){2, 3}, (int64_t[]){1, 2, 3, 4, 5, 6}),
                        ti64(2, (int64_t[]){1, 2}, (int64_t[]){2, 0})};
    px_node *n = node("Gather", 2, 1);
    px_node_set_attr_int(n, "axis", -1);
    px_tensor *o = eval(n, in);
    expect_shape(o, 3, (int64_t[]){2, 1, 2});
    expect_i64(o, 4, (int64_t[]){3, 1, 6, 4});
    px_tensor_free(o);
    free_all(in, 2);
}

Test(const_eval, gather_out_of_range_is_an_error) {
    px_tensor *in[2] = {vec_i64(2, (int64_t[]){1, 2}), scalar_i64(2)};
    eval_expect(node("Gather", 2, 1), in, PX_EVAL_ERROR);
    cr_assert(strstr(D.text, "out of range") != NULL, "%s", D.text);
    free_all(in, 2);
}

/* ---------- Slice ---------- */

Test(const_eval, slice_inputs_form_with_negative_step_and_clamping) {
    px_tensor *in[5] = {vec_i64(6, (int64_t[]){0, 1, 2, 3, 4, 5}), vec_i64(1, (int64_t[]){-1}),
                        vec_i64(1, (int64_t[]){INT64_MIN}), vec_i64(1, (int64_t[]){0}),
                        vec_i64(1, (int64_t[]){-2})};
    px_tensor *o = eval(node("Slice", 5, 1), in);
    expect_i64(o, 3, (int64_t[]){5, 3, 1});
    px_tensor_free(o);
    /* x[1:INT64_MAX] with default axes/steps */
    px_tensor_free(in[1]);
    px_tensor_free(in[2]);
    in[1] = vec_i64(1, (int64_t[]){1});
    in[2] = vec_i64(1, (int64_t[]){INT64_MAX});
    o = eval(node("Slice", 3, 1), in);
    expect_i64(o, 5, (int64_t[]){1, 2, 3, 4, 5});
    px_tensor_free(o);
    free_all(in, 5);
}

Test(const_eval, slice_2d_axes_and_attribute_form) {
    /* 3x4 matrix 0..11; rows 0:3:2, cols -3:-1 -> [[1,2],[9,10]] */
    int64_t v[12];
    for (int i = 0; i < 12; i++) v[i] = i;
    px_tensor *in[5] = {ti64(2, (int64_t[]){3, 4}, v), vec_i64(2, (int64_t[]){-3, 0}),
                        vec_i64(2, (int64_t[]){-1, 3}), vec_i64(2, (int64_t[]){1, 0}),
                        vec_i64(2, (int64_t[]){1, 2})};
    px_tensor *o = eval(node("Slice", 5, 1), in);
    expect_shape(o, 2, (int64_t[]){2, 2});
    expect_i64(o, 4, (int64_t[]){1, 2, 9, 10});
    px_tensor_free(o);

    px_node *n = node("Slice", 1, 1); /* opset 1-9: attributes */
    px_node_set_attr_ints(n, "starts", 1, (int64_t[]){1});
    px_node_set_attr_ints(n, "ends", 1, (int64_t[]){1000});
    px_node_set_attr_ints(n, "axes", 1, (int64_t[]){0});
    o = eval(n, in);
    expect_shape(o, 2, (int64_t[]){2, 4});
    expect_i64(o, 8, (int64_t[]){4, 5, 6, 7, 8, 9, 10, 11});
    px_tensor_free(o);
    free_all(in, 5);
}

Test(const_eval, slice_zero_step_is_an_error) {
    px_tensor *in[5] = {vec_i64(2, (int64_t[]){1, 2}), vec_i64(1, (int64_t[]){0}),
                        vec_i64(1, (int64_t[]){2}), vec_i64(1, (int64_t[]){0}),
                        vec_i64(1, (int64_t[]){0})};
    eval_expect(node("Slice", 5, 1), in, PX_EVAL_ERROR);
    free_all(in, 5);
}

/* ---------- Concat, Unsqueeze, Squeeze, Reshape, Flatten, Transpose ---------- */

Test(const_eval, concat_axis1) {
    px_tensor *in[2] = {ti64(2, (int64_t[]){2, 1}, (int64_t[]){1, 2}),
                        ti64(2, (int64_t[]){2, 2}, (int64_t[]){3, 4, 5, 6})};
    px_node *n = node("Concat", 2, 1);
    px_node_set_attr_int(n, "axis", -1);
    px_tensor *o = eval(n, in);
    expect_shape(o, 2, (int64_t[]){2, 3});
    expect_i64(o, 6, (int64_t[]){1, 3, 4, 2, 5, 6});
    px_tensor_free(o);
    free_all(in, 2);
}

Test(const_eval, concat_mismatch_is_an_error) {
    px_tensor *in[2] = {ti64(2, (int64_t[]){2, 1}, (int64_t[]){1, 2}),
                        ti64(2, (int64_t[]){1, 1}, (int64_t[]){3})};
    px_node *n = node("Concat", 2, 1);
    px_node_set_attr_int(n, "axis", 1);
    eval_expect(n, in, PX_EVAL_ERROR);
    cr_assert(strstr(D.text, "input 1") != NULL, "%s", D.text);
    free_all(in, 2);
}

Test(const_eval, unsqueeze_and_squeeze_both_forms) {
    px_tensor *in[2] = {scalar_i64(5), vec_i64(1, (int64_t[]){0})};
    px_tensor *o = eval(node("Unsqueeze", 2, 1), in); /* opset 13 input form */
    expect_shape(o, 1, (int64_t[]){1});
    expect_i64(o, 1, (int64_t[]){5});
    px_tensor_free(o);

    px_tensor *x[1] = {ti64(2, (int64_t[]){2, 3}, (int64_t[]){1, 2, 3, 4, 5, 6})};
    px_node *n = node("Unsqueeze", 1, 1); /* attribute form, negative axes */
    px_node_set_attr_ints(n, "axes", 2, (int64_t[]){-1, 1});
    o = eval(n, x);
    expect_shape(o, 4, (int64_t[]){2, 1, 3, 1});
    expect_i64(o, 6, (int64_t[]){1, 2, 3, 4, 5, 6});

    px_tensor *sq[1] = {o};
    px_tensor *s = eval(node("Squeeze", 1, 1), sq); /* no axes: all 1-dims */
    expect_shape(s, 2, (int64_t[]){2, 3});
    px_tensor_free(s);
    px_tensor *sq2[2] = {o, vec_i64(1, (int64_t[]){-1})};
    s = eval(node("Squeeze", 2, 1), sq2);
    expect_shape(s, 3, (int64_t[]){2, 1, 3});
    px_tensor_free(s);
    px_tensor_free(sq2[1]);
    sq2[1] = vec_i64(1, (int64_t[]){0}); /* dim 0 has size 2 */
    eval_expect(node("Squeeze", 2, 1), sq2, PX_EVAL_ERROR);
    px_tensor_free(sq2[1]);
    px_tensor_free(o);
    free_all(in, 2);
    free_all(x, 1);
}

Test(const_eval, reshape_zero_minus_one_and_allowzero) {
    px_tensor *in[2] = {ti64(3, (int64_t[]){2, 3, 4}, (int64_t[24]){0}),
                        vec_i64(2, (int64_t[]){0, -1})};
    px_node *n = node("Reshape", 2, 1);
    px_tensor *o = eval(n, in);
    expect_shape(o, 2, (int64_t[]){2, 12});
    px_tensor_free(o);
    px_node_set_attr_int(n, "allowzero", 1); /* now 0 means a zero dim: 0 * -1 cannot work */
    eval_expect(n, in, PX_EVAL_ERROR);
    px_tensor_free(in[1]);
    in[1] = vec_i64(3, (int64_t[]){4, -1, 3});
    o = eval(n, in);
    expect_shape(o, 3, (int64_t[]){4, 2, 3});
    px_tensor_free(o);
    px_tensor_free(in[1]);
    in[1] = vec_i64(2, (int64_t[]){5, -1});
    eval_expect(n, in, PX_EVAL_ERROR);
    cr_assert(strstr(D.text, "cannot reshape") != NULL, "%s", D.text);
    free_all(in, 2);
}

Test(const_eval, flatten_and_transpose) {
    int64_t v[6] = {1, 2, 3, 4, 5, 6};
    px_tensor *in[1] = {ti64(3, (int64_t[]){1, 2, 3}, v)};
    px_node *n = node("Flatten", 1, 1);
    px_node_set_attr_int(n, "axis", -1);
    px_tensor *o = eval(n, in);
    expect_shape(o, 2, (int64_t[]){2, 3});
    px_tensor_free(o);

    n = node("Transpose", 1, 1);
    px_node_set_attr_ints(n, "perm", 3, (int64_t[]){2, 0, 1});
    o = eval(n, in);
    expect_shape(o, 3, (int64_t[]){3, 1, 2});
    expect_i64(o, 6, (int64_t[]){1, 4, 2, 5, 3, 6});
    px_tensor_free(o);
    o = eval(node("Transpose", 1, 1), in); /* default: reversed axes */
    expect_shape(o, 3, (int64_t[]){3, 2, 1});
    expect_i64(o, 6, (int64_t[]){1, 4, 2, 5, 3, 6});
    px_tensor_free(o);
    free_all(in, 1);
}

/* ---------- ConstantOfShape, Range, Expand, Tile, Trilu ---------- */

Test(const_eval, constant_of_shape_default_and_value) {
    px_tensor *in[1] = {vec_i64(2, (int64_t[]){2, 3})};
    px_node *n = node("ConstantOfShape", 1, 1);
    px_tensor *o = eval(n, in);
    cr_assert_eq(o->dtype, PX_F32);
    expect_shape(o, 2, (int64_t[]){2, 3});
    expect_f64(o, 6, (double[]){0, 0, 0, 0, 0, 0});
    px_tensor_free(o);
    px_node_set_attr_tensor(n, "value", ti64(1, (int64_t[]){1}, (int64_t[]){-7}));
    o = eval(n, in);
    cr_assert_eq(o->dtype, PX_I64);
    expect_i64(o, 6, (int64_t[]){-7, -7, -7, -7, -7, -7});
    px_tensor_free(o);
    free_all(in, 1);
    px_tensor *empty[1] = {vec_i64(0, NULL)}; /* empty shape -> scalar */
    o = eval(n, empty);
    expect_shape(o, 0, NULL);
    px_tensor_free(o);
    free_all(empty, 1);
}

Test(const_eval, range_int_and_float) {
    px_tensor *in[3] = {scalar_i64(10), scalar_i64(1), scalar_i64(-3)};
    px_tensor *o = eval(node("Range", 3, 1), in);
    expect_i64(o, 3, (int64_t[]){10, 7, 4});
    px_tensor_free(o);
    free_all(in, 3);
    px_tensor *fin[3] = {tf32(0, NULL, (float[]){0.5f}), tf32(0, NULL, (float[]){2}),
                         tf32(0, NULL, (float[]){0.5f})};
    o = eval(node("Range", 3, 1), fin);
    expect_f64(o, 3, (double[]){0.5, 1.0, 1.5});
    px_tensor_free(o);
    free_all(fin, 3);
    px_tensor *z[3] = {scalar_i64(0), scalar_i64(5), scalar_i64(0)};
    eval_expect(node("Range", 3, 1), z, PX_EVAL_ERROR);
    free_all(z, 3);
}

Test(const_eval, expand_bidirectional_and_tile) {
    px_tensor *in[2] = {ti64(2, (int64_t[]){3, 1}, (int64_t[]){1, 2, 3}),
                        vec_i64(3, (int64_t[]){2, 1, 2})};
    px_tensor *o = eval(node("Expand", 2, 1), in);
    expect_shape(o, 3, (int64_t[]){2, 3, 2});
    expect_i64(o, 12, (int64_t[]){1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
    px_tensor_free(o);
    px_tensor_free(in[1]);
    in[1] = vec_i64(2, (int64_t[]){2, 2});
    o = eval(node("Tile", 2, 1), in);
    expect_shape(o, 2, (int64_t[]){6, 2});
    expect_i64(o, 12, (int64_t[]){1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
    px_tensor_free(o);
    free_all(in, 2);
}

Test(const_eval, trilu_upper_and_lower) {
    px_tensor *in[2] = {tf32(2, (int64_t[]){3, 3}, (float[]){1, 1, 1, 1, 1, 1, 1, 1, 1}),
                        scalar_i64(1)};
    px_tensor *o = eval(node("Trilu", 1, 1), in);
    expect_f64(o, 9, (double[]){1, 1, 1, 0, 1, 1, 0, 0, 1});
    px_tensor_free(o);
    px_node *n = node("Trilu", 2, 1);
    px_node_set_attr_int(n, "upper", 0);
    o = eval(n, in);
    expect_f64(o, 9, (double[]){1, 1, 0, 1, 1, 1, 1, 1, 1});
    px_tensor_free(o);
    free_all(in, 2);
}

/* ---------- Cast, comparisons, logic, Where ---------- */

Test(const_eval, cast_between_dtypes) {
    px_tensor *in[1] = {tf32(1, (int64_t[]){4}, (float[]){-2.7f, 0, 3.9f, 65504})};
    px_node *n = node("Cast", 1, 1);
    px_node_set_attr_int(n, "to", PX_I32);
    px_tensor *o = eval(n, in);
    cr_assert_eq(o->dtype, PX_I32);
    expect_i64(o, 4, (int64_t[]){-2, 0, 3, 65504}); /* truncation toward zero */
    px_tensor_free(o);
    px_node_set_attr_int(n, "to", PX_BOOL);
    o = eval(n, in);
    expect_i64(o, 4, (int64_t[]){1, 0, 1, 1});
    px_tensor_free(o);
    px_node_set_attr_int(n, "to", PX_F16);
    o = eval(n, in);
    cr_assert_eq(((uint16_t *)o->data)[3], 0x7bff); /* 65504 = largest half */
    cr_assert_eq(((uint16_t *)o->data)[1], 0x0000);
    px_tensor_free(o);
    px_node_set_attr_int(n, "to", PX_BF16);
    o = eval(n, in);
    cr_assert_eq(((uint16_t *)o->data)[1], 0x0000);
    cr_assert(fabs(px_bf16_to_f32(((uint16_t *)o->data)[0]) + 2.7) < 0.02);
    px_tensor_free(o);
    free_all(in, 1);

    px_tensor *big[1] = {vec_i64(1, (int64_t[]){300})};
    px_node_set_attr_int(n, "to", PX_U8);
    o = eval(n, big);
    expect_i64(o, 1, (int64_t[]){44}); /* 300 mod 256 */
    px_tensor_free(o);
    px_node_set_attr_int(n, "to", PX_F64);
    o = eval(n, big);
    expect_f64(o, 1, (double[]){300});
    px_tensor_free(o);
    free_all(big, 1);

    px_tensor *nan[1] = {tf32(0, NULL, (float[]){NAN})};
    px_node_set_attr_int(n, "to", PX_I64);
    eval_expect(n, nan, PX_EVAL_NOT_FOLDABLE); /* undefined: left to run time */
    free_all(nan, 1);
}

Test(const_eval, castlike_takes_target_dtype) {
    px_tensor *in[2] = {vec_i64(2, (int64_t[]){1, 2}), tf32(0, NULL, (float[]){0})};
    px_tensor *o = eval(node("CastLike", 2, 1), in);
    cr_assert_eq(o->dtype, PX_F32);
    expect_f64(o, 2, (double[]){1, 2});
    px_tensor_free(o);
    free_all(in, 2);
}

Test(const_eval, comparisons_broadcast_to_bool) {
    px_tensor *in[2] = {vec_i64(3, (int64_t[]){1, 2, 3}), scalar_i64(2)};
    const char *ops[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
    int64_t want[5][3] = {{0, 1, 0}, {1, 0, 0}, {0, 0, 1}, {1, 1, 0}, {0, 1, 1}};
    for (int k = 0; k < 5; k++) {
        px_tensor *o = eval(node(ops[k], 2, 1), in);
        cr_assert_eq(o->dtype, PX_BOOL);
        expect_i64(o, 3, want[k]);
        px_tensor_free(o);
    }
    free_all(in, 2);
}

Test(const_eval, logic_and_where) {
    px_tensor *a = mk(PX_BOOL, 1, (int64_t[]){4}), *b = mk(PX_BOOL, 1, (int64_t[]){4});
    uint8_t av[4] = {0, 0, 1, 1}, bv[4] = {0, 1, 0, 1};
    memcpy(a->data, av, 4);
    memcpy(b->data, bv, 4);
    px_tensor *in[2] = {a, b};
    px_tensor *o = eval(node("And", 2, 1), in);
    expect_i64(o, 4, (int64_t[]){0, 0, 0, 1});
    px_tensor_free(o);
    o = eval(node("Or", 2, 1), in);
    expect_i64(o, 4, (int64_t[]){0, 1, 1, 1});
    px_tensor_free(o);
    o = eval(node("Xor", 2, 1), in);
    expect_i64(o, 4, (int64_t[]){0, 1, 1, 0});
    px_tensor_free(o);
    o = eval(node("Not", 1, 1), in);
    expect_i64(o, 4, (int64_t[]){1, 1, 0, 0});
    px_tensor_free(o);

    /* Where(cond [4], x [4], y scalar) */
    px_tensor *w[3] = {b, vec_i64(4, (int64_t[]){1, 2, 3, 4}), scalar_i64(-1)};
    o = eval(node("Where", 3, 1), w);
    expect_i64(o, 4, (int64_t[]){-1, 2, -1, 4});
    px_tensor_free(o);
    px_tensor_free(w[1]);
    px_tensor_free(w[2]);
    free_all(in, 2);
}

/* ---------- arithmetic ---------- */

Test(const_eval, integer_div_truncates_and_mod_follows_fmod) {
    px_tensor *in[2] = {vec_i64(4, (int64_t[]){7, -7, 7, -7}),
                        vec_i64(4, (int64_t[]){2, 2, -2, -2})};
    px_tensor *o = eval(node("Div", 2, 1), in);
    expect_i64(o, 4, (int64_t[]){3, -3, -3, 3});
    px_tensor_free(o);
    px_node *n = node("Mod", 2, 1);
    o = eval(n, in); /* fmod=0: sign of the divisor */
    expect_i64(o, 4, (int64_t[]){1, 1, -1, -1});
    px_tensor_free(o);
    px_node_set_attr_int(n, "fmod", 1); /* sign of the dividend */
    o = eval(n, in);
    expect_i64(o, 4, (int64_t[]){1, -1, 1, -1});
    px_tensor_free(o);
    px_tensor_free(in[1]);
    in[1] = scalar_i64(0);
    eval_expect(node("Div", 2, 1), in, PX_EVAL_NOT_FOLDABLE);
    free_all(in, 2);
}

Test(const_eval, float_arithmetic_broadcast) {
    px_tensor *in[2] = {tf32(2, (int64_t[]){2, 1}, (float[]){1, 2}),
                        tf32(1, (int64_t[]){3}, (float[]){10, 20, 30})};
    px_tensor *o = eval(node("Add", 2, 1), in);
    expect_shape(o, 2, (int64_t[]){2, 3});
    expect_f64(o, 6, (double[]){11, 21, 31, 12, 22, 32});
    px_tensor_free(o);
    o = eval(node("Sub", 2, 1), in);
    expect_f64(o, 6, (double[]){-9, -19, -29, -8, -18, -28});
    px_tensor_free(o);
    o = eval(node("Mul", 2, 1), in);
    expect_f64(o, 6, (double[]){10, 20, 30, 20, 40, 60});
    px_tensor_free(o);
    o = eval(node("Div", 2, 1), in);
    expect_f64(o, 6, (double[]){0.1, 0.05, 1.0 / 30, 0.2, 0.1, 2.0 / 30});
    px_tensor_free(o);
    o = eval(node("Pow", 2, 1), in);
    expect_f64(o, 6, (double[]){1, 1, 1, 1024, 1048576, 1073741824.0});
    px_tensor_free(o);
    px_node *m = node("Mod", 2, 1);
    px_node_set_attr_int(m, "fmod", 1);
    px_tensor *mi[2] = {tf32(1, (int64_t[]){2}, (float[]){-5.5f, 5.5f}),
                        tf32(0, NULL, (float[]){2})};
    o = eval(m, mi);
    expect_f64(o, 2, (double[]){-1.5, 1.5});
    px_tensor_free(o);
    free_all(mi, 2);
    free_all(in, 2);
}

Test(const_eval, variadic_max_min_and_mismatch) {
    px_tensor *in[3] = {vec_i64(3, (int64_t[]){1, 5, 3}), scalar_i64(2),
                        vec_i64(3, (int64_t[]){0, 9, 4})};
    px_tensor *o = eval(node("Max", 3, 1), in);
    expect_i64(o, 3, (int64_t[]){2, 9, 4});
    px_tensor_free(o);
    o = eval(node("Min", 3, 1), in);
    expect_i64(o, 3, (int64_t[]){0, 2, 2});
    px_tensor_free(o);
    px_tensor *bad[2] = {vec_i64(3, (int64_t[]){1, 2, 3}), vec_i64(2, (int64_t[]){1, 2})};
    eval_expect(node("Add", 2, 1), bad, PX_EVAL_ERROR);
    cr_assert(strstr(D.text, "broadcast") != NULL, "%s", D.text);
    free_all(bad, 2);
    free_all(in, 3);
}

Test(const_eval, unary_ops) {
    px_tensor *f[1] = {tf32(1, (int64_t[]){4}, (float[]){-2.5f, -0.5f, 0, 4})};
    struct {
        const char *op;
        double want[4];
    } cases[] = {
        {"Neg", {2.5, 0.5, 0, -4}},  {"Abs", {2.5, 0.5, 0, 4}}, {"Floor", {-3, -1, 0, 4}},
        {"Ceil", {-2, -0.0, 0, 4}},  {"Sign", {-1, -1, 0, 1}},  {"Relu", {0, 0, 0, 4}},
        {"Round", {-2, -0.0, 0, 4}}, /* half to even */
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        px_tensor *o = eval(node(cases[k].op, 1, 1), f);
        expect_f64(o, 4, cases[k].want);
        px_tensor_free(o);
    }
    px_tensor *s[1] = {tf32(1, (int64_t[]){2}, (float[]){4, 2})};
    px_tensor *o = eval(node("Sqrt", 1, 1), s);
    expect_f64(o, 2, (double[]){2, sqrt(2.0)});
    px_tensor_free(o);
    px_tensor *i[1] = {vec_i64(2, (int64_t[]){-3, 4})};
    o = eval(node("Neg", 1, 1), i);
    expect_i64(o, 2, (int64_t[]){3, -4});
    px_tensor_free(o);
    o = eval(node("Abs", 1, 1), i);
    expect_i64(o, 2, (int64_t[]){3, 4});
    px_tensor_free(o);
    eval_expect(node("Sqrt", 1, 1), i, PX_EVAL_NOT_FOLDABLE); /* Sqrt is float-only */
    free_all(i, 1);
    free_all(s, 1);
    free_all(f, 1);
}

Test(const_eval, reductions) {
    /* 2x3 [[1,2,3],[4,5,6]] */
    px_tensor *in[2] = {ti64(2, (int64_t[]){2, 3}, (int64_t[]){1, 2, 3, 4, 5, 6}),
                        vec_i64(1, (int64_t[]){1})};
    px_node *n = node("ReduceProd", 1, 1);
    px_tensor *o = eval(n, in); /* all axes, keepdims */
    expect_shape(o, 2, (int64_t[]){1, 1});
    expect_i64(o, 1, (int64_t[]){720});
    px_tensor_free(o);
    n = node("ReduceSum", 2, 1); /* opset 13: axes input */
    px_node_set_attr_int(n, "keepdims", 0);
    o = eval(n, in);
    expect_shape(o, 1, (int64_t[]){2});
    expect_i64(o, 2, (int64_t[]){6, 15});
    px_tensor_free(o);
    n = node("ReduceMax", 1, 1);
    px_node_set_attr_ints(n, "axes", 1, (int64_t[]){0});
    o = eval(n, in);
    expect_shape(o, 2, (int64_t[]){1, 3});
    expect_i64(o, 3, (int64_t[]){4, 5, 6});
    px_tensor_free(o);
    n = node("ReduceMin", 1, 1);
    px_node_set_attr_ints(n, "axes", 1, (int64_t[]){-1});
    o = eval(n, in);
    expect_i64(o, 2, (int64_t[]){1, 4});
    px_tensor_free(o);
    free_all(in, 2);
}

Test(const_eval, unsupported_and_oversized_are_not_foldable) {
    px_tensor *in[2] = {tf32(2, (int64_t[]){1, 1}, (float[]){1}),
                        tf32(2, (int64_t[]){1, 1}, (float[]){1})};
    cr_assert_eq(px_const_eval_supports(PX_OP_MatMul), 0);
    eval_expect(node("MatMul", 2, 1), in, PX_EVAL_NOT_FOLDABLE);
    cr_assert_eq(D.errors, 0, "not foldable must not record an error: %s", D.text);
    px_tensor *shape[1] = {vec_i64(2, (int64_t[]){1 << 13, 1 << 12})}; /* 32 Mi elements */
    eval_expect(node("ConstantOfShape", 1, 1), shape, PX_EVAL_NOT_FOLDABLE);
    free_all(shape, 1);
    free_all(in, 2);
}

/* ---------- folding PyTorch-style graphs ---------- */

static px_value *input(const char *name, px_dtype t, int rank, const int64_t *dims,
                       const char *const *syms) {
    px_shape s = px_shape_make(rank, dims);
    for (int i = 0; syms && i < rank; i++)
        if (syms[i]) px_shape_set_sym(&s, i, syms[i]);
    px_value *v = px_graph_add_value(G, name, t, &s, &D);
    cr_assert_not_null(v, "%s", D.text);
    px_graph_add_input(G, v);
    return v;
}

static px_value *cnst(const char *name, px_tensor *t) {
    return px_graph_add_constant(G, name, t);
}

static px_value *init(const char *name, px_tensor *t) {
    px_value *v = px_graph_add_value(G, name, t->dtype, &t->shape, &D);
    cr_assert_not_null(v, "%s", D.text);
    px_graph_add_initializer(G, v, t);
    return v;
}

/* Adds node op(ins...) with one fresh output; *node_out gets the node. */
static px_value *op_n(const char *op, const char *out_name, int n_in, px_value **ins,
                      px_node **node_out) {
    px_value *o = px_graph_new_value(G, out_name, PX_UNDEFINED, NULL);
    px_node *n = px_graph_add_node(G, op, "", out_name, n_in, ins, 1, &o);
    cr_assert_not_null(n);
    if (node_out) *node_out = n;
    return o;
}

static px_value *op1(const char *op, const char *name, px_value *a) {
    return op_n(op, name, 1, (px_value *[]){a}, NULL);
}

static px_value *op2(const char *op, const char *name, px_value *a, px_value *b) {
    return op_n(op, name, 2, (px_value *[]){a, b}, NULL);
}

static int count_op(const char *op) {
    int c = 0;
    for (int i = 0; i < G->n_nodes; i++)
        if (!G->nodes[i]->dead && strcmp(G->nodes[i]->op_type, op) == 0) c++;
    return c;
}

static const char *const SHAPE_OPS[] = {
    "Shape",  "Size",  "Unsqueeze", "Concat", "Cast", "Range",   "ConstantOfShape",
    "Expand", "Trilu", "Equal",     "Where",  "Div",  "Constant"};

static void run_pipeline(int64_t batch, int n_dims, px_dim_binding *dims) {
    px_bindings b = {.batch = batch, .n_dims = n_dims, .dims = dims};
    int rc = px_pipeline_fold(G, &b, &D);
    cr_assert_eq(rc, 0, "pipeline failed:\n%s", D.text);
    cr_assert_eq(px_graph_verify(G, &D), 0, "graph invalid after folding:\n%s", D.text);
}

static const px_tensor *const_data(const px_value *v) {
    cr_assert(v->kind == PX_VALUE_CONSTANT && v->data, "'%s' is not a folded constant", v->name);
    return v->data;
}

TestSuite(fold, .init = setup, .fini = teardown);

/* x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape */
Test(fold, view_batch_minus_one) {
    px_value *x = input("x", PX_F32, 3, (int64_t[]){-1, 3, 4}, (const char *[]){"batch", 0, 0});
    px_value *s = op1("Shape", "s", x);
    px_value *g0 = op2("Gather", "g0", s, cnst("zero", scalar_i64(0)));
    px_value *u = op2("Unsqueeze", "u", g0, cnst("ax0", vec_i64(1, (int64_t[]){0})));
    px_node *cat;
    px_value *c =
        op_n("Concat", "c", 2, (px_value *[]){u, cnst("m1", vec_i64(1, (int64_t[]){-1}))}, &cat);
    px_node_set_attr_int(cat, "axis", 0);
    px_value *y = op2("Reshape", "y", x, c);
    px_graph_add_output(G, y);

    run_pipeline(2, 0, NULL);
    cr_assert_eq(G->n_nodes, 1, "expected only Reshape left, got %d nodes", G->n_nodes);
    cr_assert_str_eq(G->nodes[0]->op_type, "Reshape");
    expect_i64(const_data(G->nodes[0]->inputs[1]), 2, (int64_t[]){2, -1});
    cr_assert_eq(G->outputs[0], y);
    cr_assert_eq(y->shape.rank, 2);
    cr_assert_eq(y->shape.dims[0], 2);
    cr_assert_eq(y->shape.dims[1], 12);
}

/* What torch 1.13 emits for: pos = arange(ids.size(1)).unsqueeze(0).expand_as(ids);
 * h = emb(ids) + emb(pos); mask = ones(seq, seq).triu(); matmul(mask, h). */
Test(fold, arange_expand_as_and_triu_mask) {
    px_value *ids = input("ids", PX_I64, 2, (int64_t[]){-1, -1}, (const char *[]){"batch", "seq"});
    float wv[50 * 8];
    for (int i = 0; i < 50 * 8; i++) wv[i] = (float)i / 100;
    px_value *emb = init("emb.weight", tf32(2, (int64_t[]){50, 8}, wv));

    px_value *shp = op1("Shape", "shape", ids);
    px_value *seq = op2("Gather", "seq", shp, cnst("one", scalar_i64(1)));
    px_node *cast;
    px_value *seqc = op_n("Cast", "seq_cast", 1, (px_value *[]){seq}, &cast);
    px_node_set_attr_int(cast, "to", PX_I64);
    px_value *range =
        op_n("Range", "range", 3,
             (px_value *[]){cnst("r0", scalar_i64(0)), seqc, cnst("r1", scalar_i64(1))}, NULL);
    px_value *pos0 = op2("Unsqueeze", "pos0", range, cnst("ax", vec_i64(1, (int64_t[]){0})));
    px_value *pos = op2("Expand", "pos", pos0, op1("Shape", "shape1", ids));
    px_value *h = op2("Add", "h", op2("Gather", "e1", emb, ids), op2("Gather", "e2", emb, pos));

    px_value *u1 = op2("Unsqueeze", "u1", seq, cnst("ax1", vec_i64(1, (int64_t[]){0})));
    px_value *u2 = op2("Unsqueeze", "u2", seq, cnst("ax2", vec_i64(1, (int64_t[]){0})));
    px_node *cat;
    px_value *cc = op_n("Concat", "cc", 2, (px_value *[]){u1, u2}, &cat);
    px_node_set_attr_int(cat, "axis", 0);
    px_node *cos;
    px_value *ones = op_n("ConstantOfShape", "ones", 1, (px_value *[]){cc}, &cos);
    px_node_set_attr_tensor(cos, "value", tf32(1, (int64_t[]){1}, (float[]){1}));
    px_value *tri = op2("Trilu", "mask", ones, cnst("k", scalar_i64(0)));
    px_value *mm = op2("MatMul", "mm", tri, h);
    px_graph_add_output(G, mm);

    run_pipeline(2, 1, (px_dim_binding[]){{"seq", 5}});
    for (size_t k = 0; k < sizeof SHAPE_OPS / sizeof *SHAPE_OPS; k++)
        cr_assert_eq(count_op(SHAPE_OPS[k]), 0, "%s left after folding", SHAPE_OPS[k]);
    cr_assert_eq(count_op("Gather"), 2, "the embedding look-ups are real compute");
    cr_assert_eq(G->n_nodes, 4, "expected Gather(emb), Gather(emb), Add, MatMul; got %d nodes",
                 G->n_nodes);
    /* The position ids became a constant [2,5] = [[0..4],[0..4]]. */
    px_value *posv = px_graph_find_value(G, "pos");
    cr_assert_not_null(posv);
    expect_shape(const_data(posv), 2, (int64_t[]){2, 5});
    expect_i64(posv->data, 10, (int64_t[]){0, 1, 2, 3, 4, 0, 1, 2, 3, 4});
    px_value *m = px_graph_find_value(G, "mask");
    expect_shape(const_data(m), 2, (int64_t[]){5, 5});
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            cr_assert_eq(px_tensor_get_f64(m->data, i * 5 + j), j >= i ? 1.0 : 0.0);
    cr_assert_eq(emb->kind, PX_VALUE_INITIALIZER, "the trainable weight must stay a weight");
    cr_assert_eq(mm->shape.rank, 3);
    cr_assert_eq(mm->shape.dims[0], 2);
    cr_assert_eq(mm->shape.dims[1], 5);
    cr_assert_eq(mm->shape.dims[2], 8);
    cr_assert_eq(ids->shape.dims[0], 2);
    cr_assert_eq(ids->shape.dims[1], 5);
}

/* Reshape to (2, x.numel() / 2) via Size -> Div -> Unsqueeze -> Concat. */
Test(fold, size_based_reshape) {
    px_value *x = input("x", PX_F32, 2, (int64_t[]){-1, 6}, (const char *[]){"N", 0});
    px_value *half = op2("Div", "half", op1("Size", "size", x), cnst("two", scalar_i64(2)));
    px_value *u = op2("Unsqueeze", "u", half, cnst("ax", vec_i64(1, (int64_t[]){0})));
    px_node *cat;
    px_value *c =
        op_n("Concat", "c", 2, (px_value *[]){cnst("lead", vec_i64(1, (int64_t[]){2})), u}, &cat);
    px_node_set_attr_int(cat, "axis", 0);
    px_value *y = op2("Reshape", "y", x, c);
    px_graph_add_output(G, y);
    run_pipeline(4, 0, NULL);
    cr_assert_eq(G->n_nodes, 1);
    expect_i64(const_data(G->nodes[0]->inputs[1]), 2, (int64_t[]){2, 12});
    cr_assert_eq(y->shape.dims[0], 2);
    cr_assert_eq(y->shape.dims[1], 12);
}

/* torch's expand with -1: Where(Equal(target, -1), 1, target) */
Test(fold, equal_where_expand_target) {
    px_value *x = input("x", PX_F32, 2, (int64_t[]){-1, 1}, (const char *[]){"batch", 0});
    px_value *target = cnst("target", vec_i64(2, (int64_t[]){-1, 4}));
    px_value *eq = op2("Equal", "eq", target, cnst("m1", vec_i64(2, (int64_t[]){-1, -1})));
    px_value *sel =
        op_n("Where", "sel", 3,
             (px_value *[]){eq, cnst("ones", vec_i64(2, (int64_t[]){1, 1})), target}, NULL);
    px_value *y = op2("Expand", "y", x, sel);
    px_graph_add_output(G, y);
    run_pipeline(3, 0, NULL);
    cr_assert_eq(G->n_nodes, 1);
    cr_assert_str_eq(G->nodes[0]->op_type, "Expand");
    expect_i64(const_data(G->nodes[0]->inputs[1]), 2, (int64_t[]){1, 4});
    cr_assert_eq(y->shape.dims[0], 3);
    cr_assert_eq(y->shape.dims[1], 4);
}

Test(fold, trainable_weights_are_not_folded_but_int_initializers_are) {
    px_value *x = input("x", PX_F32, 2, (int64_t[]){3, 2}, NULL);
    px_value *w = init("W", tf32(2, (int64_t[]){2, 3}, (float[]){1, 2, 3, 4, 5, 6}));
    px_value *wt = op1("Transpose", "wt", w);
    px_value *shape = init("shape", vec_i64(2, (int64_t[]){3, 2}));
    px_value *cv = cnst("cv", tf32(1, (int64_t[]){6}, (float[]){6, 5, 4, 3, 2, 1}));
    px_value *r = op2("Reshape", "r", cv, shape);
    px_value *y = op2("Add", "y", op2("Add", "xw", x, wt), r);
    px_graph_add_output(G, y);
    run_pipeline(0, 0, NULL);
    cr_assert_eq(count_op("Transpose"), 1, "Transpose of a trainable weight was folded");
    cr_assert_eq(count_op("Reshape"), 0);
    px_value *rv = px_graph_find_value(G, "r");
    expect_shape(const_data(rv), 2, (int64_t[]){3, 2});
    expect_f64(rv->data, 6, (double[]){6, 5, 4, 3, 2, 1});
    cr_assert_null(px_graph_find_value(G, "shape"), "unused int initializer should be removed");
    cr_assert_null(px_graph_find_value(G, "cv"), "unused constant should be removed");
    cr_assert_not_null(px_graph_find_value(G, "W"));
}

Test(fold, folded_graph_output_keeps_its_name) {
    px_value *x = input("x", PX_F32, 2, (int64_t[]){-1, 5}, (const char *[]){"batch", 0});
    px_value *n = op1("Size", "n_elems", x);
    px_graph_add_output(G, n);
    px_value *y = op1("Relu", "y", x);
    px_graph_add_output(G, y);
    run_pipeline(3, 0, NULL);
    cr_assert_eq(G->n_outputs, 2);
    cr_assert_str_eq(G->outputs[0]->name, "n_elems");
    expect_i64(const_data(G->outputs[0]), 1, (int64_t[]){15});
    cr_assert_eq(G->n_nodes, 1);
}

Test(fold, dce_removes_dead_nodes_and_keeps_unused_weights) {
    px_value *x = input("x", PX_F32, 1, (int64_t[]){4}, NULL);
    init("unused_weight", tf32(1, (int64_t[]){1}, (float[]){1}));
    init("unused_ints", vec_i64(1, (int64_t[]){1}));
    px_value *dead = op1("Relu", "dead", op1("Neg", "dead0", x));
    (void)dead;
    px_value *y = op1("Abs", "y", x);
    px_graph_add_output(G, y);
    cr_assert_eq(px_pass_dce(G, &D), 0, "%s", D.text);
    cr_assert_eq(G->n_nodes, 1);
    cr_assert_str_eq(G->nodes[0]->op_type, "Abs");
    cr_assert_null(px_graph_find_value(G, "dead"));
    cr_assert_null(px_graph_find_value(G, "unused_ints"));
    cr_assert_not_null(px_graph_find_value(G, "unused_weight"));
    cr_assert_eq(G->n_inits, 1);
    cr_assert_eq(px_graph_verify(G, &D), 0, "%s", D.text);
}

Test(fold, data_dependent_shape_is_reported) {
    px_value *x = input("x", PX_I64, 1, (int64_t[]){-1}, (const char *[]){"batch"});
    px_node *rm;
    px_value *mx = op_n("ReduceMax", "mx", 1, (px_value *[]){x}, &rm);
    px_node_set_attr_int(rm, "keepdims", 0);
    px_value *r =
        op_n("Range", "dyn_range", 3,
             (px_value *[]){cnst("r0", scalar_i64(0)), mx, cnst("r1", scalar_i64(1))}, NULL);
    px_graph_add_output(G, r);
    px_bindings b = {.batch = 2};
    cr_assert_eq(px_pipeline_fold(G, &b, &D), -1);
    cr_assert(strstr(D.text, "dyn_range") != NULL && strstr(D.text, "Range") != NULL,
              "message should name the value and its producer: %s", D.text);
}

Test(fold, invalid_constant_reshape_is_an_error) {
    px_value *x = input("x", PX_F32, 1, (int64_t[]){-1}, (const char *[]){"batch"});
    px_value *c = cnst("c", tf32(1, (int64_t[]){6}, (float[6]){0}));
    px_value *y = op2("Reshape", "bad_reshape", c, cnst("s", vec_i64(1, (int64_t[]){4})));
    px_graph_add_output(G, op2("Add", "y", y, x));
    px_bindings b = {.batch = 4};
    cr_assert_eq(px_pipeline_fold(G, &b, &D), -1);
    cr_assert(strstr(D.text, "bad_reshape") != NULL, "%s", D.text);
}

/* ---------- ONNX backend test models (pytorch-converted) ---------- */

/* Every model that imports must fold to fully static shapes, and each graph
 * output's shape must match the reference output tensor shipped with it. */
Test(fold, pytorch_converted_models_fold_to_static) {
    const char *root = PX_TESTDATA_DIR "/pytorch-converted";
    DIR *dir = opendir(root);
    cr_assert_not_null(dir, "%s is missing (package libonnx-testdata)", root);
    int total = 0, imported = 0, folded = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s/model.onnx", root, e->d_name);
        total++;
        px_diag d;
        px_diag_init(&d);
        px_graph *g = px_onnx_load_file(path, NULL, &d);
        if (!g) continue; /* unsupported ops: the importer's business */
        imported++;
        px_bindings b = {0};
        int rc = px_pipeline_fold(g, &b, &d);
        if (rc == 0) rc = px_graph_verify(g, &d);
        cr_expect_eq(rc, 0, "%s did not fold:\n%s", e->d_name, d.text);
        for (int k = 0; rc == 0 && k < g->n_outputs; k++) {
            char ref[1100];
            snprintf(ref, sizeof ref, "%s/%s/test_data_set_0/output_%d.pb", root, e->d_name, k);
            px_tensor *t = px_onnx_load_tensor_file(ref, NULL, &d);
            if (!t) continue;
            const px_shape *s = &g->outputs[k]->shape;
            int same = s->rank == t->shape.rank;
            for (int i = 0; same && i < s->rank; i++) same = s->dims[i] == t->shape.dims[i];
            char a[128], r[128];
            cr_expect(same, "%s output %d: folded shape %s, reference %s", e->d_name, k,
                      px_shape_str(s, a, sizeof a), px_shape_str(&t->shape, r, sizeof r));
            if (!same) rc = -1;
            px_tensor_free(t);
        }
        if (rc == 0) folded++;
        px_graph_free(g);
    }
    closedir(dir);
    cr_log_info("pytorch-converted: %d models, %d import, %d fold to fully static", total, imported,
                folded);
    cr_assert_gt(imported, 50, "only %d of %d models imported", imported, total);
    cr_assert_eq(folded, imported);
}
