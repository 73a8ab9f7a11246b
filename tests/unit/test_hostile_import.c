/* Hostile models found by probing and fuzzing (issue 13): each must end in a
 * clear error, never a crash, a hang or a silent misreading. Run under ASan
 * by tests/cli/asan_import.sh too. */
#include "graph.h"
#include "onnx_io.h"
#include "onnx_model_builder.h"
#include "passes.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

TestSuite(hostile_import, .fini = mb_free_all);

/* ---- raw wire format: nesting this deep cannot go through protobuf-c's own
 * (recursive) packer ---- */

/* Built back to front (each wrap prepends a key and a length), so nesting
 * 20,000 levels costs linear time. */
typedef struct wire {
    unsigned char *buf; /* content is buf[start, cap) */
    size_t start, cap;
} wire;

static size_t wire_len(const wire *w) {
    return w->cap - w->start;
}

static const unsigned char *wire_data(const wire *w) {
    return w->buf + w->start;
}

static void prepend(wire *w, const void *p, size_t n) {
    if (w->start < n) {
        size_t len = wire_len(w), cap = w->cap ? w->cap : 256;
        while (cap - len < n) cap *= 2;
        unsigned char *nb = malloc(cap);
        cr_assert_not_null(nb);
        if (len) memcpy(nb + cap - len, wire_data(w), len);
        free(w->buf);
        *w = (wire){nb, cap - len, cap};
    }
    w->start -= n;
    memcpy(w->buf + w->start, p, n);
}

static void prepend_varint(wire *w, uint64_t v) {
    unsigned char tmp[10];
    size_t n = 0;
    do {
        unsigned char b = v & 0x7f;
        v >>= 7;
        tmp[n++] = (unsigned char)(b | (v ? 0x80 : 0));
    } while (v);
    prepend(w, tmp, n);
}

/* w := field(number, length-delimited) { w } */
static void wrap(wire *w, unsigned number) {
    prepend_varint(w, wire_len(w));
    prepend_varint(w, (uint64_t)number << 3 | 2);
}

/* Prepends a length-delimited field holding n bytes of s. */
static void put_bytes(wire *w, unsigned number, const void *s, size_t n) {
    prepend(w, s, n);
    prepend_varint(w, n);
    prepend_varint(w, (uint64_t)number << 3 | 2);
}

static void expect_error(const void *buf, size_t len, const char *needle) {
    px_diag d;
    px_diag_init(&d);
    px_graph *g = px_onnx_load_buffer(buf, len, NULL, NULL, &d);
    cr_assert_null(g, "loaded a model that should be refused");
    cr_assert(strstr(d.text, needle), "expected '%s' in: %s", needle, d.text);
}

/* ModelProto.graph(7) > GraphProto.input(11) > ValueInfoProto.type(2) >
 * TypeProto.sequence_type(4) > Sequence.elem_type(1) > TypeProto ... */
static void deep_types(wire *w, int depth) {
    for (int i = 0; i < depth; i++) {
        wrap(w, 1); /* Sequence.elem_type */
        wrap(w, 4); /* TypeProto.sequence_type */
    }
    wrap(w, 2);  /* ValueInfoProto.type */
    wrap(w, 11); /* GraphProto.input */
    wrap(w, 7);  /* ModelProto.graph */
}

Test(hostile_import, types_nested_5000_deep_are_refused_before_parsing) {
    wire w = {0};
    deep_types(&w, 5000);
    cr_assert_lt(wire_len(&w), 64 * 1024, "a small file: %zu bytes", wire_len(&w));
    expect_error(wire_data(&w), wire_len(&w), "nests messages more than 160 levels deep");
    free(w.buf);
}

/* NodeProto(If) > AttributeProto.g(6) > GraphProto.node(1) > NodeProto ... */
Test(hostile_import, if_subgraphs_nested_20000_deep_are_refused) {
    wire w = {0};
    for (int i = 0; i < 20000; i++) {
        put_bytes(&w, 4, "If", 2); /* NodeProto.op_type */
        wrap(&w, 1);               /* GraphProto.node */
        wrap(&w, 6);               /* AttributeProto.g */
        wrap(&w, 5);               /* NodeProto.attribute */
    }
    put_bytes(&w, 4, "If", 2);
    wrap(&w, 1); /* GraphProto.node */
    wrap(&w, 7); /* ModelProto.graph */
    expect_error(wire_data(&w), wire_len(&w), "nests messages more than 160 levels deep");
    free(w.buf);
}

Test(hostile_import, moderate_nesting_still_parses) {
    /* 20 levels of sequence types: legal, reported as a non-tensor input. */
    wire w = {0};
    deep_types(&w, 20);
    px_diag d;
    px_diag_init(&d);
    px_graph *g = px_onnx_load_buffer(wire_data(&w), wire_len(&w), NULL, NULL, &d);
    cr_assert(!strstr(d.text, "levels deep"), "%s", d.text);
    px_graph_free(g);
    free(w.buf);
}

Test(hostile_import, nul_byte_inside_external_location_is_refused) {
    int64_t dims[1] = {4};
    Onnx__TensorProto *t = mb_tensor("w", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, dims);
    mb_external(t, "w.bin", NULL, NULL);
    /* "w.bin\0../../etc/passwd": protobuf-c's C string would stop at the NUL. */
    size_t len;
    Onnx__GraphProto *gp = mb_graph("main");
    MB_PUSH(gp, initializer, t);
    MB_PUSH(gp, output, mb_vi_f("w", 4));
    unsigned char *buf = mb_pack(mb_model(gp, 17), &len);
    unsigned char *at = memmem(buf, len, "w.bin", 5);
    cr_assert_not_null(at);
    /* Same length: overwrite the location's last byte with NUL. */
    at[4] = 0;
    expect_error(buf, len, "contains a NUL byte");
}

static px_graph *load_opset(Onnx__NodeProto *n, int64_t opset, px_diag *d) {
    Onnx__GraphProto *g = mb_graph("main");
    MB_PUSH(g, input, mb_vi_f("x", 4));
    MB_PUSH(g, output, mb_vi_f("y", 4));
    MB_PUSH(g, node, n);
    return mb_load(mb_model(g, opset), NULL, 0, d);
}

Test(hostile_import, unsupported_opsets_are_refused) {
    px_diag d;
    const int64_t bad[] = {22, 99, 1000000000000LL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_null(load_opset(mb_node("Relu", NULL, "r", "x", "y"), bad[i], &d));
        cr_assert(strstr(d.text, "implements opsets 1 to 21"), "%s", d.text);
    }
    px_graph *g = load_opset(mb_node("Relu", NULL, "r", "x", "y"), 21, &d);
    cr_assert_not_null(g, "%s", d.text);
    px_graph_free(g);
}

Test(hostile_import, op_newer_than_the_declared_opset_is_refused) {
    px_diag d;
    cr_assert_null(load_opset(mb_node("HardSwish", NULL, "hs", "x", "y"), 1, &d));
    cr_assert(strstr(d.text, "opset 1, older than some of its operators"), "%s", d.text);
    cr_assert(strstr(d.text, "needs opset 14"), "%s", d.text);
    cr_assert_null(load_opset(mb_node("HardSwish", NULL, "hs", "x", "y"), 13, &d));
    px_graph *g = load_opset(mb_node("HardSwish", NULL, "hs", "x", "y"), 14, &d);
    cr_assert_not_null(g, "%s", d.text);
    px_graph_free(g);
}

/* Found by libFuzzer: a foldable node declaring more outputs than its op has
 * crashed constant folding (NULL result taken as the extra output's value). */
Test(hostile_import, foldable_node_with_extra_outputs_does_not_crash_folding) {
    const char *ops[] = {"Shape", "Size", "Neg"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        Onnx__GraphProto *gp = mb_graph("main");
        MB_PUSH(gp, input, mb_vi_f("x", 4));
        const char *in = strcmp(ops[k], "Neg") == 0 ? "c" : "x";
        if (strcmp(in, "c") == 0) {
            float v[4] = {1, 2, 3, 4};
            MB_PUSH(gp, initializer, mb_floats_tensor("c0", 4, v));
            MB_PUSH(gp, node, mb_node("Identity", NULL, "id", "c0", "c"));
        }
        MB_PUSH(gp, node, mb_node(ops[k], NULL, "n", in, "y extra1 extra2"));
        MB_PUSH(gp, output, mb_vi("y", NULL));
        MB_PUSH(gp, output, mb_vi("extra2", NULL));
        px_diag d;
        px_graph *g = mb_load(mb_model(gp, 17), NULL, 0, &d);
        if (!g) continue; /* refused at import: fine */
        px_bindings b = {0};
        int rc = px_pipeline_fold(g, &b, &d);
        cr_assert(rc == 0 || strstr(d.text, "error: "), "%s: %s", ops[k], d.text);
        px_graph_free(g);
    }
}

Test(hostile_import, fifo_as_model_is_refused_without_waiting) {
    char dir[] = "/tmp/px_fifo_XXXXXX", path[256];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    px_diag d;
    px_diag_init(&d);
    cr_assert_null(px_onnx_load_file(path, NULL, &d));
    cr_assert(strstr(d.text, "is not a regular file"), "%s", d.text);
    unlink(path);
    rmdir(dir);
}

/* A chain of n Relu nodes listed in reverse order: toposort has to reorder
 * all of it, and must do so in (near) linear time. */
Test(hostile_import, toposort_of_a_long_reversed_chain_is_fast) {
    const int n = 300000;
    px_graph *g = px_graph_new("chain");
    px_shape s = {0};
    px_value **v = calloc((size_t)n + 1, sizeof *v);
    char name[32];
    for (int i = 0; i <= n; i++) {
        snprintf(name, sizeof name, "v%d", i);
        v[i] = px_graph_add_value(g, name, PX_F32, &s, NULL);
    }
    px_graph_add_input(g, v[0]);
    for (int i = n - 1; i >= 0; i--) px_graph_add_node(g, "Relu", "", NULL, 1, &v[i], 1, &v[i + 1]);
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0); /* CPU time: the machine may be shared */
    px_diag d;
    px_diag_init(&d);
    cr_assert_eq(px_graph_toposort(g, &d), 0, "%s", d.text);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    for (int i = 0; i < n; i++) cr_assert_eq(g->nodes[i]->inputs[0], v[i]);
    cr_assert_lt(secs, 2.0, "toposort of %d nodes took %.2f s of CPU", n, secs);
    cr_assert_eq(px_graph_verify(g, &d), 0, "%s", d.text);
    free(v);
    px_graph_free(g);
}

Test(hostile_import, toposort_still_reports_cycles) {
    px_graph *g = px_graph_new("cycle");
    px_shape s = {0};
    px_value *a = px_graph_add_value(g, "a", PX_F32, &s, NULL);
    px_value *b = px_graph_add_value(g, "b", PX_F32, &s, NULL);
    px_graph_add_node(g, "Relu", "", "first", 1, &a, 1, &b);
    px_graph_add_node(g, "Relu", "", "second", 1, &b, 1, &a);
    px_diag d;
    px_diag_init(&d);
    cr_assert_eq(px_graph_toposort(g, &d), -1);
    cr_assert(strstr(d.text, "has a cycle through node"), "%s", d.text);
    px_graph_free(g);
}
