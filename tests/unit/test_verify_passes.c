/* px_verify_after (passes/pipeline.c): with PX_VERIFY_PASSES=1 (as the test
 * suite runs) the graph is verified after a pass, and an inconsistent graph
 * is an error that names the pass; the fold and training pipelines run
 * clean with it on. */
#include "passes.h"
#include "train.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* x -> Relu -> y -> Add(y, w) -> loss (ReduceSum) */
static px_graph *small_graph(void) {
    px_graph *g = px_graph_new("g");
    int64_t dims[2] = {2, 3};
    px_shape s = px_shape_make(2, dims);
    px_value *x = px_graph_add_value(g, "x", PX_F32, &s, NULL);
    px_graph_add_input(g, x);
    px_value *w = px_graph_add_value(g, "w", PX_F32, &s, NULL);
    px_graph_add_initializer(g, w, px_tensor_new(PX_F32, &s, NULL));
    px_value *y = px_graph_add_value(g, "y", PX_UNDEFINED, NULL, NULL);
    px_value *z = px_graph_add_value(g, "z", PX_UNDEFINED, NULL, NULL);
    px_value *loss = px_graph_add_value(g, "loss", PX_UNDEFINED, NULL, NULL);
    px_graph_add_node(g, "Relu", "", "relu", 1, &x, 1, &y);
    px_value *ins[2] = {y, w};
    px_graph_add_node(g, "Add", "", "add", 2, ins, 1, &z);
    px_node *r = px_graph_add_node(g, "ReduceSum", "", "sum", 1, &z, 1, &loss);
    px_node_set_attr_int(r, "keepdims", 0);
    px_graph_add_output(g, loss);
    return g;
}

Test(verify_passes, names_the_pass_that_broke_the_graph) {
    setenv("PX_VERIFY_PASSES", "1", 1);
    px_graph *g = small_graph();
    px_diag d;
    px_diag_init(&d);
    cr_assert_eq(px_verify_after(g, "frob", &d), 0, "%s", d.text);
    /* a node appended after its reader: the order a broken pass leaves */
    px_value *x = px_graph_find_value(g, "x"), *y = px_graph_find_value(g, "y");
    px_value *y2 = px_graph_new_value(g, "y", PX_F32, NULL);
    px_graph_add_node(g, "Neg", "", "neg", 1, &x, 1, &y2);
    px_value_replace_uses(g, y, y2);
    cr_assert_eq(px_verify_after(g, "frob", &d), -1);
    cr_assert(strstr(d.text, "after the pass frob"), "%s", d.text);
    cr_assert(strstr(d.text, "before it is produced"), "%s", d.text);
    px_graph_free(g);
}

Test(verify_passes, pipelines_run_clean_with_verification_on) {
    setenv("PX_VERIFY_PASSES", "1", 1);
    px_graph *g = small_graph();
    px_diag d;
    px_diag_init(&d);
    px_bindings b = {0};
    px_train_config cfg = {.lr = 0.1, .bucket_bytes = 1 << 20};
    px_train_plan plan = {0};
    cr_assert_eq(px_pipeline_train(g, &b, &cfg, 1, &plan, &d), 0, "%s", d.text);
    cr_assert_eq(g->batch, 2, "the batch is bound with the input shapes");
    cr_assert_eq(plan.n_vars, 1);
    px_train_plan_free(&plan);
    px_graph_free(g);
}
