/* Shape and dtype inference: per-family unit tests on small hand-built
 * graphs, error cases, and the ONNX backend node tests as an oracle (every
 * importable model's inferred output shapes against its reference outputs). */
#include "onnx.pb-c.h"
#include "onnx_io.h"
#include "passes.h"
#include "shape_infer.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* helpers for hand-built graphs                                      */

static px_graph *G;
static px_diag D;

static void fresh(int64_t opset) {
    if (G) px_graph_free(G);
    G = px_graph_new("t");
    if (opset > 0) px_graph_set_opset(G, "", opset);
    px_diag_init(&D);
}

static void teardown(void) {
    if (G) px_graph_free(G);
    G = NULL;
}

/* Shape from a spec like "2,N,?,4" ("" = scalar, "*" = unknown rank). */
static px_shape S(const char *spec) {
    px_shape s = px_shape_unknown();
    if (!strcmp(spec, "*")) return s;
    s.rank = 0;
    const char *p = spec;
    while (*p) {
        char tok[64];
        size_t k = strcspn(p, ",");
        snprintf(tok, sizeof tok, "%.*s", (int)k, p);
        s.sym_id[s.rank] = 0;
        if (!strcmp(tok, "?"))
            s.dims[s.rank] = -1;
        else if (tok[0] >= '0' && tok[0] <= '9')
            s.dims[s.rank] = atoll(tok);
        else {
            s.dims[s.rank] = -1;
            px_shape_set_sym(&s, s.rank, tok);
        }
        s.rank++;
        p += k;
        if (*p == ',') p++;
    }
    return s;
}

static px_value *in(const char *name, px_dtype dt, const char *spec) {
    px_shape s = S(spec);
    px_value *v = px_graph_add_value(G, name, dt, &s, &D);
    cr_assert_not_null(v);
    px_graph_add_input(G, v);
    return v;
}

/* A constant 1-D integer tensor of n values. */
static px_value *ints_arr(const char *name, px_dtype dt, int n, const int64_t *vals) {
    int64_t dims[1] = {n};
    px_shape s = px_shape_make(1, dims);
    px_tensor *t = px_tensor_new(dt, &s, &D);
    cr_assert_not_null(t);
    for (int i = 0; i < n; i++) px_tensor_set_i64(t, i, vals[i]);
    return px_graph_add_constant(G, name, t);
}
#define ints(name, dt, n, ...) ints_arr(name, dt, n, (const int64_t[]){__VA_ARGS__})

static px_value *scalar(const char *name, px_dtype dt, double v) {
    px_shape s = px_shape_scalar();
    px_tensor *t = px_tensor_new(dt, &s, &D);
    cr_assert_not_null(t);
    px_tensor_set_f64(t, 0, v);
    return px_graph_add_constant(G, name, t);
}

/* A node with n_out fresh outputs named "<op>_<i>"; inputs may be NULL. */
static px_node *node(const char *op, const char *domain, int n_out, int n_in, ...) {
    px_value *ins[16], *outs[16];
    va_list ap;
    va_start(ap, n_in);
    for (int i = 0; i < n_in; i++) ins[i] = va_arg(ap, px_value *);
    va_end(ap);
    for (int i = 0; i < n_out; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s_%d", op, i);
        outs[i] = px_graph_new_value(G, name, PX_UNDEFINED, NULL);
    }
    px_node *n = px_graph_add_node(G, op, domain, op, n_in, ins, n_out, outs);
    cr_assert_not_null(n);
    cr_assert_neq(n->op, PX_OP_UNKNOWN, "op %s not in the table", op);
    return n;
}

static const char *str(const px_value *v) {
    static char buf[8][256];
    static int k;
    k = (k + 1) % 8;
    return px_shape_str(&v->shape, buf[k], sizeof buf[k]);
}

/* Clears what an earlier inference left in n's outputs: the tests change
 * attributes and infer again, which the driver would treat as a conflict
 * with the earlier (then declared) result. */
static void forget_outputs(px_node *n) {
    for (int i = 0; i < n->n_outputs; i++) {
        if (!n->outputs[i]) continue;
        n->outputs[i]->dtype = PX_UNDEFINED;
        n->outputs[i]->shape = px_shape_unknown();
    }
}

/* Infers n with the declarations its outputs hold now. */
#define EXPECT_DECLARED(n, i, dt, shape)                                                           \
    do {                                                                                           \
        px_node *n_ = (n);                                                                         \
        cr_assert_eq(px_infer_node(G, n_, &D), 0, "inference failed: %s", D.text);                 \
        cr_expect_eq(n_->outputs[i]->dtype, (dt));                                                 \
        cr_expect_str_eq(str(n_->outputs[i]), (shape));                                            \
    } while (0)
#define EXPECT_DECLARED_ERROR(n, needle)                                                           \
    do {                                                                                           \
        cr_assert_neq(px_infer_node(G, (n), &D), 0, "inference should have failed");               \
        cr_expect(strstr(D.text, (needle)) != NULL, "error text lacks '%s': %s", (needle),         \
                  D.text);                                                                         \
        px_diag_init(&D);                                                                          \
    } while (0)

/* Infers n (evaluated once) and checks output i's dtype and shape string. */
#define EXPECT(n, i, dt, shape)                                                                    \
    do {                                                                                           \
        px_node *n_ = (n);                                                                         \
        forget_outputs(n_);                                                                        \
        cr_assert_eq(px_infer_node(G, n_, &D), 0, "inference failed: %s", D.text);                 \
        cr_expect_eq(n_->outputs[i]->dtype, (dt), "dtype %s, expected %s",                         \
                     px_dtype_name(n_->outputs[i]->dtype), px_dtype_name(dt));                     \
        cr_expect_str_eq(str(n_->outputs[i]), (shape));                                            \
    } while (0)

/* Infers n, expecting an error that names the node and contains `needle`. */
#define EXPECT_ERROR(n, needle)                                                                    \
    do {                                                                                           \
        px_node *n_ = (n);                                                                         \
        forget_outputs(n_);                                                                        \
        cr_assert_neq(px_infer_node(G, n_, &D), 0, "inference should have failed");                \
        cr_expect(strstr(D.text, (needle)) != NULL, "error text lacks '%s': %s", (needle),         \
                  D.text);                                                                         \
        cr_expect(strstr(D.text, n_->name) != NULL, "error does not name the node: %s", D.text);   \
        px_diag_init(&D);                                                                          \
    } while (0)

#define I64S(...) ((const int64_t[]){__VA_ARGS__})
#define NI(arr) ((int)(sizeof(arr) / sizeof(int64_t)))

TestSuite(shape, .fini = teardown);

/* ---- elementwise ---- */

Test(shape, broadcast_carries_symbols_and_checks) {
    fresh(17);
    px_value *a = in("a", PX_F32, "N,3,1"), *b = in("b", PX_F32, "4");
    EXPECT(node("Add", "", 1, 2, a, b), 0, PX_F32, "[N,3,4]");
    px_value *c = in("c", PX_F32, "?,1"), *e = in("e", PX_F32, "N,5");
    EXPECT(node("Mul", "", 1, 2, c, e), 0, PX_F32, "[?,5]");
    px_value *f = in("f", PX_F32, "2,3"), *h = in("h", PX_F32, "4,3");
    EXPECT_ERROR(node("Sub", "", 1, 2, f, h), "cannot be broadcast");
    px_value *k = in("k", PX_I64, "3");
    EXPECT_ERROR(node("Add", "", 1, 2, f, k), "same element type");
    px_value *m = in("m", PX_F32, "1,3"), *u = in("u", PX_F32, "*");
    EXPECT(node("Max", "", 1, 3, f, m, f), 0, PX_F32, "[2,3]");
    EXPECT(node("Sum", "", 1, 2, f, u), 0, PX_F32, "[?]");
}

Test(shape, pow_exponent_type_may_differ_from_opset_12) {
    fresh(13);
    px_value *x = in("x", PX_F32, "2,3"), *e = in("e", PX_I64, "");
    EXPECT(node("Pow", "", 1, 2, x, e), 0, PX_F32, "[2,3]");
    fresh(11);
    x = in("x", PX_F32, "2,3");
    e = in("e", PX_I64, "");
    EXPECT_ERROR(node("Pow", "", 1, 2, x, e), "same element type");
}

Test(shape, comparisons_and_where) {
    fresh(17);
    px_value *a = in("a", PX_F32, "B,3"), *b = in("b", PX_F32, "1");
    EXPECT(node("Less", "", 1, 2, a, b), 0, PX_BOOL, "[B,3]");
    EXPECT_ERROR(node("And", "", 1, 2, a, b), "bool");
    px_value *c = in("c", PX_BOOL, "2,1"), *x = in("x", PX_I32, "1,3"), *y = in("y", PX_I32, "");
    EXPECT(node("Where", "", 1, 3, c, x, y), 0, PX_I32, "[2,3]");
    EXPECT_ERROR(node("Where", "", 1, 3, x, x, y), "must be bool");
}

Test(shape, unary_cast_and_type_checks) {
    fresh(17);
    px_value *x = in("x", PX_F16, "N,4"), *i = in("i", PX_I32, "2");
    EXPECT(node("Relu", "", 1, 1, x), 0, PX_F16, "[N,4]");
    EXPECT(node("IsNaN", "", 1, 1, x), 0, PX_BOOL, "[N,4]");
    px_node *cast = node("Cast", "", 1, 1, x);
    px_node_set_attr_int(cast, "to", PX_I64);
    EXPECT(cast, 0, PX_I64, "[N,4]");
    EXPECT_ERROR(node("Cast", "", 1, 1, x), "'to'");
    px_node *bad = node("Cast", "", 1, 1, x);
    px_node_set_attr_int(bad, "to", 99);
    EXPECT_ERROR(bad, "not a known element type");
    EXPECT(node("CastLike", "", 1, 2, x, i), 0, PX_I32, "[N,4]");
    EXPECT_ERROR(node("Sin", "", 1, 1, i), "floating-point");
    EXPECT_ERROR(node("Not", "", 1, 1, i), "bool");
    EXPECT(node("Abs", "", 1, 1, i), 0, PX_I32, "[2]");
}

Test(shape, axis_wise_activations_check_axis) {
    fresh(13);
    px_value *x = in("x", PX_F32, "2,5");
    px_node *sm = node("Softmax", "", 1, 1, x);
    EXPECT(sm, 0, PX_F32, "[2,5]");
    px_node_set_attr_int(sm, "axis", 2);
    EXPECT_ERROR(sm, "out of range");
    px_value *ax = scalar("ax", PX_I64, -3);
    EXPECT_ERROR(node("CumSum", "", 1, 2, x, ax), "out of range");
    px_value *ax1 = scalar("ax1", PX_I32, 1);
    EXPECT(node("CumSum", "", 1, 2, x, ax1), 0, PX_F32, "[2,5]");
    px_value *v = in("v", PX_F32, "5");
    EXPECT_ERROR(node("Trilu", "", 1, 1, v), "rank >= 2");
    px_value *lo = scalar("lo", PX_F64, 0);
    EXPECT_ERROR(node("Clip", "", 1, 3, x, lo, NULL), "min");
}

/* ---- shape manipulation ---- */

Test(shape, reshape_forms) {
    fresh(17);
    px_value *x = in("x", PX_F32, "N,3,4");
    EXPECT(node("Reshape", "", 1, 2, x, ints("s1", PX_I64, 2, 0, -1)), 0, PX_F32, "[N,12]");
    px_value *y = in("y", PX_F32, "N,12");
    EXPECT(node("Reshape", "", 1, 2, y, ints("s2", PX_I64, 3, -1, 3, 4)), 0, PX_F32, "[N,3,4]");
    EXPECT(node("Reshape", "", 1, 2, y, ints("s3", PX_I64, 2, -1, 4)), 0, PX_F32, "[?,4]");
    px_value *z = in("z", PX_F32, "2,3");
    EXPECT(node("Reshape", "", 1, 2, z, ints("s4", PX_I64, 3, 3, -1, 1)), 0, PX_F32, "[3,2,1]");
    EXPECT_ERROR(node("Reshape", "", 1, 2, z, ints("s5", PX_I64, 2, 5, 5)), "cannot reshape");
    EXPECT_ERROR(node("Reshape", "", 1, 2, z, ints("s6", PX_I64, 2, -1, 4)), "cannot reshape");
    EXPECT_ERROR(node("Reshape", "", 1, 2, z, ints("s7", PX_I64, 2, -1, -1)), "more than one -1");
    px_value *dyn = in("dyn", PX_I64, "3");
    EXPECT(node("Reshape", "", 1, 2, z, dyn), 0, PX_F32, "[?,?,?]");
    px_value *e = in("e", PX_F32, "0,3");
    px_node *az = node("Reshape", "", 1, 2, e, ints("s8", PX_I64, 2, 3, 0));
    px_node_set_attr_int(az, "allowzero", 1);
    EXPECT(az, 0, PX_F32, "[3,0]");
    /* without allowzero the 0 copies e's dim 1: 9 elements cannot come from 0 */
    EXPECT_ERROR(node("Reshape", "", 1, 2, e, ints("s9", PX_I64, 2, 3, 0)), "cannot reshape");
    EXPECT(node("Reshape", "", 1, 2, e, ints("s10", PX_I64, 2, 0, -1)), 0, PX_F32, "[0,?]");
}

Test(shape, flatten_squeeze_unsqueeze_transpose) {
    fresh(11);
    px_value *x = in("x", PX_F32, "2,3,4");
    px_node *f = node("Flatten", "", 1, 1, x);
    px_node_set_attr_int(f, "axis", -1);
    EXPECT(f, 0, PX_F32, "[6,4]");
    px_node_set_attr_int(f, "axis", 0);
    EXPECT(f, 0, PX_F32, "[1,24]");
    px_node_set_attr_int(f, "axis", 4);
    EXPECT_ERROR(f, "out of range");
    px_value *s = in("s", PX_F32, "N,3,4");
    EXPECT(node("Flatten", "", 1, 1, s), 0, PX_F32, "[N,12]");

    px_value *o = in("o", PX_F32, "2,1,N");
    px_node *sq = node("Squeeze", "", 1, 1, o); /* opset 11: axes attribute */
    px_node_set_attr_ints(sq, "axes", 1, I64S(-2));
    EXPECT(sq, 0, PX_F32, "[2,N]");
    px_node_set_attr_ints(sq, "axes", 1, I64S(0));
    EXPECT_ERROR(sq, "cannot squeeze axis 0");
    EXPECT(node("Squeeze", "", 1, 1, o), 0, PX_F32, "[?]"); /* N might be 1 */
    px_value *st = in("st", PX_F32, "1,3,1");
    EXPECT(node("Squeeze", "", 1, 1, st), 0, PX_F32, "[3]");

    px_node *un = node("Unsqueeze", "", 1, 1, s);
    px_node_set_attr_ints(un, "axes", 2, I64S(0, 4));
    EXPECT(un, 0, PX_F32, "[1,N,3,4,1]");
    px_node_set_attr_ints(un, "axes", 2, I64S(0, 0));
    EXPECT_ERROR(un, "twice");

    px_node *t = node("Transpose", "", 1, 1, s);
    EXPECT(t, 0, PX_F32, "[4,3,N]");
    px_node_set_attr_ints(t, "perm", 3, I64S(1, 0, 2));
    EXPECT(t, 0, PX_F32, "[3,N,4]");
    px_node_set_attr_ints(t, "perm", 3, I64S(1, 1, 2));
    EXPECT_ERROR(t, "permutation");
}

Test(shape, squeeze_unsqueeze_axes_as_input_from_opset_13) {
    fresh(13);
    px_value *x = in("x", PX_F32, "N,1,4");
    EXPECT(node("Squeeze", "", 1, 2, x, ints("a", PX_I64, 1, 1)), 0, PX_F32, "[N,4]");
    EXPECT(node("Unsqueeze", "", 1, 2, x, ints("b", PX_I64, 2, -1, 0)), 0, PX_F32, "[1,N,1,4,1]");
    px_value *dyn = in("dyn", PX_I64, "2");
    EXPECT(node("Unsqueeze", "", 1, 2, x, dyn), 0, PX_F32, "[?,?,?,?,?]");
    EXPECT(node("Squeeze", "", 1, 2, x, dyn), 0, PX_F32, "[?]");
    EXPECT_ERROR(node("Unsqueeze", "", 1, 1, x), "axes");
}

Test(shape, shape_and_size) {
    fresh(15);
    px_value *x = in("x", PX_F32, "2,N,4,5");
    EXPECT(node("Shape", "", 1, 1, x), 0, PX_I64, "[4]");
    px_node *sh = node("Shape", "", 1, 1, x);
    px_node_set_attr_int(sh, "start", 1);
    px_node_set_attr_int(sh, "end", -1);
    EXPECT(sh, 0, PX_I64, "[2]");
    px_node_set_attr_int(sh, "start", -100);
    EXPECT(sh, 0, PX_I64, "[3]");
    EXPECT(node("Size", "", 1, 1, x), 0, PX_I64, "[]");
    px_value *u = in("u", PX_F32, "*");
    EXPECT(node("Shape", "", 1, 1, u), 0, PX_I64, "[?]");
}

Test(shape, concat_and_split) {
    fresh(11);
    px_value *a = in("a", PX_F32, "N,2"), *b = in("b", PX_F32, "N,3"), *c = in("c", PX_F32, "5");
    px_node *cc = node("Concat", "", 1, 2, a, b);
    px_node_set_attr_int(cc, "axis", -1);
    EXPECT(cc, 0, PX_F32, "[N,5]");
    px_node *bad = node("Concat", "", 1, 2, a, c);
    px_node_set_attr_int(bad, "axis", 0);
    EXPECT_ERROR(bad, "rank");
    px_node *cz = node("Concat", "", 1, 2, a, a);
    px_node_set_attr_int(cz, "axis", 0);
    EXPECT(cz, 0, PX_F32, "[?,2]");

    px_value *x = in("x", PX_F32, "6,N");
    px_node *sp = node("Split", "", 2, 1, x); /* opset 11: split attribute */
    px_node_set_attr_ints(sp, "split", 2, I64S(2, 4));
    EXPECT(sp, 0, PX_F32, "[2,N]");
    EXPECT(sp, 1, PX_F32, "[4,N]");
    px_node_set_attr_ints(sp, "split", 2, I64S(2, 3));
    EXPECT_ERROR(sp, "sum to 5");
    px_node *eq = node("Split", "", 3, 1, x);
    EXPECT(eq, 2, PX_F32, "[2,N]");
    px_node *uneven = node("Split", "", 4, 1, x);
    EXPECT_ERROR(uneven, "evenly");
}

Test(shape, split_input_and_num_outputs) {
    fresh(13);
    px_value *x = in("x", PX_F32, "2,7");
    px_node *sp = node("Split", "", 2, 2, x, ints("s", PX_I64, 2, 3, 4));
    px_node_set_attr_int(sp, "axis", 1);
    EXPECT(sp, 1, PX_F32, "[2,4]");
    px_value *dyn = in("dyn", PX_I64, "2");
    px_node *sd = node("Split", "", 2, 2, x, dyn);
    EXPECT(sd, 0, PX_F32, "[?,7]");
    fresh(18);
    x = in("x", PX_F32, "2,7");
    px_node *sn = node("Split", "", 3, 1, x);
    px_node_set_attr_int(sn, "axis", 1);
    px_node_set_attr_int(sn, "num_outputs", 3);
    EXPECT(sn, 0, PX_F32, "[2,3]");
    EXPECT(sn, 2, PX_F32, "[2,1]");
}

Test(shape, slice_attribute_and_input_forms) {
    fresh(9);
    px_value *x = in("x", PX_F32, "20,10,N");
    px_node *s9 = node("Slice", "", 1, 1, x);
    px_node_set_attr_ints(s9, "starts", 2, I64S(0, 1));
    px_node_set_attr_ints(s9, "ends", 2, I64S(3, 1000));
    px_node_set_attr_ints(s9, "axes", 2, I64S(0, 1));
    EXPECT(s9, 0, PX_F32, "[3,9,N]");
    fresh(13);
    x = in("x", PX_F32, "20,10,N");
    px_node *neg = node("Slice", "", 1, 5, x, ints("st", PX_I64, 2, -1, 0),
                        ints("en", PX_I64, 2, -1000, INT64_MAX), ints("ax", PX_I64, 2, 0, -1),
                        ints("sp", PX_I64, 2, -1, 1));
    EXPECT(neg, 0, PX_F32, "[20,10,N]");
    px_node *step =
        node("Slice", "", 1, 5, x, ints("st2", PX_I32, 1, 1), ints("en2", PX_I32, 1, 10),
             ints("ax2", PX_I32, 1, 1), ints("sp2", PX_I32, 1, 4));
    EXPECT(step, 0, PX_F32, "[20,3,N]");
    px_node *zero = node("Slice", "", 1, 5, x, ints("st3", PX_I64, 1, 0), ints("en3", PX_I64, 1, 5),
                         ints("ax3", PX_I64, 1, 0), ints("sp3", PX_I64, 1, 0));
    EXPECT_ERROR(zero, "steps entry 0 is 0");
    px_value *dyn = in("dyn", PX_I64, "1");
    EXPECT(node("Slice", "", 1, 4, x, dyn, ints("en4", PX_I64, 1, 3), ints("ax4", PX_I64, 1, 1)), 0,
           PX_F32, "[20,?,N]");
    EXPECT_ERROR(node("Slice", "", 1, 4, x, ints("st5", PX_I64, 1, 0), ints("en5", PX_I64, 1, 1),
                      ints("ax5", PX_I64, 1, 3)),
                 "out of range");
}

Test(shape, gather_family) {
    fresh(13);
    px_value *x = in("x", PX_F32, "5,N"), *idx = in("idx", PX_I64, "2,3");
    EXPECT(node("Gather", "", 1, 2, x, idx), 0, PX_F32, "[2,3,N]");
    px_node *g1 = node("Gather", "", 1, 2, x, idx);
    px_node_set_attr_int(g1, "axis", 1);
    EXPECT(g1, 0, PX_F32, "[5,2,3]");
    EXPECT_ERROR(node("Gather", "", 1, 2, x, ints("c", PX_I64, 2, 1, 7)), "out of range");
    EXPECT(node("Gather", "", 1, 2, x, scalar("s", PX_I32, -5)), 0, PX_F32, "[N]");
    px_value *fidx = in("fidx", PX_F32, "2");
    EXPECT_ERROR(node("Gather", "", 1, 2, x, fidx), "int32 or int64");
    px_value *ei = in("ei", PX_I32, "2,N");
    EXPECT(node("GatherElements", "", 1, 2, x, ei), 0, PX_F32, "[2,N]");
    EXPECT_ERROR(node("GatherElements", "", 1, 2, x, idx = in("i1", PX_I64, "2")), "rank");
}

Test(shape, expand_tile_pad) {
    fresh(13);
    px_value *x = in("x", PX_F32, "3,1");
    EXPECT(node("Expand", "", 1, 2, x, ints("s", PX_I64, 3, 2, 1, 6)), 0, PX_F32, "[2,3,6]");
    EXPECT_ERROR(node("Expand", "", 1, 2, x, ints("s2", PX_I64, 2, 4, 6)), "broadcast");
    px_value *dyn = in("dyn", PX_I64, "3");
    EXPECT(node("Expand", "", 1, 2, x, dyn), 0, PX_F32, "[?,3,?]");
    px_value *t = in("t", PX_F32, "2,N");
    EXPECT(node("Tile", "", 1, 2, t, ints("r", PX_I64, 2, 3, 1)), 0, PX_F32, "[6,N]");
    EXPECT_ERROR(node("Tile", "", 1, 2, t, ints("r2", PX_I64, 1, 3)), "rank");
    px_value *big = in("big", PX_F32, "1099511627776");
    EXPECT_ERROR(node("Tile", "", 1, 2, big, ints("r3", PX_I64, 1, 1LL << 40)), "absurd");
    px_value *p = in("p", PX_F32, "2,N,4");
    EXPECT(node("Pad", "", 1, 2, p, ints("pads", PX_I64, 6, 1, 0, 0, 1, 0, -1)), 0, PX_F32,
           "[4,N,3]");
    EXPECT_ERROR(node("Pad", "", 1, 2, p, ints("pads2", PX_I64, 6, -3, 0, 0, 0, 0, 0)),
                 "below zero");
    EXPECT_ERROR(node("Pad", "", 1, 2, p, ints("pads3", PX_I64, 2, 1, 1)), "expected 6");
    fresh(2);
    p = in("p", PX_F32, "2,3");
    px_node *old = node("Pad", "", 1, 1, p);
    px_node_set_attr_ints(old, "pads", 4, I64S(0, 2, 0, 2));
    EXPECT(old, 0, PX_F32, "[2,7]");
    fresh(18);
    p = in("p", PX_F32, "2,3");
    EXPECT(node("Pad", "", 1, 4, p, ints("pp", PX_I64, 2, 1, 1), NULL, ints("ax", PX_I64, 1, -1)),
           0, PX_F32, "[2,5]");
}

Test(shape, generators) {
    fresh(17);
    px_node *c = node("Constant", "", 1, 0);
    px_node_set_attr_ints(c, "value_ints", 3, I64S(1, 2, 3));
    EXPECT(c, 0, PX_I64, "[3]");
    px_node *cf = node("Constant", "", 1, 0);
    px_node_set_attr_float(cf, "value_float", 1.5f);
    EXPECT(cf, 0, PX_F32, "[]");
    EXPECT_ERROR(node("Constant", "", 1, 0), "no value");

    px_node *cos = node("ConstantOfShape", "", 1, 1, ints("s", PX_I64, 2, 2, 3));
    px_shape one = px_shape_make(1, I64S(1));
    px_node_set_attr_tensor(cos, "value", px_tensor_new(PX_I32, &one, &D));
    EXPECT(cos, 0, PX_I32, "[2,3]");
    px_value *dyn = in("dyn", PX_I64, "4");
    EXPECT(node("ConstantOfShape", "", 1, 1, dyn), 0, PX_F32, "[?,?,?,?]");
    EXPECT_ERROR(node("ConstantOfShape", "", 1, 1, ints("bad", PX_I64, 2, 1LL << 40, 1LL << 40)),
                 "absurd");

    EXPECT(node("Range", "", 1, 3, scalar("a", PX_I64, 0), scalar("b", PX_I64, 10),
                scalar("c", PX_I64, 3)),
           0, PX_I64, "[4]");
    EXPECT(node("Range", "", 1, 3, scalar("a2", PX_I32, 10), scalar("b2", PX_I32, 6),
                scalar("c2", PX_I32, -3)),
           0, PX_I32, "[2]");
    EXPECT(node("Range", "", 1, 3, scalar("a3", PX_F32, 1), scalar("b3", PX_F32, 2),
                scalar("c3", PX_F32, 0.5)),
           0, PX_F32, "[2]");
    px_value *lim = in("lim", PX_F32, "");
    EXPECT(node("Range", "", 1, 3, scalar("a4", PX_F32, 1), lim, scalar("c4", PX_F32, 1)), 0,
           PX_F32, "[?]");
    EXPECT_ERROR(node("Range", "", 1, 3, scalar("a5", PX_I64, 0), scalar("b5", PX_I64, 1),
                      scalar("c5", PX_I64, 0)),
                 "delta is 0");

    px_value *idx = in("idx", PX_I64, "N,3"), *vals = in("vals", PX_F32, "2");
    px_node *oh = node("OneHot", "", 1, 3, idx, scalar("depth", PX_F32, 10), vals);
    EXPECT(oh, 0, PX_F32, "[N,3,10]");
    px_node_set_attr_int(oh, "axis", 1);
    EXPECT(oh, 0, PX_F32, "[N,10,3]");
    px_value *depth = in("depth_in", PX_I64, "");
    EXPECT(node("OneHot", "", 1, 3, idx, depth, vals), 0, PX_F32, "[N,3,?]");

    px_value *m = in("m", PX_I32, "3,4");
    px_node *eye = node("EyeLike", "", 1, 1, m);
    EXPECT(eye, 0, PX_I32, "[3,4]");
    px_node_set_attr_int(eye, "dtype", PX_F64);
    EXPECT(eye, 0, PX_F64, "[3,4]");
}

/* ---- reductions ---- */

Test(shape, reductions_across_opsets) {
    fresh(13);
    px_value *x = in("x", PX_F32, "N,3,4");
    px_node *rm = node("ReduceMean", "", 1, 1, x);
    px_node_set_attr_ints(rm, "axes", 1, I64S(1));
    px_node_set_attr_int(rm, "keepdims", 0);
    EXPECT(rm, 0, PX_F32, "[N,4]");
    EXPECT(node("ReduceMax", "", 1, 1, x), 0, PX_F32, "[1,1,1]");
    EXPECT(node("ReduceSum", "", 1, 2, x, ints("ax", PX_I64, 1, -1)), 0, PX_F32, "[N,3,1]");
    px_value *dyn = in("dyn", PX_I64, "1");
    px_node *rs = node("ReduceSum", "", 1, 2, x, dyn);
    EXPECT(rs, 0, PX_F32, "[?,?,?]");
    px_node_set_attr_int(rs, "keepdims", 0);
    EXPECT(rs, 0, PX_F32, "[?,?]");
    px_node *noop = node("ReduceSum", "", 1, 2, x, ints("e", PX_I64, 0, 0));
    px_node_set_attr_int(noop, "noop_with_empty_axes", 1);
    EXPECT(noop, 0, PX_F32, "[N,3,4]");
    EXPECT_ERROR(node("ReduceSum", "", 1, 2, x, ints("d", PX_I64, 2, 1, -2)), "twice");
    EXPECT_ERROR(node("ReduceSum", "", 1, 2, x, ints("o", PX_I64, 1, 3)), "out of range");
    fresh(18);
    x = in("x", PX_F32, "N,3,4");
    EXPECT(node("ReduceL2", "", 1, 2, x, ints("ax", PX_I64, 2, 0, 2)), 0, PX_F32, "[1,3,1]");

    px_node *am = node("ArgMax", "", 1, 1, x);
    px_node_set_attr_int(am, "axis", -1);
    EXPECT(am, 0, PX_I64, "[N,3,1]");
    px_node_set_attr_int(am, "keepdims", 0);
    EXPECT(am, 0, PX_I64, "[N,3]");
    px_node_set_attr_int(am, "axis", 3);
    EXPECT_ERROR(am, "out of range");
}

/* ---- neural-network ops ---- */

Test(shape, matmul_and_gemm) {
    fresh(17);
    px_value *a = in("a", PX_F32, "N,3,4"), *b = in("b", PX_F32, "4,5"), *v = in("v", PX_F32, "4");
    EXPECT(node("MatMul", "", 1, 2, a, b), 0, PX_F32, "[N,3,5]");
    EXPECT(node("MatMul", "", 1, 2, v, b), 0, PX_F32, "[5]");
    EXPECT(node("MatMul", "", 1, 2, a, v), 0, PX_F32, "[N,3]");
    EXPECT(node("MatMul", "", 1, 2, v, v), 0, PX_F32, "[]");
    px_value *c = in("c", PX_F32, "2,1,5,3");
    EXPECT(node("MatMul", "", 1, 2, c, a), 0, PX_F32, "[2,N,5,4]");
    EXPECT_ERROR(node("MatMul", "", 1, 2, b, b), "inner dims differ");

    px_value *ga = in("ga", PX_F32, "4,B"), *gb = in("gb", PX_F32, "6,4"),
             *bias = in("bias", PX_F32, "6");
    px_node *gemm = node("Gemm", "", 1, 3, ga, gb, bias);
    px_node_set_attr_int(gemm, "transA", 1);
    px_node_set_attr_int(gemm, "transB", 1);
    EXPECT(gemm, 0, PX_F32, "[B,6]");
    px_node *bad = node("Gemm", "", 1, 2, ga, gb);
    px_node_set_attr_int(bad, "transA", 1);
    EXPECT_ERROR(bad, "inner dims differ");
    px_value *wb = in("wb", PX_F32, "5");
    px_node *badc = node("Gemm", "", 1, 3, ga, gb, wb);
    px_node_set_attr_int(badc, "transA", 1);
    px_node_set_attr_int(badc, "transB", 1);
    EXPECT_ERROR(badc, "cannot broadcast");
}

Test(shape, conv_output_sizes_and_channel_checks) {
    fresh(17);
    px_value *x = in("x", PX_F32, "N,3,32,32"), *w = in("w", PX_F32, "8,3,3,3");
    px_node *c = node("Conv", "", 1, 2, x, w);
    EXPECT(c, 0, PX_F32, "[N,8,30,30]");
    px_node_set_attr_ints(c, "pads", 4, I64S(1, 1, 1, 1));
    px_node_set_attr_ints(c, "strides", 2, I64S(2, 2));
    EXPECT(c, 0, PX_F32, "[N,8,16,16]");
    px_node_set_attr_ints(c, "dilations", 2, I64S(2, 3));
    EXPECT(c, 0, PX_F32, "[N,8,15,14]");
    px_node *same = node("Conv", "", 1, 2, x, w);
    px_node_set_attr_string(same, "auto_pad", "SAME_UPPER");
    px_node_set_attr_ints(same, "strides", 2, I64S(3, 3));
    EXPECT(same, 0, PX_F32, "[N,8,11,11]");
    px_value *wg = in("wg", PX_F32, "8,2,3,3");
    EXPECT_ERROR(node("Conv", "", 1, 2, x, wg), "channels");
    px_value *x4 = in("x4", PX_F32, "1,4,8,8");
    px_node *grouped = node("Conv", "", 1, 2, x4, wg);
    px_node_set_attr_int(grouped, "group", 2);
    EXPECT(grouped, 0, PX_F32, "[1,8,6,6]");
    px_value *tiny = in("tiny", PX_F32, "1,3,2,2");
    EXPECT_ERROR(node("Conv", "", 1, 2, tiny, w), "exceeds");
    px_value *b = in("b", PX_F32, "7");
    EXPECT_ERROR(node("Conv", "", 1, 3, x, w, b), "bias");
}

Test(shape, pooling) {
    fresh(17);
    px_value *x = in("x", PX_F32, "N,3,5,5");
    px_node *mp = node("MaxPool", "", 2, 1, x);
    px_node_set_attr_ints(mp, "kernel_shape", 2, I64S(2, 2));
    px_node_set_attr_ints(mp, "strides", 2, I64S(2, 2));
    EXPECT(mp, 0, PX_F32, "[N,3,2,2]");
    EXPECT(mp, 1, PX_I64, "[N,3,2,2]");
    px_node_set_attr_int(mp, "ceil_mode", 1);
    EXPECT(mp, 0, PX_F32, "[N,3,3,3]");
    /* ceil mode never starts a window in the right padding */
    px_value *y = in("y", PX_F32, "1,1,4,4");
    px_node *ap = node("AveragePool", "", 1, 1, y);
    px_node_set_attr_ints(ap, "kernel_shape", 2, I64S(3, 3));
    px_node_set_attr_ints(ap, "strides", 2, I64S(2, 2));
    px_node_set_attr_ints(ap, "pads", 4, I64S(1, 1, 1, 1));
    px_node_set_attr_int(ap, "ceil_mode", 1);
    EXPECT(ap, 0, PX_F32, "[1,1,3,3]");
    px_value *z = in("z", PX_F32, "1,1,2,2");
    px_node *one = node("MaxPool", "", 1, 1, z);
    px_node_set_attr_ints(one, "kernel_shape", 2, I64S(1, 1));
    px_node_set_attr_ints(one, "strides", 2, I64S(2, 2));
    px_node_set_attr_int(one, "ceil_mode", 1);
    EXPECT(one, 0, PX_F32, "[1,1,1,1]");
    px_node *big = node("MaxPool", "", 1, 1, y);
    px_node_set_attr_ints(big, "kernel_shape", 2, I64S(5, 5));
    EXPECT_ERROR(big, "exceeds");
    EXPECT_ERROR(node("MaxPool", "", 1, 1, y), "kernel_shape");
    EXPECT(node("GlobalAveragePool", "", 1, 1, x), 0, PX_F32, "[N,3,1,1]");
}

Test(shape, batchnorm_across_opsets) {
    fresh(15);
    px_value *x = in("x", PX_F32, "N,4,8,8"), *s = in("s", PX_F32, "4"), *b = in("b", PX_F32, "4");
    px_value *m = in("m", PX_F32, "4"), *v = in("v", PX_F32, "4");
    px_node *bn = node("BatchNormalization", "", 3, 5, x, s, b, m, v);
    px_node_set_attr_int(bn, "training_mode", 1);
    EXPECT(bn, 0, PX_F32, "[N,4,8,8]");
    EXPECT(bn, 1, PX_F32, "[4]");
    EXPECT(bn, 2, PX_F32, "[4]");
    px_value *bad = in("bad", PX_F32, "5");
    EXPECT_ERROR(node("BatchNormalization", "", 1, 5, x, bad, b, m, v), "expected [C]");
    fresh(9);
    x = in("x", PX_F16, "2,3");
    s = in("s", PX_F16, "3");
    px_node *bn9 = node("BatchNormalization", "", 5, 5, x, s, s, s, s);
    EXPECT(bn9, 0, PX_F16, "[2,3]");
    EXPECT(bn9, 4, PX_F16, "[3]");
}

Test(shape, layernorm_and_dropout) {
    fresh(17);
    px_value *x = in("x", PX_F16, "N,T,8"), *sc = in("sc", PX_F16, "8");
    px_node *ln = node("LayerNormalization", "", 3, 2, x, sc);
    EXPECT(ln, 0, PX_F16, "[N,T,8]");
    EXPECT(ln, 1, PX_F32, "[N,T,1]");
    px_value *sc7 = in("sc7", PX_F16, "7");
    EXPECT_ERROR(node("LayerNormalization", "", 1, 2, x, sc7), "cannot broadcast");
    px_value *sc2 = in("sc2", PX_F16, "T,8");
    px_node *ln2 = node("LayerNormalization", "", 3, 2, x, sc2);
    px_node_set_attr_int(ln2, "axis", -2);
    EXPECT(ln2, 2, PX_F32, "[N,1,1]");

    px_value *dx = in("dx", PX_F32, "N,5");
    px_node *dr = node("Dropout", "", 2, 3, dx, scalar("r", PX_F32, 0.25), scalar("t", PX_BOOL, 1));
    EXPECT(dr, 1, PX_BOOL, "[N,5]");
    EXPECT_ERROR(node("Dropout", "", 2, 2, dx, scalar("r2", PX_F32, 1.5)), "ratio");
    fresh(7);
    dx = in("dx", PX_F32, "N,5");
    EXPECT(node("Dropout", "", 2, 1, dx), 1, PX_F32, "[N,5]");
}

/* ---- recurrent ---- */

Test(shape, recurrent_layouts_and_checks) {
    fresh(14);
    px_value *x = in("x", PX_F32, "5,N,10"), *w = in("w", PX_F32, "1,80,10"),
             *r = in("r", PX_F32, "1,80,20");
    px_node *lstm = node("LSTM", "", 3, 3, x, w, r);
    px_node_set_attr_int(lstm, "hidden_size", 20);
    EXPECT(lstm, 0, PX_F32, "[5,1,N,20]");
    EXPECT(lstm, 1, PX_F32, "[1,N,20]");
    EXPECT(lstm, 2, PX_F32, "[1,N,20]");
    px_node *nohidden = node("LSTM", "", 1, 3, x, w, r);
    EXPECT(nohidden, 0, PX_F32, "[5,1,N,20]");

    px_value *xb = in("xb", PX_F32, "N,5,10"), *gw = in("gw", PX_F32, "2,60,10"),
             *gr = in("gr", PX_F32, "2,60,20");
    px_node *gru = node("GRU", "", 2, 3, xb, gw, gr);
    px_node_set_attr_string(gru, "direction", "bidirectional");
    px_node_set_attr_int(gru, "layout", 1);
    px_node_set_attr_int(gru, "hidden_size", 20);
    EXPECT(gru, 0, PX_F32, "[N,5,2,20]");
    EXPECT(gru, 1, PX_F32, "[N,2,20]");
    px_node_set_attr_string(gru, "direction", "forward");
    EXPECT_ERROR(gru, "dim 0 should be 1");

    px_value *rw = in("rw", PX_F32, "1,20,9"), *rr = in("rr", PX_F32, "1,20,20");
    px_node *rnn = node("RNN", "", 2, 3, x, rw, rr);
    EXPECT_ERROR(rnn, "dim 2 should be 10");
}

/* ---- losses ---- */

Test(shape, losses) {
    fresh(13);
    px_value *x = in("x", PX_F32, "N,5,7"), *t = in("t", PX_I64, "N,7");
    px_node *nll = node("NegativeLogLikelihoodLoss", "", 1, 2, x, t);
    EXPECT(nll, 0, PX_F32, "[]");
    px_node_set_attr_string(nll, "reduction", "none");
    EXPECT(nll, 0, PX_F32, "[N,7]");
    px_value *tf = in("tf", PX_F32, "N,7");
    EXPECT_ERROR(node("NegativeLogLikelihoodLoss", "", 1, 2, x, tf), "int32 or int64");
    px_value *t6 = in("t6", PX_I64, "N,6");
    EXPECT_ERROR(node("NegativeLogLikelihoodLoss", "", 1, 2, x, t6), "does not match");
    px_value *wt = in("wt", PX_F32, "4");
    EXPECT_ERROR(node("NegativeLogLikelihoodLoss", "", 1, 3, x, t, wt), "weight");

    px_value *sx = in("sx", PX_F64, "B,10"), *lab = in("lab", PX_I32, "B");
    px_node *sce = node("SoftmaxCrossEntropyLoss", "", 2, 2, sx, lab);
    EXPECT(sce, 0, PX_F64, "[]");
    EXPECT(sce, 1, PX_F64, "[B,10]");
}

/* ---- ai.onnx.preview.training ---- */

Test(shape, optimizers) {
    fresh(17);
    px_graph_set_opset(G, PX_DOMAIN_TRAINING, 1);
    px_value *r = in("r", PX_F32, ""), *t = in("t", PX_I64, "");
    px_value *x1 = in("x1", PX_F32, "3,4"), *x2 = in("x2", PX_F32, "5");
    px_value *g1 = in("g1", PX_F32, "3,4"), *g2 = in("g2", PX_F32, "5");
    px_value *v1 = in("v1", PX_F32, "3,4"), *v2 = in("v2", PX_F32, "5");
    px_value *h1 = in("h1", PX_F32, "3,4"), *h2 = in("h2", PX_F32, "5");
    px_node *adam = node("Adam", PX_DOMAIN_TRAINING, 6, 10, r, t, x1, x2, g1, g2, v1, v2, h1, h2);
    EXPECT(adam, 0, PX_F32, "[3,4]");
    EXPECT(adam, 1, PX_F32, "[5]");
    EXPECT(adam, 3, PX_F32, "[5]");
    EXPECT(adam, 4, PX_F32, "[3,4]");
    px_node *mom = node("Momentum", PX_DOMAIN_TRAINING, 2, 5, r, t, x1, g2, v1);
    EXPECT_ERROR(mom, "shape");
    px_node *ada = node("Adagrad", PX_DOMAIN_TRAINING, 3, 5, r, t, x1, g1, h1);
    EXPECT_ERROR(ada, "needs 2 outputs");
}

/* ---- the driver ---- */

Test(shape, driver_rejects_unknown_ops_and_contradictions) {
    fresh(17);
    px_value *x = in("x", PX_F32, "2,3");
    px_value *y = px_graph_new_value(G, "y", PX_UNDEFINED, NULL);
    px_node *foo = px_graph_add_node(G, "Foo", "", "my_foo", 1, &x, 1, &y);
    cr_assert_eq(foo->op, PX_OP_UNKNOWN);
    cr_assert_neq(px_infer_shapes(G, &D), 0);
    cr_expect(strstr(D.text, "my_foo") && strstr(D.text, "Foo"), "%s", D.text);
    px_graph_remove_node(G, foo); /* dead nodes are skipped */
    px_diag_init(&D);
    cr_expect_eq(px_infer_shapes(G, &D), 0, "%s", D.text);

    /* a declared dtype that disagrees */
    px_node *relu = node("Relu", "", 1, 1, x);
    relu->outputs[0]->dtype = PX_I32;
    EXPECT_DECLARED_ERROR(relu, "declared int32 but inferred float");
    /* a declared shape that disagrees, and one that refines */
    px_node *rs = node("Reshape", "", 1, 2, x, in("s", PX_I64, "2"));
    rs->outputs[0]->shape = S("3,N");
    EXPECT_DECLARED(rs, 0, PX_F32, "[3,N]");
    px_node *rs2 = node("Reshape", "", 1, 2, x, ints("s2", PX_I64, 2, 3, 2));
    rs2->outputs[0]->shape = S("2,3");
    EXPECT_DECLARED_ERROR(rs2, "declared with shape [2,3] but inferred [3,2]");
    px_node *rs3 = node("Reshape", "", 1, 2, x, ints("s3", PX_I64, 2, 3, 2));
    rs3->outputs[0]->shape = S("3,2,1");
    EXPECT_DECLARED_ERROR(rs3, "declared");
}

Test(shape, driver_walks_the_graph_in_order) {
    fresh(17);
    px_value *x = in("x", PX_F32, "B,4"), *w = in("w", PX_F32, "4,3");
    px_node *mm = node("MatMul", "", 1, 2, x, w);
    px_node *relu = node("Relu", "", 1, 1, mm->outputs[0]);
    px_node *sm = node("ReduceSum", "", 1, 1, relu->outputs[0]);
    px_node_set_attr_int(sm, "keepdims", 0);
    cr_assert_eq(px_infer_shapes(G, &D), 0, "%s", D.text);
    cr_expect_str_eq(str(relu->outputs[0]), "[B,3]");
    cr_expect_str_eq(str(sm->outputs[0]), "[]");
    /* a failing node stops the walk and is named */
    px_value *bad = in("bad", PX_F32, "5,3");
    node("MatMul", "", 1, 2, x, bad);
    px_diag_init(&D);
    cr_assert_neq(px_infer_shapes(G, &D), 0);
    cr_expect(strstr(D.text, "'MatMul' (MatMul)") != NULL, "%s", D.text);
}

/* ------------------------------------------------------------------ */
/* oracle: ONNX backend node tests                                    */

/* Reads dtype and dims of a serialized TensorProto; 0 on success. */
static int read_reference(const char *path, px_dtype *dt, px_shape *s) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(len > 0 ? (size_t)len : 1);
    size_t got = buf ? fread(buf, 1, (size_t)len, f) : 0;
    fclose(f);
    Onnx__TensorProto *t = got == (size_t)len ? onnx__tensor_proto__unpack(NULL, got, buf) : NULL;
    free(buf);
    if (!t || t->n_dims > PX_MAX_RANK) {
        if (t) onnx__tensor_proto__free_unpacked(t, NULL);
        return -1;
    }
    *dt = (px_dtype)t->data_type;
    *s = px_shape_make((int)t->n_dims, t->dims);
    onnx__tensor_proto__free_unpacked(t, NULL);
    return 0;
}

/* Forgets every type the model declared for values that nodes produce, so
 * the comparison sees only what inference derived. */
static void forget_declared(px_graph *g) {
    for (int i = 0; i < g->n_values; i++) {
        px_value *v = g->values[i];
        if (!v->producer) continue;
        v->dtype = PX_UNDEFINED;
        v->shape = px_shape_unknown();
    }
}

/* Integer and scalar graph inputs (axes, shapes, pads, repeats, OneHot's
 * depth, Range's bounds... given at run time by the opset-13+ tests) become
 * constants holding test_data_set_0's values,
 * as if the caller had bound them. */
static void bind_integer_inputs(px_graph *g, const char *dir) {
    for (int k = 0; k < g->n_inputs; k++) {
        px_value *v = g->inputs[k];
        int scalar = px_shape_is_static(&v->shape) && px_shape_numel(&v->shape) == 1;
        if (v->dtype != PX_I64 && v->dtype != PX_I32 && !scalar) continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, k);
        px_diag *d = malloc(sizeof *d);
        px_diag_init(d);
        px_tensor *t = px_onnx_load_tensor_file(path, NULL, d);
        free(d);
        if (!t) continue;
        px_tensor_free(v->data);
        v->data = t;
        v->kind = PX_VALUE_CONSTANT;
        v->shape = t->shape;
    }
}

static int outputs_static(const px_graph *g) {
    for (int k = 0; k < g->n_outputs; k++)
        if (!px_shape_is_static(&g->outputs[k]->shape)) return 0;
    return 1;
}

/* Compares each graph output with the reference; counts and prints
 * mismatches. With only_known, unknown dims are not mismatches (a later
 * attempt may resolve them), but wrong known ones are. */
static int compare_outputs(const px_graph *g, const char *dir, const char *test, int only_known) {
    int bad = 0;
    for (int k = 0; k < g->n_outputs; k++) {
        const px_value *v = g->outputs[k];
        char path[4200], a[256], b[256];
        px_dtype want_dt;
        px_shape want;
        snprintf(path, sizeof path, "%s/test_data_set_0/output_%d.pb", dir, k);
        if (read_reference(path, &want_dt, &want) != 0) {
            printf("MISMATCH %s: cannot read reference %s\n", test, path);
            bad++;
            continue;
        }
        /* ONNX 1.12's test data stores bfloat16 results as uint16 */
        int dt_ok = v->dtype == want_dt || (v->dtype == PX_BF16 && want_dt == PX_U16);
        int shape_ok = px_shape_is_static(&v->shape) && px_shape_equal(&v->shape, &want);
        if (only_known && v->shape.rank < 0) shape_ok = 1;
        if (only_known && v->shape.rank == want.rank) {
            shape_ok = 1;
            for (int i = 0; i < want.rank; i++)
                if (v->shape.dims[i] >= 0 && v->shape.dims[i] != want.dims[i]) shape_ok = 0;
        }
        if (!dt_ok || !shape_ok) {
            printf("MISMATCH %s: output %d '%s': inferred %s %s, reference %s %s\n", test, k,
                   v->name, px_dtype_name(v->dtype), px_shape_str(&v->shape, a, sizeof a),
                   px_dtype_name(want_dt), px_shape_str(&want, b, sizeof b));
            bad++;
        }
    }
    return bad;
}

/* Checks one model; returns the number of mismatches (printed). */
static int check_model(const char *dir, const char *test, int *imported) {
    char path[4200];
    px_diag *d = malloc(sizeof *d);
    px_diag_init(d);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    int bad = 0;
    *imported = 0;
    px_graph *g = px_onnx_load_file(path, NULL, d);
    if (!g) goto done;
    *imported = 1;
    /* with the model's own declarations: inference must agree with them */
    if (px_infer_shapes(g, d) != 0) {
        printf("MISMATCH %s: inference with declared types failed:\n%s", test, d->text);
        bad++;
        px_diag_init(d);
    }
    forget_declared(g);
    bind_integer_inputs(g, dir);
    if (px_infer_shapes(g, d) != 0) {
        printf("MISMATCH %s: inference failed:\n%s", test, d->text);
        bad++;
        goto done;
    }
    if (outputs_static(g)) {
        bad += compare_outputs(g, dir, test, 0);
        goto done;
    }
    /* Shapes computed by graph arithmetic (Shape -> Gather -> Concat ->
     * Reshape in the *_expanded tests) need constant folding first, as the
     * compiler's pipeline does; what is known before must already agree. */
    bad += compare_outputs(g, dir, test, 1);
    if (bad) goto done;
    if (px_pass_fold_constants(g, d) != 0 || px_infer_shapes(g, d) != 0) {
        printf("MISMATCH %s: folding or re-inference failed:\n%s", test, d->text);
        bad++;
        goto done;
    }
    bad += compare_outputs(g, dir, test, 0);
done:
    px_graph_free(g);
    free(d);
    return bad;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs the oracle over every test folder under root; returns mismatches. */
static int run_oracle(const char *root, int *checked_out) {
    DIR *dir = opendir(root);
    cr_assert_not_null(dir, "cannot open %s", root);
    char **names = NULL;
    size_t count = 0, cap = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        if (e->d_name[0] == '.') continue;
        if (count == cap) {
            cap = cap ? 2 * cap : 256;
            names = realloc(names, cap * sizeof *names);
            cr_assert_not_null(names);
        }
        names[count++] = strdup(e->d_name);
    }
    closedir(dir);
    qsort(names, count, sizeof *names, by_name);
    int checked = 0, mismatches = 0;
    for (size_t i = 0; i < count; i++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", root, names[i]);
        int imported;
        mismatches += check_model(path, names[i], &imported);
        checked += imported;
        free(names[i]);
    }
    free(names);
    printf("%s: checked %d models, %d mismatches\n", root, checked, mismatches);
    fflush(stdout);
    *checked_out = checked;
    return mismatches;
}

Test(shape_oracle, onnx_node_tests_match_reference_outputs, .timeout = 600) {
    int checked, mismatches = run_oracle(PX_TESTDATA_DIR "/node", &checked);
    cr_expect_gt(checked, 500, "only %d models imported", checked);
    cr_expect_eq(mismatches, 0, "%d shape/dtype mismatches (listed above)", mismatches);
}

Test(shape_oracle, pytorch_and_simple_models_match_reference_outputs, .timeout = 600) {
    static const char *const roots[] = {PX_TESTDATA_DIR "/pytorch-converted",
                                        PX_TESTDATA_DIR "/pytorch-operator",
                                        PX_TESTDATA_DIR "/simple"};
    int total = 0, mismatches = 0;
    for (int i = 0; i < 3; i++) {
        int checked;
        mismatches += run_oracle(roots[i], &checked);
        total += checked;
    }
    cr_expect_gt(total, 100, "only %d models imported", total);
    cr_expect_eq(mismatches, 0, "%d shape/dtype mismatches (listed above)", mismatches);
}
