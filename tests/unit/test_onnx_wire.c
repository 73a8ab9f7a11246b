/* The runtime's ONNX wire-format reader (runtime/program/onnx_wire.c) and
 * model index (weights_source.c): models are encoded here by hand, field by
 * field, so every TensorProto encoding is covered (raw_data, typed fields
 * packed and unpacked, external data) and corrupt or truncated input can be
 * made on purpose. Expected values are the numbers written. */
#include "onnx_wire.h"
#include "pb_write.h"
#include "weights_source.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { WIRE_FIXED64 = 1, WIRE_FIXED32 = 5 };

static void put_fixed32(px_pb_buf *b, int field, uint32_t v) {
    px_pb_put_tag(b, field, WIRE_FIXED32);
    px_pb_put_raw(b, &v, 4);
}

static void put_fixed64(px_pb_buf *b, int field, uint64_t v) {
    px_pb_put_tag(b, field, WIRE_FIXED64);
    px_pb_put_raw(b, &v, 8);
}

static void put_msg(px_pb_buf *b, int field, const px_pb_buf *m) {
    px_pb_put_bytes(b, field, m->data, m->len);
}

/* TensorProto head: dims (unpacked), data_type, name. */
static void tensor_head(px_pb_buf *t, const char *name, int dtype, int rank, const int64_t *dims) {
    for (int i = 0; i < rank; i++) px_pb_put_int64(t, 1, dims[i]);
    px_pb_put_int64(t, 2, dtype);
    px_pb_put_string(t, 8, name);
}

static void node(px_pb_buf *g, const char *op, const char *domain, const char *in,
                 const char *out) {
    px_pb_buf n = {0};
    px_pb_put_string(&n, 1, in);
    px_pb_put_string(&n, 2, out);
    px_pb_put_string(&n, 3, "n");
    px_pb_put_string(&n, 4, op);
    if (domain) px_pb_put_string(&n, 7, domain);
    put_msg(g, 1, &n);
    px_pb_free(&n);
}

/* ModelProto with ir_version and one graph holding g. */
static void model_of(px_pb_buf *m, const px_pb_buf *g) {
    px_pb_put_int64(m, 1, 8);
    put_msg(m, 7, g);
}

static const float F[6] = {1.5f, -2.0f, 0.25f, 3.0f, -0.5f, 8.0f};

/* Six encodings of a [2,3] tensor and one of other dtypes. */
static void build_model(px_pb_buf *m) {
    px_pb_buf g = {0}, t = {0};
    const int64_t dims[2] = {2, 3};
    node(&g, "Gather", NULL, "raw", "y");

    tensor_head(&t, "raw", 1, 2, dims);
    px_pb_put_bytes(&t, 9, F, sizeof F);
    put_msg(&g, 5, &t);
    px_pb_free(&t);

    tensor_head(&t, "float_packed", 1, 2, dims);
    px_pb_put_bytes(&t, 4, F, sizeof F);
    put_msg(&g, 5, &t);
    px_pb_free(&t);

    tensor_head(&t, "float_unpacked", 1, 2, dims);
    for (int i = 0; i < 6; i++) {
        uint32_t u;
        memcpy(&u, &F[i], 4);
        put_fixed32(&t, 4, u);
    }
    put_msg(&g, 5, &t);
    px_pb_free(&t);

    /* int64_data split: 3 packed, then 3 unpacked (a legal mix). */
    tensor_head(&t, "i64_mixed", 7, 2, dims);
    px_pb_buf pk = {0};
    px_pb_put_varint(&pk, 10);
    px_pb_put_varint(&pk, (uint64_t)-20);
    px_pb_put_varint(&pk, 30);
    px_pb_put_bytes(&t, 7, pk.data, pk.len);
    px_pb_free(&pk);
    px_pb_put_int64(&t, 7, -40);
    px_pb_put_int64(&t, 7, 50);
    px_pb_put_int64(&t, 7, 1LL << 40);
    put_msg(&g, 5, &t);
    px_pb_free(&t);

    const int64_t d4[1] = {4};
    tensor_head(&t, "i8", 3, 1, d4);
    for (int i = 0; i < 4; i++) px_pb_put_int64(&t, 5, i % 2 ? -(i + 1) : i + 1);
    put_msg(&g, 5, &t);
    px_pb_free(&t);

    tensor_head(&t, "f64", 11, 1, d4);
    for (int i = 0; i < 4; i++) {
        double v = 0.5 * i - 1;
        uint64_t u;
        memcpy(&u, &v, 8);
        put_fixed64(&t, 10, u);
    }
    put_msg(&g, 5, &t);
    px_pb_free(&t);

    tensor_head(&t, "ext", 1, 2, dims);
    px_pb_put_int64(&t, 14, 1);
    const char *kv[3][2] = {{"location", "w.bin"}, {"offset", "8"}, {"length", "24"}};
    for (int i = 0; i < 3; i++) {
        px_pb_buf e = {0};
        px_pb_put_string(&e, 1, kv[i][0]);
        px_pb_put_string(&e, 2, kv[i][1]);
        put_msg(&t, 13, &e);
        px_pb_free(&e);
    }
    put_msg(&g, 5, &t);
    px_pb_free(&t);

    model_of(m, &g);
    px_pb_free(&g);
}

static const px_wire_tensor *find(const px_wire_model *m, const char *name) {
    for (int i = 0; i < m->n_inits; i++)
        if (px_wire_name_is(&m->inits[i], name)) return &m->inits[i];
    cr_assert_fail("no initializer %s", name);
    return NULL;
}

static void expect_floats(const px_wire_model *m, const char *name) {
    const px_wire_tensor *t = find(m, name);
    cr_assert_eq(t->rank, 2);
    cr_assert_eq(t->dims[0], 2);
    cr_assert_eq(t->dims[1], 3);
    cr_assert_eq(t->dtype, 1);
    float got[6] = {0};
    char err[256];
    cr_assert_eq(px_wire_read_inline(t, 0, 6, got, err, sizeof err), 0, "%s: %s", name, err);
    cr_assert_arr_eq(got, F, sizeof F, "%s", name);
    float row[3] = {0};
    cr_assert_eq(px_wire_read_inline(t, 3, 3, row, err, sizeof err), 0, "%s: %s", name, err);
    cr_assert_arr_eq(row, F + 3, sizeof row, "%s row 1", name);
}

Test(onnx_wire, raw_and_typed_encodings) {
    px_pb_buf b = {0};
    build_model(&b);
    px_wire_model m;
    char err[256];
    cr_assert_eq(px_wire_parse_model(b.data, b.len, &m, err, sizeof err), 0, "%s", err);
    cr_assert_eq(m.n_inits, 7);
    cr_assert_eq(m.n_nodes, 1);
    expect_floats(&m, "raw");
    expect_floats(&m, "float_packed");
    expect_floats(&m, "float_unpacked");

    int64_t i64[6];
    const int64_t want64[6] = {10, -20, 30, -40, 50, 1LL << 40};
    cr_assert_eq(px_wire_read_inline(find(&m, "i64_mixed"), 0, 6, i64, err, sizeof err), 0, "%s",
                 err);
    cr_assert_arr_eq(i64, want64, sizeof want64);
    int64_t two[2];
    cr_assert_eq(px_wire_read_inline(find(&m, "i64_mixed"), 2, 2, two, err, sizeof err), 0);
    cr_assert_eq(two[0], 30);
    cr_assert_eq(two[1], -40);

    int8_t i8[4];
    const int8_t want8[4] = {1, -2, 3, -4};
    cr_assert_eq(px_wire_read_inline(find(&m, "i8"), 0, 4, i8, err, sizeof err), 0, "%s", err);
    cr_assert_arr_eq(i8, want8, sizeof want8);

    double f64[4];
    const double want_d[4] = {-1, -0.5, 0, 0.5};
    cr_assert_eq(px_wire_read_inline(find(&m, "f64"), 0, 4, f64, err, sizeof err), 0, "%s", err);
    cr_assert_arr_eq(f64, want_d, sizeof want_d);

    const px_wire_tensor *e = find(&m, "ext");
    cr_assert(e->external);
    cr_assert_eq(e->location.len, 5);
    cr_assert_eq(memcmp(e->location.p, "w.bin", 5), 0);
    cr_assert_eq(e->ext_offset, 8);
    cr_assert_eq(e->ext_length, 24);
    cr_assert_neq(px_wire_read_inline(e, 0, 6, f64, err, sizeof err), 0);
    cr_assert_neq(px_wire_read_inline(find(&m, "raw"), 4, 3, f64, err, sizeof err), 0,
                  "a range past the end must fail");
    px_wire_model_free(&m);
    px_pb_free(&b);
}

/* Wrong element counts are errors, never partial reads. */
Test(onnx_wire, element_count_mismatch) {
    px_pb_buf g = {0}, t = {0}, b = {0};
    const int64_t dims[1] = {4};
    tensor_head(&t, "short_raw", 1, 1, dims);
    px_pb_put_bytes(&t, 9, F, 12);
    put_msg(&g, 5, &t);
    px_pb_free(&t);
    tensor_head(&t, "long_typed", 1, 1, dims);
    px_pb_put_bytes(&t, 4, F, 20);
    put_msg(&g, 5, &t);
    px_pb_free(&t);
    tensor_head(&t, "wrong_field", 1, 1, dims);
    for (int i = 0; i < 4; i++) px_pb_put_int64(&t, 7, i);
    put_msg(&g, 5, &t);
    px_pb_free(&t);
    model_of(&b, &g);
    px_wire_model m;
    char err[256];
    float out[8];
    cr_assert_eq(px_wire_parse_model(b.data, b.len, &m, err, sizeof err), 0, "%s", err);
    cr_assert_neq(px_wire_read_inline(find(&m, "short_raw"), 0, 4, out, err, sizeof err), 0);
    cr_assert_neq(px_wire_read_inline(find(&m, "long_typed"), 0, 4, out, err, sizeof err), 0);
    cr_assert_neq(px_wire_read_inline(find(&m, "wrong_field"), 0, 4, out, err, sizeof err), 0);
    px_wire_model_free(&m);
    px_pb_free(&g);
    px_pb_free(&b);
}

/* A second `graph` field merges into the first (what --save writes), and
 * node hashes see op, domain ("ai.onnx" = "") and inputs. */
Test(onnx_wire, merged_graphs_and_node_hashes) {
    px_pb_buf g1 = {0}, g2 = {0}, t = {0}, b = {0};
    node(&g1, "Relu", NULL, "x", "y");
    node(&g1, "Relu", "ai.onnx", "x", "y");
    node(&g1, "Relu", NULL, "z", "y");
    node(&g1, "Sigmoid", NULL, "x", "y");
    const int64_t dims[1] = {2};
    tensor_head(&t, "w", 1, 1, dims);
    px_pb_put_bytes(&t, 9, F, 8);
    put_msg(&g2, 5, &t);
    model_of(&b, &g1);
    put_msg(&b, 7, &g2);
    px_wire_model m;
    char err[256];
    cr_assert_eq(px_wire_parse_model(b.data, b.len, &m, err, sizeof err), 0, "%s", err);
    cr_assert_eq(m.n_nodes, 4);
    cr_assert_eq(m.n_inits, 1);
    cr_assert_eq(m.nodes[0].hash, m.nodes[1].hash);
    cr_assert_neq(m.nodes[0].hash, m.nodes[2].hash);
    cr_assert_neq(m.nodes[0].hash, m.nodes[3].hash);
    cr_assert_eq(m.nodes[3].op_type.len, 7);
    px_wire_model_free(&m);
    px_pb_free(&g1);
    px_pb_free(&g2);
    px_pb_free(&t);
    px_pb_free(&b);
}

/* Every truncation and every single-byte corruption ends in an error or a
 * model whose tensors stay inside the buffer; never a crash (the suite runs
 * under ASan in tests/cli/asan_import.sh's configuration too). */
Test(onnx_wire, truncated_and_corrupt_input) {
    px_pb_buf b = {0};
    build_model(&b);
    char err[256];
    int failed = 0;
    for (size_t n = 0; n < b.len; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, b.data, n);
        px_wire_model m;
        if (px_wire_parse_model(copy, n, &m, err, sizeof err))
            failed++;
        else
            px_wire_model_free(&m);
        free(copy);
    }
    cr_assert_eq(failed, (int)b.len, "every strict prefix of a one-graph model is truncated");
    for (size_t i = 0; i < b.len; i++) {
        uint8_t *copy = malloc(b.len);
        memcpy(copy, b.data, b.len);
        copy[i] ^= 0xff;
        px_wire_model m;
        if (!px_wire_parse_model(copy, b.len, &m, err, sizeof err)) {
            for (int k = 0; k < m.n_inits; k++) {
                const px_wire_tensor *t = &m.inits[k];
                cr_assert(t->msg.p >= copy && t->msg.p + t->msg.len <= copy + b.len);
                int64_t numel = px_wire_numel(t);
                size_t es = px_wire_dtype_size(t->dtype);
                if (numel < 0 || numel > 64 || !es) continue;
                uint8_t out[64 * 16];
                px_wire_read_inline(t, 0, numel, out, err, sizeof err);
            }
            px_wire_model_free(&m);
        }
        free(copy);
    }
    px_pb_free(&b);
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* External data through the model index: resolved next to the model, read
 * whole or by rows, refused outside the folder or past the file's end. */
Test(onnx_wire, external_data) {
    char dir[] = "/tmp/px_wire_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256], bin[256];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    snprintf(bin, sizeof bin, "%s/w.bin", dir);
    px_pb_buf b = {0};
    build_model(&b);
    write_file(path, b.data, b.len);
    uint8_t data[32] = {0};
    memcpy(data + 8, F, 24);
    write_file(bin, data, sizeof data);
    px_wsrc s;
    char err[8800];
    cr_assert_eq(px_wsrc_open(&s, path, err, sizeof err), 0, "%s", err);
    const px_wire_tensor *t = px_wsrc_find(&s, "ext");
    cr_assert_not_null(t);
    cr_assert_null(px_wsrc_find(&s, "nope"));
    int fd;
    int64_t off;
    cr_assert_eq(px_wsrc_locate(&s, t, 24, &fd, &off, err, sizeof err), 0, "%s", err);
    float got[6] = {0};
    cr_assert_eq(px_wsrc_read(t, fd, off, 0, 24, got, err, sizeof err), 0, "%s", err);
    cr_assert_arr_eq(got, F, sizeof F);
    float row[3] = {0};
    cr_assert_eq(px_wsrc_read(t, fd, off, 12, 12, row, err, sizeof err), 0, "%s", err);
    cr_assert_arr_eq(row, F + 3, sizeof row);
    cr_assert_neq(px_wsrc_locate(&s, t, 28, &fd, &off, err, sizeof err), 0);
    cr_assert(strstr(err, "24 bytes"), "%s", err);
    px_wsrc_close(&s);

    /* The data file shorter than offset + length. */
    write_file(bin, data, 20);
    cr_assert_eq(px_wsrc_open(&s, path, err, sizeof err), 0, "%s", err);
    t = px_wsrc_find(&s, "ext");
    cr_assert_neq(px_wsrc_locate(&s, t, 24, &fd, &off, err, sizeof err), 0);
    cr_assert(strstr(err, "past the end"), "%s", err);
    px_wsrc_close(&s);

    /* A model whose data file is a link out of its folder. */
    char outside[256];
    snprintf(outside, sizeof outside, "%s.outside", dir);
    write_file(outside, data, sizeof data);
    unlink(bin);
    cr_assert_eq(symlink(outside, bin), 0);
    cr_assert_eq(px_wsrc_open(&s, path, err, sizeof err), 0, "%s", err);
    t = px_wsrc_find(&s, "ext");
    cr_assert_neq(px_wsrc_locate(&s, t, 24, &fd, &off, err, sizeof err), 0);
    cr_assert(strstr(err, "outside the model's folder"), "%s", err);
    px_wsrc_close(&s);

    /* A missing model names the path and --weights. */
    char missing[300];
    snprintf(missing, sizeof missing, "%s/gone.onnx", dir);
    cr_assert_neq(px_wsrc_open(&s, missing, err, sizeof err), 0);
    cr_assert(strstr(err, missing) && strstr(err, "--weights"), "%s", err);

    unlink(bin);
    unlink(path);
    unlink(outside);
    rmdir(dir);
    px_pb_free(&b);
}
