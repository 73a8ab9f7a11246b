/* Core IR: tensors, shapes, dtype conversions, graph building and invariants. */
#include "graph.h"
#include "node_order.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static px_shape shape2(int64_t a, int64_t b) {
    int64_t dims[2] = {a, b};
    return px_shape_make(2, dims);
}

Test(tensor, numel_and_overflow) {
    px_shape s = shape2(3, 4);
    cr_assert_eq(px_shape_numel(&s), 12);
    s = shape2(INT64_C(1) << 40, INT64_C(1) << 40);
    cr_assert_eq(px_shape_numel(&s), -1, "overflowing product must be rejected");
    s = shape2(-1, 4);
    cr_assert_eq(px_shape_numel(&s), -1);
    px_shape sc = px_shape_scalar();
    cr_assert_eq(px_shape_numel(&sc), 1);
}

Test(tensor, new_rejects_absurd_sizes) {
    px_diag d;
    px_diag_init(&d);
    px_shape s = shape2(INT64_C(1) << 31, INT64_C(1) << 31);
    cr_assert_null(px_tensor_new(PX_F32, &s, &d));
    cr_assert(px_diag_failed(&d));
    cr_assert(strstr(d.text, "too large"), "%s", d.text);
}

Test(tensor, get_set_roundtrip_all_dtypes) {
    px_dtype types[] = {PX_F32, PX_F64, PX_F16, PX_BF16, PX_I8,  PX_U8,  PX_I16,
                        PX_U16, PX_I32, PX_U32, PX_I64,  PX_U64, PX_BOOL};
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        px_shape s = shape2(1, 3);
        px_tensor *t = px_tensor_new(types[k], &s, NULL);
        cr_assert_not_null(t);
        cr_assert_eq(t->nbytes, 3 * px_dtype_size(types[k]));
        px_tensor_set_i64(t, 0, 1);
        px_tensor_set_f64(t, 2, 2.0);
        cr_assert_eq(px_tensor_get_i64(t, 0), 1, "%s", px_dtype_name(types[k]));
        cr_assert_eq(px_tensor_get_f64(t, 1), 0.0);
        cr_assert_eq(px_tensor_get_f64(t, 2), types[k] == PX_BOOL ? 1.0 : 2.0);
        px_tensor *c = px_tensor_clone(t, NULL);
        cr_assert(px_tensor_equal(t, c));
        px_tensor_set_i64(c, 1, 1);
        cr_assert_not(px_tensor_equal(t, c));
        px_tensor_free(t);
        px_tensor_free(c);
    }
}

Test(tensor, float16_conversions_match_ieee) {
    /* Reference bit patterns from IEEE 754 binary16. */
    cr_assert_eq(px_f32_to_f16(1.0f), 0x3c00);
    cr_assert_eq(px_f32_to_f16(-2.0f), 0xc000);
    cr_assert_eq(px_f32_to_f16(65504.0f), 0x7bff);
    cr_assert_eq(px_f32_to_f16(1e6f), 0x7c00);
    cr_assert_eq(px_f32_to_f16(5.960464477539063e-08f), 0x0001); /* smallest subnormal */
    cr_assert_eq(px_f16_to_f32(0x0001), 5.960464477539063e-08f);
    cr_assert_eq(px_f16_to_f32(0x3555), 0.333251953125f);
    cr_assert(isnan(px_f16_to_f32(px_f32_to_f16(NAN))));
    for (uint32_t h = 0; h < 0x7c00; h++) /* every finite positive half round-trips */
        cr_assert_eq(px_f32_to_f16(px_f16_to_f32((uint16_t)h)), h, "half 0x%04x", h);
    cr_assert_eq(px_f32_to_bf16(1.0f), 0x3f80);
    cr_assert_eq(px_bf16_to_f32(0xc040), -3.0f);
}

Test(tensor, intern_is_pointer_stable) {
    char a[] = "batch", b[] = "batch";
    cr_assert_eq(px_intern(a), px_intern(b));
    cr_assert_neq(px_intern("seq"), px_intern("batch"));
}

Test(dtype, names_roundtrip) {
    for (int t = 1; t < PX_DTYPE_COUNT; t++)
        cr_assert_eq((int)px_dtype_from_name(px_dtype_name((px_dtype)t)), t);
    cr_assert_eq(px_dtype_size(PX_F16), 2);
    cr_assert(px_dtype_is_float(PX_BF16));
    cr_assert_not(px_dtype_is_int(PX_BOOL));
}

Test(op, table_lookup) {
    cr_assert_eq(px_op_lookup("Add", ""), PX_OP_Add);
    cr_assert_eq(px_op_lookup("Add", "ai.onnx"), PX_OP_Add);
    cr_assert_eq(px_op_lookup("Adam", "ai.onnx.preview.training"), PX_OP_Adam);
    cr_assert_eq(px_op_lookup("Adam", ""), PX_OP_UNKNOWN);
    cr_assert_eq(px_op_lookup("Loop", ""), PX_OP_UNKNOWN);
    for (int i = 1; i < PX_OP_COUNT; i++) {
        cr_assert_not_null(px_op_table[i].infer, "%s has no shape function", px_op_name((px_op)i));
        cr_assert_eq((int)px_op_lookup(px_op_table[i].name, px_op_table[i].domain), i);
    }
}

/* x -> Relu -> y -> Add(y, w) -> z */
static px_graph *small_graph(void) {
    px_graph *g = px_graph_new("g");
    px_shape s = shape2(2, 3);
    px_value *x = px_graph_add_value(g, "x", PX_F32, &s, NULL);
    px_graph_add_input(g, x);
    px_value *w = px_graph_add_value(g, "w", PX_F32, &s, NULL);
    px_graph_add_initializer(g, w, px_tensor_new(PX_F32, &s, NULL));
    px_value *y = px_graph_add_value(g, "y", PX_UNDEFINED, NULL, NULL);
    px_value *z = px_graph_add_value(g, "z", PX_UNDEFINED, NULL, NULL);
    px_graph_add_node(g, "Relu", "", "relu", 1, &x, 1, &y);
    px_value *ins[2] = {y, w};
    px_graph_add_node(g, "Add", "", "add", 2, ins, 1, &z);
    px_graph_add_output(g, z);
    return g;
}

Test(graph, build_verify_and_uses) {
    px_graph *g = small_graph();
    px_diag d;
    px_diag_init(&d);
    cr_assert_eq(px_graph_verify(g, &d), 0, "%s", d.text);
    px_value *y = px_graph_find_value(g, "y");
    cr_assert_eq(y->n_uses, 1);
    cr_assert_eq(y->uses[0].node->op, PX_OP_Add);
    cr_assert_eq(y->producer->op, PX_OP_Relu);
    cr_assert_null(px_graph_add_value(g, "y", PX_F32, NULL, &d), "duplicate names are refused");
    cr_assert(strstr(d.text, "defined twice"));
    px_graph_free(g);
}

Test(graph, unique_names_and_replace_uses) {
    px_graph *g = small_graph();
    px_value *y2 = px_graph_new_value(g, "y", PX_F32, NULL);
    cr_assert_str_eq(y2->name, "y_1");
    px_value *x = px_graph_find_value(g, "x");
    px_graph_add_node(g, "Neg", "", "neg", 1, &x, 1, &y2);
    px_value *y = px_graph_find_value(g, "y");
    px_value_replace_uses(g, y, y2);
    cr_assert_eq(y->n_uses, 0);
    cr_assert_eq(y2->n_uses, 1);
    px_graph_remove_node(g, y->producer);
    px_graph_compact(g);
    cr_assert_null(px_graph_find_value(g, "y"), "unused, unproduced value is dropped");
    cr_assert_eq(g->n_nodes, 2);
    px_diag d;
    px_diag_init(&d);
    /* Neg was appended after Add, which now reads it: order is wrong until sorted. */
    cr_assert_neq(px_graph_verify(g, &d), 0);
    px_diag_init(&d);
    cr_assert_eq(px_graph_toposort(g, &d), 0, "%s", d.text);
    cr_assert_eq(px_graph_verify(g, &d), 0, "%s", d.text);
    cr_assert_eq(g->nodes[0]->op, PX_OP_Neg);
    px_graph_free(g);
}

/* Compaction takes dropped values out of the name index one by one: every
 * kept name is still found (also those whose probe run crossed a dropped
 * one), no dropped name is, and a dropped name can be used again. */
Test(graph, compact_keeps_the_name_index) {
    px_graph *g = px_graph_new("g");
    enum { N = 4000 };
    px_value *x = px_graph_add_value(g, "x", PX_F32, NULL, NULL);
    px_graph_add_input(g, x);
    char name[32];
    /* names that hash apart irregularly (sequential ones can fill the table
     * without a single collision), so that probe runs form */
#define NAME(i) snprintf(name, sizeof name, "v%d/%u", i, (unsigned)(i)*2654435761u)
    for (int i = 0; i < N; i++) {
        NAME(i);
        px_value *v = px_graph_add_value(g, name, PX_F32, NULL, NULL);
        cr_assert_not_null(v);
        if (i % 3) px_graph_add_node(g, "Relu", "", name, 1, &x, 1, &v); /* kept: produced */
    }
    px_graph_compact(g);
    for (int i = 0; i < N; i++) {
        NAME(i);
        px_value *v = px_graph_find_value(g, name);
        if (i % 3 == 0) {
            cr_assert_null(v, "%s was dropped", name);
        } else {
            cr_assert_not_null(v, "%s is kept", name);
            cr_assert_str_eq(v->name, name);
        }
    }
    for (int i = 0; i < N; i += 3) {
        NAME(i);
        cr_assert_not_null(px_graph_add_value(g, name, PX_F32, NULL, NULL), "%s", name);
    }
    px_diag d;
    px_diag_init(&d);
    cr_assert_eq(px_graph_verify(g, &d), 0, "%s", d.text);
    px_graph_free(g);
#undef NAME
}

/* Thousands of insertions at two spots of a node order: the keys run out
 * there again and again and are spread anew, and the order stays the one
 * the insertions asked for. */
Test(graph, node_order_many_insertions_at_one_spot) {
    px_graph *g = px_graph_new("g");
    enum { BASE = 10, N = 5000 };
    char name[32];
    for (int i = 0; i < BASE; i++) {
        snprintf(name, sizeof name, "a%d", i);
        px_graph_add_node(g, "Identity", "", name, 0, NULL, 0, NULL);
    }
    px_node *a2 = g->nodes[2], *a5 = g->nodes[5];
    px_node_order *o = px_node_order_begin(g);
    cr_assert_not_null(o);
    px_node *prev = NULL;
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "x%d", i); /* x0 x1 ... before a5 */
        px_node *x = px_node_order_insert(o, a5, 0, "Identity", "", name, 0, NULL, 0, NULL);
        snprintf(name, sizeof name, "y%d", i); /* ... y1 y0 right after a2 */
        px_node *y = px_node_order_insert(o, a2, 1, "Identity", "", name, 0, NULL, 0, NULL);
        cr_assert(x && y);
        cr_assert(px_node_order_before(o, x, a5) && px_node_order_before(o, a2, y));
        cr_assert(px_node_order_before(o, y, x));
        if (prev) cr_assert(px_node_order_before(o, prev, x), "x%d after x%d", i, i - 1);
        prev = x;
    }
    px_node_order_end(o);
    cr_assert_eq(g->n_nodes, BASE + 2 * N);
    int k = 0;
    for (int i = 0; i < BASE; i++) {
        if (i == 3)
            for (int j = N - 1; j >= 0; j--) {
                snprintf(name, sizeof name, "y%d", j);
                cr_assert_str_eq(g->nodes[k]->name, name);
                cr_assert_eq(g->nodes[k]->id, k);
                k++;
            }
        if (i == 5)
            for (int j = 0; j < N; j++) {
                snprintf(name, sizeof name, "x%d", j);
                cr_assert_str_eq(g->nodes[k]->name, name);
                k++;
            }
        snprintf(name, sizeof name, "a%d", i);
        cr_assert_str_eq(g->nodes[k]->name, name);
        k++;
    }
    px_graph_free(g);
}

Test(graph, cycle_is_reported) {
    px_graph *g = px_graph_new("cyc");
    px_value *a = px_graph_add_value(g, "a", PX_F32, NULL, NULL);
    px_value *b = px_graph_add_value(g, "b", PX_F32, NULL, NULL);
    px_graph_add_node(g, "Relu", "", "r1", 1, &a, 1, &b);
    px_graph_add_node(g, "Relu", "", "r2", 1, &b, 1, &a);
    px_diag d;
    px_diag_init(&d);
    cr_assert_neq(px_graph_toposort(g, &d), 0);
    cr_assert(strstr(d.text, "cycle"), "%s", d.text);
    px_graph_free(g);
}

Test(graph, attributes) {
    px_graph *g = small_graph();
    px_node *n = g->nodes[0];
    px_node_set_attr_int(n, "axis", -1);
    px_node_set_attr_float(n, "alpha", 0.5f);
    px_node_set_attr_string(n, "mode", "constant");
    int64_t perm[3] = {2, 0, 1};
    px_node_set_attr_ints(n, "perm", 3, perm);
    px_node_set_attr_int(n, "axis", 2); /* replaces */
    int cnt;
    cr_assert_eq(px_attr_int(n, "axis", 0), 2);
    cr_assert_eq(px_attr_float(n, "alpha", 0), 0.5f);
    cr_assert_str_eq(px_attr_string(n, "mode", ""), "constant");
    cr_assert_eq(px_attr_ints(n, "perm", &cnt)[2], 1);
    cr_assert_eq(cnt, 3);
    cr_assert_eq(px_attr_int(n, "missing", 7), 7);
    px_node_remove_attr(n, "mode");
    cr_assert_null(px_node_attr(n, "mode"));
    cr_assert_eq(n->n_attrs, 3);
    px_graph_free(g);
}

Test(graph, opsets) {
    px_graph *g = px_graph_new("o");
    px_graph_set_opset(g, "ai.onnx", 13);
    px_graph_set_opset(g, PX_DOMAIN_TRAINING, 1);
    cr_assert_eq(px_graph_opset(g, ""), 13);
    px_graph_set_opset(g, "", 17);
    cr_assert_eq(px_graph_opset(g, "ai.onnx"), 17);
    cr_assert_eq(g->n_opsets, 2);
    cr_assert_eq(px_graph_opset(g, "com.microsoft"), 0);
    px_graph_free(g);
}

Test(diag, accumulates_and_truncates) {
    px_diag d;
    px_diag_init(&d);
    cr_assert_eq(px_error(&d, "first %d", 1), -1);
    px_note(&d, "context");
    cr_assert_str_eq(d.text, "error: first 1\n  note: context\n");
    for (int i = 0; i < 2000; i++) px_error(&d, "message number %d with some padding", i);
    cr_assert_eq(d.errors, 2001);
    cr_assert(strlen(d.text) < PX_DIAG_CAP);
    cr_assert(strstr(d.text, "[truncated]"));
}
