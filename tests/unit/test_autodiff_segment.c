/* ai.parallax SegmentReduce (nn.EmbeddingBag's reduce, ir/control_flow.c):
 * forward values against a direct computation, gradients of every mode
 * against finite differences (overlapping, empty and negative-bound
 * segments), and the DLRM example, whose EmbeddingBag tables must come out
 * of autodiff as row sets. */
#include "gradcheck.h"
#include "interp.h"
#include "passes.h"
#include "plan.h"
#include "shape_infer.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#define ROWS 6
#define COLS 3
#define SEGS 4
/* segment 1 is empty, 2 overlaps 0 and 3, 3 starts at -3 (= row 3) */
static const int64_t starts[SEGS] = {0, 2, 1, -3};
static const int64_t ends[SEGS] = {3, 2, 6, 6};

static px_value *ints(tg *t, const char *name, const int64_t *v) {
    px_shape s = px_shape_make(1, (int64_t[]){SEGS});
    px_tensor *x = px_tensor_new(PX_I64, &s, NULL);
    memcpy(x->data, v, sizeof(int64_t) * SEGS);
    return px_graph_add_constant(t->g, name, x);
}

/* loss = sum(R * SegmentReduce(x, starts, ends)); the reduction is output 1. */
static tg *segment_graph(const char *mode, px_value **x_out) {
    tg *t = tg_new();
    int64_t dims[2] = {ROWS, COLS};
    px_shape s = px_shape_make(2, dims);
    px_value *x = px_graph_add_value(t->g, "x", PX_F64, &s, &t->d);
    px_graph_add_initializer(t->g, x, tg_rand_tensor(PX_F64, 2, dims, -1, 1));
    px_value *in[3] = {x, ints(t, "starts", starts), ints(t, "ends", ends)};
    px_value *y0 = px_graph_new_value(t->g, "segments", PX_UNDEFINED, NULL);
    px_node *n =
        px_graph_add_node(t->g, "SegmentReduce", PX_DOMAIN_PARALLAX, "segments", 3, in, 1, &y0);
    px_node_set_attr_string(n, "mode", mode);
    px_value *y = tg_out(t, n);
    int64_t ydims[2] = {SEGS, COLS};
    px_value *r = px_graph_add_constant(t->g, "R", tg_rand_tensor(PX_F64, 2, ydims, -1, 1));
    px_value *m = tg_op2(t, "Mul", y, r);
    px_node *sum = tg_node(t, "ReduceSum", 1, &m, 1);
    px_node_set_attr_int(sum, "keepdims", 0);
    px_graph_add_output(t->g, tg_out(t, sum));
    px_graph_add_output(t->g, y);
    *x_out = x;
    return t;
}

static double expected(const double *x, int mode, int seg, int col) {
    int64_t s = starts[seg] < 0 ? starts[seg] + ROWS : starts[seg], e = ends[seg];
    if (e <= s) return 0;
    double acc = mode == 2 ? -INFINITY : 0;
    for (int64_t j = s; j < e; j++) {
        double v = x[j * COLS + col];
        acc = mode == 2 ? (v > acc ? v : acc) : acc + v;
    }
    return mode == 1 ? acc / (double)(e - s) : acc;
}

static void mode_case(const char *mode, int code) {
    px_value *x;
    tg *t = segment_graph(mode, &x);
    cr_assert_eq(px_infer_shapes(t->g, &t->d), 0, "%s", t->d.text);
    cr_assert_eq(t->g->outputs[1]->shape.dims[0], SEGS);
    px_plan plan;
    cr_assert_eq(px_plan_build(t->g, &plan, &t->d), 0, "%s", t->d.text);
    px_tensor **outs = NULL;
    tg_run_loss(t, &plan, &outs);
    const double *xv = x->data->data, *yv = outs[1]->data;
    for (int m = 0; m < SEGS; m++)
        for (int c = 0; c < COLS; c++)
            cr_assert_float_eq(yv[m * COLS + c], expected(xv, code, m, c), 1e-12,
                               "%s segment %d col %d", mode, m, c);
    tg_free_outs(t, outs);
    px_plan_free(&plan);
    tg_check_grads(t, 1, 0, 64, 1e-6, 1e-8, 1e-6);
    tg_free(t);
}

Test(segment_reduce, sum) {
    mode_case("sum", 0);
}
Test(segment_reduce, mean) {
    mode_case("mean", 1);
}
Test(segment_reduce, max) {
    mode_case("max", 2);
}

/* Three EmbeddingBag tables (row sets) and eight dense MLP variables. */
Test(segment_reduce, example_dlrm) {
    tg *t = tg_load_example("dlrm", 4);
    tg_check_grads(t, 11, 3, 8, 1e-6, 1e-7, 1e-5);
    tg_free(t);
}
