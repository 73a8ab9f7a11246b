/* Finite-difference checks of the gradient rules of grad_activation.c,
 * grad_reduce.c and grad_layout.c: for each op, loss = sum(R * op(w, ...))
 * with random w and R, autodiff against central differences in float64.
 * Inputs are drawn away from the kinks of the piecewise ops (a difference
 * across a kink measures no derivative). */
#include "autodiff.h"
#include "gradcheck.h"
#include "passes.h"
#include "shape_infer.h"

#include <criterion/criterion.h>
#include <string.h>

static px_value *weight(tg *t, const char *name, int rank, const int64_t *dims, double lo,
                        double hi) {
    px_shape s = px_shape_make(rank, dims);
    px_value *w = px_graph_add_value(t->g, name, PX_F64, &s, &t->d);
    px_graph_add_initializer(t->g, w, tg_rand_tensor(PX_F64, rank, dims, lo, hi));
    return w;
}

static px_value *ints(tg *t, int n, const int64_t *v) {
    int64_t len = n;
    px_shape s = px_shape_make(1, &len);
    px_tensor *x = px_tensor_new(PX_I64, &s, &t->d);
    for (int i = 0; i < n; i++) px_tensor_set_i64(x, i, v[i]);
    return px_graph_add_constant(t->g, "c", x);
}

/* loss = sum(R * y) (y's gradient is R); checks every float initializer. */
static void check_loss_of(tg *t, px_value *y) {
    px_value *r = px_graph_add_constant(
        t->g, "R", tg_rand_tensor(PX_F64, y->shape.rank, y->shape.dims, -1, 1));
    px_value *m = tg_op2(t, "Mul", y, r);
    px_node *sum = tg_node(t, "ReduceSum", 1, &m, 1);
    px_node_set_attr_int(sum, "keepdims", 0);
    px_graph_add_output(t->g, tg_out(t, sum));
    tg_fd_err e = tg_check_grads(t, -1, 0, 64, 1e-6, 1e-7, 1e-6);
    cr_assert_lt(e.rel, 1e-5);
    tg_free(t);
}

/* op(w) on w uniform in [lo, hi), with one float attribute when attr != NULL. */
static void unary(const char *op, double lo, double hi, const char *attr, double v) {
    tg *t = tg_new();
    int64_t dims[2] = {3, 5};
    px_value *w = weight(t, "w", 2, dims, lo, hi);
    px_node *n = tg_node(t, op, 1, &w, 1);
    if (attr) px_node_set_attr_float(n, attr, v);
    check_loss_of(t, tg_out(t, n));
}

Test(grad_activation, inverse_trig) {
    unary("Asin", -0.9, 0.9, NULL, 0);
    unary("Acos", -0.9, 0.9, NULL, 0);
    unary("Atan", -3, 3, NULL, 0);
    unary("Asinh", -3, 3, NULL, 0);
    unary("Acosh", 1.2, 3, NULL, 0);
    unary("Atanh", -0.9, 0.9, NULL, 0);
}
Test(grad_activation, hyperbolic_and_tan) {
    unary("Sinh", -2, 2, NULL, 0);
    unary("Cosh", -2, 2, NULL, 0);
    unary("Tan", -1.2, 1.2, NULL, 0);
}
Test(grad_activation, smooth_activations) {
    unary("Softsign", -3, 3, NULL, 0);
    unary("Mish", -3, 3, NULL, 0);
    unary("Gelu", -3, 3, NULL, 0);
    tg *t = tg_new();
    int64_t dims[1] = {12};
    px_value *w = weight(t, "w", 1, dims, -3, 3);
    px_node *n = tg_node(t, "Gelu", 1, &w, 1);
    px_node_set_attr_string(n, "approximate", "tanh");
    check_loss_of(t, tg_out(t, n));
}
Test(grad_activation, piecewise_activations) {
    unary("Elu", -2, 2, "alpha", 0.7);
    unary("Celu", -2, 2, "alpha", 1.3);
    unary("Selu", -2, 2, NULL, 0);
    unary("HardSigmoid", -4, 4, NULL, 0);
    unary("HardSwish", -4, 4, NULL, 0);
    unary("ThresholdedRelu", -2, 2, "alpha", 0.5);
    unary("Shrink", -2, 2, "lambd", 0.6);
}

Test(grad_activation, prelu_input_and_slope) {
    tg *t = tg_new();
    int64_t xd[2] = {3, 4}, sd[1] = {4};
    px_value *x = weight(t, "x", 2, xd, -1, 1), *s = weight(t, "slope", 1, sd, 0, 0.5);
    check_loss_of(t, tg_op2(t, "PRelu", x, s));
}

Test(grad_activation, castlike) {
    tg *t = tg_new();
    int64_t xd[2] = {3, 4};
    px_value *x = weight(t, "x", 2, xd, -1, 1);
    px_shape sc = px_shape_scalar();
    px_value *like = px_graph_add_constant(t->g, "like", px_tensor_new(PX_F64, &sc, &t->d));
    check_loss_of(t, tg_op2(t, "CastLike", x, like));
}

/* op(w, axes) on w [3, 4, 5] uniform in [lo, hi). */
static void reduce(const char *op, int n_axes, const int64_t *axes, int keepdims, double lo,
                   double hi) {
    tg *t = tg_new();
    int64_t dims[3] = {3, 4, 5};
    px_value *w = weight(t, "w", 3, dims, lo, hi);
    px_node *n = tg_node(t, op, 1, &w, 1);
    if (n_axes) px_node_set_attr_ints(n, "axes", n_axes, axes);
    px_node_set_attr_int(n, "keepdims", keepdims);
    check_loss_of(t, tg_out(t, n));
}

Test(grad_reduce, every_reduction_over_one_axis_and_two) {
    const char *ops[] = {"ReduceL1",  "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp",
                         "ReduceMax", "ReduceMin", "ReduceProd",   "ReduceSumSquare"};
    int64_t one[1] = {1}, two[2] = {0, -1};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        /* positive inputs keep LogSum and Prod away from log(<=0) and /0 */
        reduce(ops[i], 1, one, 0, 0.5, 1.5);
        reduce(ops[i], 2, two, 1, 0.5, 1.5);
        reduce(ops[i], 0, NULL, 0, 0.5, 1.5);
    }
    reduce("ReduceL1", 1, one, 1, -1, 1);
    reduce("ReduceMax", 2, two, 0, -1, 1);
}

/* ReduceProd over groups holding no zero, one zero and two zeros: the
 * product is multilinear, so central differences are exact there too. */
Test(grad_reduce, prod_with_zeros) {
    tg *t = tg_new();
    int64_t dims[2] = {3, 4}, axis = 1;
    px_shape s = px_shape_make(2, dims);
    px_value *w = px_graph_add_value(t->g, "w", PX_F64, &s, &t->d);
    px_tensor *wt = tg_rand_tensor(PX_F64, 2, dims, 0.5, 1.5);
    px_tensor_set_f64(wt, 5, 0.0); /* row 1: one zero */
    px_tensor_set_f64(wt, 8, 0.0); /* row 2: two zeros */
    px_tensor_set_f64(wt, 10, 0.0);
    px_graph_add_initializer(t->g, w, wt);
    px_node *n = tg_node(t, "ReduceProd", 1, &w, 1);
    px_node_set_attr_ints(n, "axes", 1, &axis);
    px_node_set_attr_int(n, "keepdims", 0);
    check_loss_of(t, tg_out(t, n));
}

Test(grad_layout, split_with_an_unused_output) {
    tg *t = tg_new();
    int64_t dims[2] = {4, 6}, parts[3] = {1, 2, 3};
    px_value *in[2] = {weight(t, "w", 2, dims, -1, 1), ints(t, 3, parts)};
    px_node *n = tg_node(t, "Split", 2, in, 3);
    px_node_set_attr_int(n, "axis", 1);
    tg_out(t, n);
    /* output 1 feeds nothing: its gradient is zeros */
    check_loss_of(t, tg_op2(t, "Add", n->outputs[0], n->outputs[2]));
}

Test(grad_layout, split_axis0_all_used) {
    tg *t = tg_new();
    int64_t dims[2] = {4, 3}, parts[2] = {2, 2};
    px_value *in[2] = {weight(t, "w", 2, dims, -1, 1), ints(t, 2, parts)};
    px_node *n = tg_node(t, "Split", 2, in, 2);
    tg_out(t, n);
    check_loss_of(t, tg_op2(t, "Mul", n->outputs[0], n->outputs[1]));
}

static void tile(const int64_t *reps) {
    tg *t = tg_new();
    int64_t dims[3] = {2, 3, 2};
    px_value *in[2] = {weight(t, "w", 3, dims, -1, 1), ints(t, 3, reps)};
    check_loss_of(t, tg_out(t, tg_node(t, "Tile", 2, in, 1)));
}

Test(grad_layout, tile) {
    tile((int64_t[]){2, 1, 3});
    tile((int64_t[]){1, 2, 1});
    tile((int64_t[]){1, 1, 1});
}

Test(grad_layout, pad_constant) {
    tg *t = tg_new();
    int64_t dims[2] = {2, 3}, pads[4] = {1, 0, 2, 1};
    px_value *in[2] = {weight(t, "w", 2, dims, -1, 1), ints(t, 4, pads)};
    check_loss_of(t, tg_out(t, tg_node(t, "Pad", 2, in, 1)));
}

static void pad_mode(const char *mode, const int64_t *pads) {
    tg *t = tg_new();
    int64_t dims[2] = {3, 4};
    px_value *in[2] = {weight(t, "w", 2, dims, -1, 1), ints(t, 4, pads)};
    px_node *n = tg_node(t, "Pad", 2, in, 1);
    px_node_set_attr_string(n, "mode", mode);
    check_loss_of(t, tg_out(t, n));
}

Test(grad_layout, pad_reflect_edge_wrap) {
    pad_mode("reflect", (int64_t[]){2, 1, 1, 3});
    pad_mode("edge", (int64_t[]){2, 0, 1, 3});
    pad_mode("wrap", (int64_t[]){1, 2, 3, 4});     /* wraps more than once along axis 1 */
    pad_mode("reflect", (int64_t[]){-1, 1, 0, 2}); /* a negative pad crops */
}

Test(grad_layout, pad_negative_constant_is_refused_by_name) {
    tg *t = tg_new();
    int64_t dims[2] = {2, 3}, pads[4] = {-1, 0, 1, 0};
    px_value *in[2] = {weight(t, "w", 2, dims, -1, 1), ints(t, 4, pads)};
    px_value *y = tg_out(t, tg_node(t, "Pad", 2, in, 1));
    px_node *sum = tg_node(t, "ReduceSum", 1, &y, 1);
    px_node_set_attr_int(sum, "keepdims", 0);
    px_graph_add_output(t->g, tg_out(t, sum));
    px_grads gr;
    cr_assert_eq(px_pass_autodiff(t->g, NULL, &gr, &t->d), -1);
    cr_assert(strstr(t->d.text, "negative pads"), "%s", t->d.text);
    tg_free(t);
}

Test(grad_layout, trilu) {
    for (int upper = 0; upper <= 1; upper++) {
        tg *t = tg_new();
        int64_t dims[2] = {4, 5}, k = upper ? -1 : 1;
        px_value *in[2] = {weight(t, "w", 2, dims, -1, 1), ints(t, 1, &k)};
        px_node *n = tg_node(t, "Trilu", 2, in, 1);
        px_node_set_attr_int(n, "upper", upper);
        check_loss_of(t, tg_out(t, n));
    }
}

Test(grad_layout, cumsum_every_direction) {
    for (int mode = 0; mode < 4; mode++) {
        tg *t = tg_new();
        int64_t dims[2] = {3, 5}, axis = mode & 1 ? 0 : 1;
        px_value *in[2] = {weight(t, "w", 2, dims, -1, 1), ints(t, 1, &axis)};
        px_node *n = tg_node(t, "CumSum", 2, in, 1);
        px_node_set_attr_int(n, "exclusive", mode >> 1);
        px_node_set_attr_int(n, "reverse", mode & 1);
        check_loss_of(t, tg_out(t, n));
    }
}
