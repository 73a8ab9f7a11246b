/* px_pass_bind_shapes: --shape, --dim and --batch bindings and their errors. */
#include "graph.h"
#include "passes.h"

#include <criterion/criterion.h>
#include <string.h>

static px_graph *G;
static px_diag D;

static void setup(void) {
    G = px_graph_new("t");
    px_diag_init(&D);
}

static void teardown(void) {
    px_graph_free(G);
}

TestSuite(bind, .init = setup, .fini = teardown);

/* Shape from a compact spec: dims >= 0 static, -1 unknown, syms[i] names a dim. */
static px_shape shape(int rank, const int64_t *dims, const char *const *syms) {
    px_shape s = px_shape_make(rank, dims);
    for (int i = 0; syms && i < rank; i++)
        if (syms[i]) px_shape_set_sym(&s, i, syms[i]);
    return s;
}

static px_value *input(const char *name, px_shape s) {
    px_value *v = px_graph_add_value(G, name, PX_F32, &s, &D);
    cr_assert_not_null(v, "%s", D.text);
    px_graph_add_input(G, v);
    return v;
}

static void expect_dims(const px_value *v, int rank, const int64_t *dims) {
    cr_assert_eq(v->shape.rank, rank, "'%s' has rank %d", v->name, v->shape.rank);
    for (int i = 0; i < rank; i++)
        cr_assert_eq(v->shape.dims[i], dims[i], "'%s' dim %d is %lld, expected %lld", v->name, i,
                     (long long)v->shape.dims[i], (long long)dims[i]);
}

static void expect_error(const px_bindings *b, const char *a, const char *c) {
    cr_assert_eq(px_pass_bind_shapes(G, b, &D), -1, "binding should fail");
    cr_assert(strstr(D.text, a) != NULL, "missing '%s' in: %s", a, D.text);
    if (c) cr_assert(strstr(D.text, c) != NULL, "missing '%s' in: %s", c, D.text);
}

Test(bind, batch_binds_leading_dim_and_its_name_everywhere) {
    px_value *x = input("x", shape(2, (int64_t[]){-1, 3}, (const char *[]){"N", 0}));
    px_value *m = input("m", shape(3, (int64_t[]){4, -1, -1}, (const char *[]){0, "N", 0}));
    px_value *anon = input("anon", shape(2, (int64_t[]){-1, 2}, NULL));
    /* m's dim 2 is unnamed and not leading: bind it explicitly */
    px_value *y =
        px_graph_add_value(G, "y", PX_F32, &(px_shape){0}, &D); /* declared output shape below */
    y->shape = shape(2, (int64_t[]){-1, -1}, (const char *[]){"N", "other"});
    px_graph_add_output(G, y);
    px_shape_binding sb = {"m", shape(3, (int64_t[]){4, 8, 6}, NULL)};
    px_bindings b = {.batch = 8, .n_shapes = 1, .shapes = &sb};
    cr_assert_eq(px_pass_bind_shapes(G, &b, &D), 0, "%s", D.text);
    expect_dims(x, 2, (int64_t[]){8, 3});
    expect_dims(m, 3, (int64_t[]){4, 8, 6});
    expect_dims(anon, 2, (int64_t[]){8, 2});
    /* declared output: N replaced, the unrelated symbol kept */
    cr_assert_eq(y->shape.dims[0], 8);
    cr_assert_eq(y->shape.dims[1], -1);
    cr_assert_str_eq(px_shape_sym(&y->shape, 1), "other");
}

Test(bind, named_dims_bind_every_occurrence) {
    px_value *ids = input("ids", shape(2, (int64_t[]){-1, -1}, (const char *[]){"batch", "seq"}));
    px_value *mask =
        input("mask", shape(3, (int64_t[]){-1, -1, -1}, (const char *[]){"batch", "seq", "seq"}));
    px_dim_binding dims[] = {{"seq", 7}, {"batch", 2}};
    px_bindings b = {.n_dims = 2, .dims = dims};
    cr_assert_eq(px_pass_bind_shapes(G, &b, &D), 0, "%s", D.text);
    expect_dims(ids, 2, (int64_t[]){2, 7});
    expect_dims(mask, 3, (int64_t[]){2, 7, 7});
    cr_assert_null(px_shape_sym(&ids->shape, 1));
}

Test(bind, explicit_shape_binds_its_symbols_for_other_inputs) {
    px_value *a = input("a", shape(2, (int64_t[]){-1, 4}, (const char *[]){"B", 0}));
    px_value *c = input("c", shape(1, (int64_t[]){-1}, (const char *[]){"B"}));
    px_shape_binding sb = {"a", shape(2, (int64_t[]){5, 4}, NULL)};
    px_bindings b = {.n_shapes = 1, .shapes = &sb};
    cr_assert_eq(px_pass_bind_shapes(G, &b, &D), 0, "%s", D.text);
    expect_dims(a, 2, (int64_t[]){5, 4});
    expect_dims(c, 1, (int64_t[]){5});
}

Test(bind, unknown_rank_input_takes_explicit_shape) {
    px_value *a = input("a", px_shape_unknown());
    px_shape_binding sb = {"a", shape(3, (int64_t[]){1, 2, 3}, NULL)};
    px_bindings b = {.n_shapes = 1, .shapes = &sb};
    cr_assert_eq(px_pass_bind_shapes(G, &b, &D), 0, "%s", D.text);
    expect_dims(a, 3, (int64_t[]){1, 2, 3});
}

Test(bind, static_model_accepts_its_own_batch) {
    px_value *a = input("a", shape(2, (int64_t[]){4, 3}, NULL));
    px_bindings b = {.batch = 4};
    cr_assert_eq(px_pass_bind_shapes(G, &b, &D), 0, "%s", D.text);
    expect_dims(a, 2, (int64_t[]){4, 3});
}

/* ---- errors ---- */

Test(bind, unknown_input_in_shape_binding) {
    input("x", shape(1, (int64_t[]){-1}, (const char *[]){"N"}));
    px_shape_binding sb = {"nope", shape(1, (int64_t[]){3}, NULL)};
    px_bindings b = {.n_shapes = 1, .shapes = &sb};
    expect_error(&b, "no graph input named 'nope'", "'x'");
}

Test(bind, rank_mismatch) {
    input("x", shape(2, (int64_t[]){-1, 3}, NULL));
    px_shape_binding sb = {"x", shape(3, (int64_t[]){1, 2, 3}, NULL)};
    px_bindings b = {.n_shapes = 1, .shapes = &sb};
    expect_error(&b, "rank 2", "'x'");
}

Test(bind, contradicting_a_static_dim) {
    input("x", shape(2, (int64_t[]){-1, 3}, NULL));
    px_shape_binding sb = {"x", shape(2, (int64_t[]){2, 4}, NULL)};
    px_bindings b = {.n_shapes = 1, .shapes = &sb};
    expect_error(&b, "contradicts", "dim 1 is 3");
}

Test(bind, unknown_dim_name) {
    input("x", shape(2, (int64_t[]){-1, 3}, (const char *[]){"batch", 0}));
    px_bindings b = {.n_dims = 1, .dims = (px_dim_binding[]){{"sequence", 5}}};
    expect_error(&b, "no graph input has a dimension named 'sequence'", "[batch,3]");
}

Test(bind, dim_contradicts_shape_binding) {
    input("x", shape(2, (int64_t[]){-1, 3}, (const char *[]){"batch", 0}));
    px_shape_binding sb = {"x", shape(2, (int64_t[]){2, 3}, NULL)};
    px_bindings b = {
        .n_shapes = 1, .shapes = &sb, .n_dims = 1, .dims = (px_dim_binding[]){{"batch", 5}}};
    expect_error(&b, "'batch' is bound to 2", "to 5");
}

Test(bind, still_symbolic_input_is_named_with_its_shape) {
    input("ids", shape(2, (int64_t[]){-1, -1}, (const char *[]){"batch", "seq"}));
    px_bindings b = {.batch = 4};
    expect_error(&b, "'ids'", "[4,seq]");
}

Test(bind, batch_on_a_static_model_with_another_batch) {
    input("x", shape(2, (int64_t[]){1, 3}, NULL));
    px_bindings b = {.batch = 8};
    expect_error(&b, "--batch 8", "'x'");
}

Test(bind, no_bindings_on_symbolic_model) {
    input("x", shape(1, (int64_t[]){-1}, (const char *[]){"N"}));
    px_bindings b = {0};
    expect_error(&b, "'x'", "[N]");
}
