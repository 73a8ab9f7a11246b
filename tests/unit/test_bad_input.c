/* Hostile and broken inputs to the ONNX importer: every one must end in a
 * clear error (or, for a truncation that happens to be a valid smaller
 * model, a graph that verifies) and never in a crash. Run under ASan by
 * tests/cli/asan_import.sh. */
#include "graph.h"
#include "onnx_io.h"
#include "onnx_model_builder.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(bad_input, .fini = mb_free_all);

#define REAL_MODEL PX_TESTDATA_DIR "/pytorch-converted/test_Linear/model.onnx"

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = mb_alloc((size_t)n);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Either a clean error or a graph that passes verification. Returns 1 if it loaded. */
static int load_clean(const void *buf, size_t len, const char *what) {
    px_diag d;
    px_diag_init(&d);
    px_graph *g = px_onnx_load_buffer(buf, len, NULL, NULL, &d);
    if (!g) {
        cr_assert(px_diag_failed(&d), "%s: NULL without an error", what);
        cr_assert_eq(strncmp(d.text, "error: ", 7), 0, "%s: odd message: %s", what, d.text);
        return 0;
    }
    cr_assert_eq(px_graph_verify(g, &d), 0, "%s: loaded graph fails verify: %s", what, d.text);
    px_graph_free(g);
    return 1;
}

Test(bad_input, empty_missing_and_directory) {
    char dir[] = "/tmp/px_bad_XXXXXX", path[256];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/empty.onnx", dir);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fclose(f);
    px_diag d;
    px_diag_init(&d);
    cr_assert_null(px_onnx_load_file(path, NULL, &d));
    cr_assert(strstr(d.text, "is empty"), "%s", d.text);
    cr_assert(strstr(d.text, path), "the message names the file: %s", d.text);
    unlink(path);

    px_diag_init(&d);
    cr_assert_null(px_onnx_load_file(path, NULL, &d));
    cr_assert(strstr(d.text, "cannot open model"), "%s", d.text);

    px_diag_init(&d);
    cr_assert_null(px_onnx_load_file(dir, NULL, &d));
    cr_assert(strstr(d.text, "not a regular file"), "%s", d.text);
    rmdir(dir);

    px_diag_init(&d);
    cr_assert_null(px_onnx_load_buffer("", 0, NULL, NULL, &d));
    cr_assert(strstr(d.text, "<buffer> is empty"), "%s", d.text);
}

Test(bad_input, text_is_not_onnx) {
    const char *text = "ir_version: 8\ngraph { node { op_type: \"Relu\" } }\n";
    px_diag d;
    px_diag_init(&d);
    cr_assert_null(px_onnx_load_buffer(text, strlen(text), NULL, NULL, &d));
    cr_assert(strstr(d.text, "not a valid ONNX model") || strstr(d.text, "has no graph"), "%s",
              d.text);
}

Test(bad_input, random_bytes) {
    uint64_t s = 0x9E3779B97F4A7C15ull;
    unsigned char buf[512];
    int loaded = 0;
    for (int iter = 0; iter < 400; iter++) {
        size_t len = 1 + (size_t)(iter * 37 % (int)sizeof buf);
        for (size_t i = 0; i < len; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17; /* xorshift64 */
            buf[i] = (unsigned char)s;
        }
        char what[64];
        snprintf(what, sizeof what, "random #%d (%zu bytes)", iter, len);
        loaded += load_clean(buf, len, what);
    }
    cr_assert_lt(loaded, 10, "random bytes should essentially never be a model");
}

Test(bad_input, truncations_of_a_real_model) {
    size_t len;
    unsigned char *model = slurp(REAL_MODEL, &len);
    cr_assert_eq(load_clean(model, len, "full model"), 1, "the intact model must load");
    int failed = 0;
    for (size_t cut = 0; cut < len; cut++) {
        char what[64];
        snprintf(what, sizeof what, "truncated to %zu of %zu bytes", cut, len);
        failed += !load_clean(model, cut, what);
    }
    /* Most cuts land inside a field; all of them must fail or verify. */
    cr_assert_gt(failed, (int)len / 2, "only %d of %zu truncations failed", failed, len);
}

Test(bad_input, corrupted_bytes_of_a_real_model) {
    size_t len;
    unsigned char *model = slurp(REAL_MODEL, &len);
    unsigned char *copy = mb_alloc(len);
    static const unsigned char values[] = {0x00, 0x7f, 0x80, 0xff};
    for (size_t v = 0; v < sizeof values; v++)
        for (size_t i = 0; i < len; i++) {
            memcpy(copy, model, len);
            copy[i] = values[v];
            char what[64];
            snprintf(what, sizeof what, "byte %zu set to 0x%02x", i, values[v]);
            load_clean(copy, len, what);
        }
}

static px_graph *load_with_init(Onnx__TensorProto *t, px_diag *d) {
    Onnx__GraphProto *g = mb_graph("g");
    MB_PUSH(g, initializer, t);
    MB_PUSH(g, output, mb_vi(t->name, NULL));
    return mb_load(mb_model(g, 17), NULL, 0, d);
}

Test(bad_input, absurd_dims) {
    px_diag d;
    int64_t overflow[2] = {INT64_C(1) << 62, INT64_C(1) << 62};
    cr_assert_null(load_with_init(mb_tensor("huge", PX_F32, 2, overflow), &d));
    cr_assert(strstr(d.text, "'huge'") && strstr(d.text, "overflows"), "%s", d.text);

    /* 2^61 floats: the element count fits in int64, the byte count does not. */
    int64_t bytes_overflow[1] = {INT64_C(1) << 61};
    cr_assert_null(load_with_init(mb_tensor("b", PX_F32, 1, bytes_overflow), &d));
    cr_assert(strstr(d.text, "overflow"), "%s", d.text);

    int64_t max_dims[3] = {INT64_MAX, 0, INT64_MAX}; /* zero elements: fine, no data */
    px_graph *g = load_with_init(mb_tensor("z", PX_F32, 3, max_dims), &d);
    cr_assert_not_null(g, "%s", d.text);
    px_graph_free(g);

    int64_t tb[2] = {INT64_C(1) << 20, INT64_C(1) << 20};
    Onnx__TensorProto *t = mb_tensor("tb", PX_F32, 2, tb);
    mb_raw(t, "1234", 4);
    cr_assert_null(load_with_init(t, &d));
    cr_assert(strstr(d.text, "'tb'"), "%s", d.text);

    int64_t neg[1] = {-5};
    cr_assert_null(load_with_init(mb_tensor("neg", PX_F32, 1, neg), &d));
    cr_assert(strstr(d.text, "negative"), "%s", d.text);
}

Test(bad_input, absurd_value_info) {
    Onnx__GraphProto *g = mb_graph("g");
    int64_t dims[40];
    for (int i = 0; i < 40; i++) dims[i] = 2;
    MB_PUSH(g, input, mb_vi("x", mb_type(PX_F32, 40, dims, NULL)));
    MB_PUSH(g, node, mb_node("Relu", NULL, "r", "x", "y"));
    MB_PUSH(g, output, mb_vi_f("y", 4));
    px_diag d;
    cr_assert_null(mb_load(mb_model(g, 17), NULL, 0, &d));
    cr_assert(strstr(d.text, "rank 40"), "%s", d.text);

    g = mb_graph("g");
    MB_PUSH(g, input, mb_vi("x", mb_type(77, 1, dims, NULL)));
    MB_PUSH(g, node, mb_node("Relu", NULL, "r", "x", "y"));
    MB_PUSH(g, output, mb_vi_f("y", 4));
    cr_assert_null(mb_load(mb_model(g, 17), NULL, 0, &d));
    cr_assert(strstr(d.text, "unknown element type 77"), "%s", d.text);
}

Test(bad_input, unnamed_things) {
    px_diag d;
    Onnx__GraphProto *g = mb_graph("g");
    Onnx__TensorProto *t = mb_floats_tensor(NULL, 1, (const float[]){1});
    MB_PUSH(g, initializer, t);
    cr_assert_null(mb_load(mb_model(g, 17), NULL, 0, &d));
    cr_assert(strstr(d.text, "initializer #0 has no name"), "%s", d.text);

    g = mb_graph("g");
    MB_PUSH(g, input, mb_vi("", NULL));
    cr_assert_null(mb_load(mb_model(g, 17), NULL, 0, &d));
    cr_assert(strstr(d.text, "input #0 has no name"), "%s", d.text);
}
