/* The gradient rule of InstanceNormalization (passes/grad_instancenorm.c)
 * against central finite differences: a tiny float64 graph whose loss is
 * sum(R * tanh(InstanceNormalization(x, scale, B))) with a random constant
 * R, differentiated by the autodiff pass, lowered and run in-process; every
 * coordinate of the gradients of x, scale and B is compared. Ranks 3, 4
 * and 5 (one, two and three spatial dims), and a non-default epsilon. */
#include "gradcheck.h"

#include <criterion/criterion.h>

static void instancenorm_case(int rank, const int64_t *dims, double eps) {
    tg *t = tg_new();
    /* trainable float64 initializers: x, then scale and B of shape [C] */
    static const char *const names[3] = {"x", "scale", "B"};
    static const double lo[3] = {-2, 0.5, -1}, hi[3] = {2, 1.5, 1};
    px_value *in[3];
    for (int i = 0; i < 3; i++) {
        int r = i == 0 ? rank : 1;
        const int64_t *ds = i == 0 ? dims : dims + 1;
        px_shape shape = px_shape_make(r, ds);
        in[i] = px_graph_add_value(t->g, names[i], PX_F64, &shape, &t->d);
        cr_assert_not_null(in[i]);
        px_graph_add_initializer(t->g, in[i], tg_rand_tensor(PX_F64, r, ds, lo[i], hi[i]));
    }
    px_node *n = tg_node(t, "InstanceNormalization", 3, in, 1);
    if (eps > 0) px_node_set_attr_float(n, "epsilon", (float)eps);
    px_value *y = tg_op1(t, "Tanh", tg_out(t, n));
    px_value *r = px_graph_add_constant(t->g, "R", tg_rand_tensor(PX_F64, rank, dims, -1, 1));
    px_node *s = tg_node(t, "ReduceSum", 1, (px_value *[]){tg_op2(t, "Mul", y, r)}, 1);
    px_node_set_attr_int(s, "keepdims", 0);
    px_graph_add_output(t->g, tg_out(t, s));
    tg_fd_err e = tg_check_grads(t, 3, 0, 300, 1e-6, 1e-6, 1e-5);
    cr_log_info("rank %d: max |autodiff - fd| %.3g (relative %.3g)", rank, e.abs, e.rel);
    tg_free(t);
}

Test(autodiff_instancenorm, rank3_one_spatial_dim) {
    instancenorm_case(3, (int64_t[]){2, 3, 5}, 0);
}
Test(autodiff_instancenorm, rank4_epsilon) {
    instancenorm_case(4, (int64_t[]){2, 2, 3, 2}, 1e-3);
}
Test(autodiff_instancenorm, rank5_three_spatial_dims) {
    instancenorm_case(5, (int64_t[]){1, 2, 2, 2, 3}, 0);
}
