/* ONNX importer: every tensor encoding and dtype, external data (good and
 * hostile), sparse tensors, attributes of every kind, subgraphs, model
 * metadata, unsupported operators and malformed graphs. Models are built in
 * memory with protobuf-c so each test controls the exact bytes. */
#include "graph.h"
#include "control_flow.h"
#include "onnx_io.h"
#include "onnx_model_builder.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(onnx_import, .fini = mb_free_all);

/* A model whose only content is initializer t, also the graph output. */
static px_graph *load_tensor(Onnx__TensorProto *t, const char *base_dir, px_diag *d) {
    Onnx__GraphProto *g = mb_graph("g");
    MB_PUSH(g, initializer, t);
    MB_PUSH(g, output, mb_vi(t->name, NULL));
    return mb_load(mb_model(g, 17), base_dir, 0, d);
}

static const px_tensor *tensor_of(px_graph *g, const char *name) {
    px_value *v = px_graph_find_value(g, name);
    cr_assert_not_null(v, "value %s missing", name);
    cr_assert_eq(v->kind, PX_VALUE_INITIALIZER);
    cr_assert_not_null(v->data);
    return v->data;
}

static void expect_error(px_graph *g, const px_diag *d, const char *needle) {
    cr_assert_null(g, "import should fail (wanted '%s')", needle);
    cr_assert(px_diag_failed(d));
    cr_assert(strstr(d->text, needle), "error should mention '%s', got:\n%s", needle, d->text);
}

/* ---- raw_data, every dtype ---- */

Test(onnx_import, raw_data_every_dtype) {
    static const int dtypes[] = {PX_F32, PX_U8,  PX_I8,  PX_U16, PX_I16, PX_I32,  PX_I64, PX_BOOL,
                                 PX_F16, PX_F64, PX_U32, PX_U64, PX_C64, PX_C128, PX_BF16};
    for (size_t k = 0; k < sizeof dtypes / sizeof *dtypes; k++) {
        px_dtype dt = (px_dtype)dtypes[k];
        int64_t dims[2] = {2, 3};
        size_t nbytes = 6 * px_dtype_size(dt);
        unsigned char bytes[6 * 16];
        for (size_t i = 0; i < nbytes; i++) bytes[i] = (unsigned char)(i * 7 + k);
        if (dt == PX_BOOL)
            for (size_t i = 0; i < nbytes; i++) bytes[i] &= 1;
        Onnx__TensorProto *t = mb_tensor("W", dt, 2, dims);
        mb_raw(t, bytes, nbytes);
        px_diag d;
        px_graph *g = load_tensor(t, NULL, &d);
        cr_assert_not_null(g, "%s: %s", px_dtype_name(dt), d.text);
        const px_tensor *w = tensor_of(g, "W");
        cr_assert_eq(w->dtype, dt);
        cr_assert_eq(w->shape.rank, 2);
        cr_assert_eq(w->shape.dims[0], 2);
        cr_assert_eq(w->shape.dims[1], 3);
        cr_assert_eq(w->nbytes, nbytes, "%s", px_dtype_name(dt));
        cr_assert_eq(memcmp(w->data, bytes, nbytes), 0, "%s bytes differ", px_dtype_name(dt));
        px_graph_free(g);
    }
}

Test(onnx_import, raw_data_little_endian_values) {
    /* 1.0f and -2.5f as little-endian bytes, independent of the host. */
    const unsigned char bytes[8] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0};
    int64_t dims[1] = {2};
    Onnx__TensorProto *t = mb_tensor("W", PX_F32, 1, dims);
    mb_raw(t, bytes, sizeof bytes);
    px_diag d;
    px_graph *g = load_tensor(t, NULL, &d);
    cr_assert_not_null(g, "%s", d.text);
    const float *f = tensor_of(g, "W")->data;
    cr_assert_eq(f[0], 1.0f);
    cr_assert_eq(f[1], -2.5f);
    px_graph_free(g);
}

Test(onnx_import, raw_data_length_mismatch_names_tensor) {
    int64_t dims[2] = {2, 3};
    Onnx__TensorProto *t = mb_tensor("weights_fc1", PX_F32, 2, dims);
    float v[5] = {0};
    mb_raw(t, v, sizeof v);
    px_diag d;
    px_graph *g = load_tensor(t, NULL, &d);
    expect_error(g, &d, "weights_fc1");
    cr_assert(strstr(d.text, "raw_data has 20 bytes"), "%s", d.text);
}

/* ---- typed fields ---- */

static px_graph *load_typed(px_dtype dt, int n, void (*fill)(Onnx__TensorProto *), px_diag *d) {
    int64_t dims[1] = {n};
    Onnx__TensorProto *t = mb_tensor("W", dt, 1, dims);
    fill(t);
    return load_tensor(t, NULL, d);
}

static void fill_float(Onnx__TensorProto *t) {
    static const float v[3] = {1.5f, -2.0f, 3.25f};
    t->n_float_data = 3;
    t->float_data = mb_dup(v, sizeof v);
}

Test(onnx_import, float_data_f32) {
    px_diag d;
    px_graph *g = load_typed(PX_F32, 3, fill_float, &d);
    cr_assert_not_null(g, "%s", d.text);
    const float *f = tensor_of(g, "W")->data;
    cr_assert_eq(f[0], 1.5f);
    cr_assert_eq(f[1], -2.0f);
    cr_assert_eq(f[2], 3.25f);
    px_graph_free(g);
}

static void fill_complex64(Onnx__TensorProto *t) {
    static const float v[4] = {1, 2, 3, 4}; /* (1+2i), (3+4i) */
    t->n_float_data = 4;
    t->float_data = mb_dup(v, sizeof v);
}

Test(onnx_import, float_data_complex64_takes_pairs) {
    px_diag d;
    px_graph *g = load_typed(PX_C64, 2, fill_complex64, &d);
    cr_assert_not_null(g, "%s", d.text);
    const px_tensor *w = tensor_of(g, "W");
    cr_assert_eq(w->nbytes, 16);
    cr_assert_eq(((const float *)w->data)[3], 4.0f);
    px_graph_free(g);
}

static const int32_t int32_vals[4] = {-3, 0, 65535, 300};
static void fill_int32(Onnx__TensorProto *t) {
    t->n_int32_data = 4;
    t->int32_data = mb_dup(int32_vals, sizeof int32_vals);
}

Test(onnx_import, int32_data_i32) {
    px_diag d;
    px_graph *g = load_typed(PX_I32, 4, fill_int32, &d);
    cr_assert_not_null(g, "%s", d.text);
    const int32_t *v = tensor_of(g, "W")->data;
    cr_assert_eq(v[0], -3);
    cr_assert_eq(v[2], 65535);
    px_graph_free(g);
}

Test(onnx_import, int32_data_i16_i8) {
    px_diag d;
    px_graph *g = load_typed(PX_I16, 4, fill_int32, &d);
    cr_assert_not_null(g, "%s", d.text);
    const int16_t *s = tensor_of(g, "W")->data;
    cr_assert_eq(s[0], -3);
    cr_assert_eq(s[3], 300);
    px_graph_free(g);
    g = load_typed(PX_I8, 4, fill_int32, &d);
    cr_assert_not_null(g, "%s", d.text);
    const int8_t *b = tensor_of(g, "W")->data;
    cr_assert_eq(b[0], -3);
    cr_assert_eq(b[1], 0);
    px_graph_free(g);
}

Test(onnx_import, int32_data_u16_u8) {
    px_diag d;
    px_graph *g = load_typed(PX_U16, 4, fill_int32, &d);
    cr_assert_not_null(g, "%s", d.text);
    const uint16_t *s = tensor_of(g, "W")->data;
    cr_assert_eq(s[2], 65535);
    cr_assert_eq(s[3], 300);
    px_graph_free(g);
    g = load_typed(PX_U8, 4, fill_int32, &d);
    cr_assert_not_null(g, "%s", d.text);
    cr_assert_eq(((const uint8_t *)tensor_of(g, "W")->data)[2], 255);
    px_graph_free(g);
}

Test(onnx_import, int32_data_bool_normalized) {
    px_diag d;
    px_graph *g = load_typed(PX_BOOL, 4, fill_int32, &d);
    cr_assert_not_null(g, "%s", d.text);
    const uint8_t *b = tensor_of(g, "W")->data;
    cr_assert_eq(b[0], 1);
    cr_assert_eq(b[1], 0);
    cr_assert_eq(b[2], 1);
    px_graph_free(g);
}

static void fill_half_bits(Onnx__TensorProto *t) {
    static const int32_t v[2] = {0x3C00, 0xC000}; /* f16: 1.0, -2.0; bf16: 0x3C00 = 2^-7 */
    t->n_int32_data = 2;
    t->int32_data = mb_dup(v, sizeof v);
}

Test(onnx_import, int32_data_f16_bit_patterns) {
    px_diag d;
    px_graph *g = load_typed(PX_F16, 2, fill_half_bits, &d);
    cr_assert_not_null(g, "%s", d.text);
    const px_tensor *w = tensor_of(g, "W");
    cr_assert_eq(px_tensor_get_f64(w, 0), 1.0);
    cr_assert_eq(px_tensor_get_f64(w, 1), -2.0);
    px_graph_free(g);
}

Test(onnx_import, int32_data_bf16_bit_patterns) {
    px_diag d;
    px_graph *g = load_typed(PX_BF16, 2, fill_half_bits, &d);
    cr_assert_not_null(g, "%s", d.text);
    const px_tensor *w = tensor_of(g, "W");
    cr_assert_eq(((const uint16_t *)w->data)[0], 0x3C00);
    cr_assert_eq(px_tensor_get_f64(w, 0), ldexp(1.0, -7));
    px_graph_free(g);
}

static void fill_int64(Onnx__TensorProto *t) {
    static const int64_t v[2] = {INT64_MIN, (int64_t)1 << 40};
    t->n_int64_data = 2;
    t->int64_data = mb_dup(v, sizeof v);
}

Test(onnx_import, int64_data) {
    px_diag d;
    px_graph *g = load_typed(PX_I64, 2, fill_int64, &d);
    cr_assert_not_null(g, "%s", d.text);
    const int64_t *v = tensor_of(g, "W")->data;
    cr_assert_eq(v[0], INT64_MIN);
    cr_assert_eq(v[1], (int64_t)1 << 40);
    px_graph_free(g);
}

static void fill_double(Onnx__TensorProto *t) {
    static const double v[2] = {0.1, -1e300};
    t->n_double_data = 2;
    t->double_data = mb_dup(v, sizeof v);
}

Test(onnx_import, double_data_f64_and_complex128) {
    px_diag d;
    px_graph *g = load_typed(PX_F64, 2, fill_double, &d);
    cr_assert_not_null(g, "%s", d.text);
    const double *v = tensor_of(g, "W")->data;
    cr_assert_eq(v[0], 0.1);
    cr_assert_eq(v[1], -1e300);
    px_graph_free(g);
    g = load_typed(PX_C128, 1, fill_double, &d);
    cr_assert_not_null(g, "%s", d.text);
    cr_assert_eq(tensor_of(g, "W")->nbytes, 16);
    px_graph_free(g);
}

static void fill_uint64(Onnx__TensorProto *t) {
    static const uint64_t v[2] = {UINT64_C(0x8000000000000005), 4000000000u};
    t->n_uint64_data = 2;
    t->uint64_data = mb_dup(v, sizeof v);
}

Test(onnx_import, uint64_data_u64_and_u32) {
    px_diag d;
    px_graph *g = load_typed(PX_U64, 2, fill_uint64, &d);
    cr_assert_not_null(g, "%s", d.text);
    cr_assert_eq(((const uint64_t *)tensor_of(g, "W")->data)[0], UINT64_C(0x8000000000000005));
    px_graph_free(g);
    g = load_typed(PX_U32, 2, fill_uint64, &d);
    cr_assert_not_null(g, "%s", d.text);
    cr_assert_eq(((const uint32_t *)tensor_of(g, "W")->data)[1], 4000000000u);
    px_graph_free(g);
}

static void fill_strings(Onnx__TensorProto *t) {
    t->n_string_data = 3;
    t->string_data = mb_alloc(3 * sizeof *t->string_data);
    t->string_data[0].len = 2;
    t->string_data[0].data = mb_dup("ab", 2);
    t->string_data[1].len = 0;
    t->string_data[1].data = mb_dup("", 0);
    t->string_data[2].len = 3;
    t->string_data[2].data = mb_dup("x\0y", 3);
}

Test(onnx_import, string_data) {
    px_diag d;
    px_graph *g = load_typed(PX_STRING, 3, fill_strings, &d);
    cr_assert_not_null(g, "%s", d.text);
    const px_bytes *s = tensor_of(g, "W")->data;
    cr_assert_eq(s[0].len, 2);
    cr_assert_str_eq(s[0].data, "ab");
    cr_assert_eq(s[1].len, 0);
    cr_assert_eq(s[2].len, 3);
    cr_assert_eq(memcmp(s[2].data, "x\0y", 3), 0);
    px_graph_free(g);
}

Test(onnx_import, typed_count_mismatch_names_tensor) {
    int64_t dims[2] = {2, 3};
    Onnx__TensorProto *t = mb_tensor("bias7", PX_F32, 2, dims);
    fill_float(t); /* 3 values for 6 elements */
    px_diag d;
    px_graph *g = load_tensor(t, NULL, &d);
    expect_error(g, &d, "bias7");
    cr_assert(strstr(d.text, "float_data holds 3 values"), "%s", d.text);
}

Test(onnx_import, wrong_typed_field_rejected) {
    px_diag d;
    px_graph *g = load_typed(PX_F32, 2, fill_int64, &d);
    expect_error(g, &d, "int64_data");
}

Test(onnx_import, raw_and_typed_together_rejected) {
    int64_t dims[1] = {3};
    Onnx__TensorProto *t = mb_tensor("W", PX_F32, 1, dims);
    fill_float(t);
    float v[3] = {0};
    mb_raw(t, v, sizeof v);
    px_diag d;
    expect_error(load_tensor(t, NULL, &d), &d, "both raw_data and float_data");
}

Test(onnx_import, missing_data_rejected_but_empty_tensor_ok) {
    int64_t dims[2] = {2, 3};
    px_diag d;
    expect_error(load_tensor(mb_tensor("W", PX_F32, 2, dims), NULL, &d), &d, "no data");
    int64_t zero[2] = {0, 3};
    px_graph *g = load_tensor(mb_tensor("E", PX_F32, 2, zero), NULL, &d);
    cr_assert_not_null(g, "%s", d.text);
    const px_tensor *e = tensor_of(g, "E");
    cr_assert_eq(px_tensor_numel(e), 0);
    cr_assert_eq(e->nbytes, 0);
    px_graph_free(g);
}

Test(onnx_import, scalar_tensor) {
    Onnx__TensorProto *t = mb_tensor("s", PX_F32, 0, NULL);
    t->n_float_data = 1;
    t->float_data = mb_dup(&(float){7.0f}, sizeof(float));
    px_diag d;
    px_graph *g = load_tensor(t, NULL, &d);
    cr_assert_not_null(g, "%s", d.text);
    const px_tensor *s = tensor_of(g, "s");
    cr_assert_eq(s->shape.rank, 0);
    cr_assert_eq(*(const float *)s->data, 7.0f);
    px_graph_free(g);
}

Test(onnx_import, bad_dims_and_types_rejected) {
    px_diag d;
    int64_t neg[2] = {2, -3};
    expect_error(load_tensor(mb_tensor("N", PX_F32, 2, neg), NULL, &d), &d, "negative dimension");
    int64_t huge[2] = {INT64_C(1) << 62, INT64_C(1) << 62};
    expect_error(load_tensor(mb_tensor("H", PX_F32, 2, huge), NULL, &d), &d, "overflows");
    /* Large but representable: must be refused by the length check, not by
     * trying to allocate 4 TiB. */
    int64_t big[1] = {INT64_C(1) << 40};
    Onnx__TensorProto *t = mb_tensor("B", PX_F32, 1, big);
    mb_raw(t, "abcd", 4);
    expect_error(load_tensor(t, NULL, &d), &d, "raw_data has 4 bytes");
    int64_t dims17[17];
    for (int i = 0; i < 17; i++) dims17[i] = 1;
    expect_error(load_tensor(mb_tensor("R", PX_F32, 17, dims17), NULL, &d), &d, "rank 17");
    expect_error(load_tensor(mb_tensor("T", 99, 0, NULL), NULL, &d), &d, "unknown data_type 99");
    t = mb_tensor("U", PX_F32, 0, NULL);
    t->has_data_type = 0;
    expect_error(load_tensor(t, NULL, &d), &d, "no data_type");
}

Test(onnx_import, segment_rejected) {
    int64_t dims[1] = {1};
    Onnx__TensorProto *t = mb_tensor("seg", PX_F32, 1, dims);
    fill_float(t);
    t->n_float_data = 1;
    Onnx__TensorProto__Segment *s = mb_alloc(sizeof *s);
    onnx__tensor_proto__segment__init(s);
    s->has_begin = s->has_end = 1;
    s->end = 1;
    t->segment = s;
    px_diag d;
    expect_error(load_tensor(t, NULL, &d), &d, "segment");
}

/* ---- external data ---- */

static char tmpdir[256];

static void make_tmpdir(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/px_import_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmpdir(void) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

static void write_file(const char *rel, const void *data, size_t len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* Writes weights.bin = 8 junk bytes then 6 floats 0..5 (at offset 8). */
static void write_weights(const char *rel) {
    unsigned char buf[8 + 24];
    memset(buf, 0xAB, 8);
    for (int i = 0; i < 6; i++) {
        float f = (float)i;
        memcpy(buf + 8 + 4 * i, &f, 4);
    }
    write_file(rel, buf, sizeof buf);
}

static Onnx__TensorProto *ext_tensor(const char *loc, const char *off, const char *len) {
    int64_t dims[2] = {2, 3};
    Onnx__TensorProto *t = mb_tensor("W", PX_F32, 2, dims);
    mb_external(t, loc, off, len);
    return t;
}

Test(onnx_import, external_data_read_from_model_folder) {
    make_tmpdir();
    write_weights("weights.bin");
    /* Through load_file, so the folder comes from the model's path. */
    Onnx__GraphProto *g = mb_graph("g");
    MB_PUSH(g, initializer, ext_tensor("weights.bin", "8", "24"));
    MB_PUSH(g, output, mb_vi("W", NULL));
    size_t len;
    void *buf = mb_pack(mb_model(g, 17), &len);
    write_file("model.onnx", buf, len);
    char path[512];
    snprintf(path, sizeof path, "%s/model.onnx", tmpdir);
    px_diag d;
    px_diag_init(&d);
    px_graph *pg = px_onnx_load_file(path, NULL, &d);
    cr_assert_not_null(pg, "%s", d.text);
    const px_tensor *w = tensor_of(pg, "W");
    cr_assert_eq(w->nbytes, 24);
    for (int i = 0; i < 6; i++) cr_assert_eq(((const float *)w->data)[i], (float)i);
    px_graph_free(pg);
    rm_tmpdir();
}

Test(onnx_import, external_data_subfolder_and_no_length) {
    make_tmpdir();
    char sub[512];
    snprintf(sub, sizeof sub, "%s/sub", tmpdir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    write_weights("sub/w.bin");
    px_diag d;
    /* No length: runs to the end of the file (24 bytes after offset 8). */
    px_graph *g = load_tensor(ext_tensor("sub/w.bin", "8", NULL), tmpdir, &d);
    cr_assert_not_null(g, "%s", d.text);
    cr_assert_eq(((const float *)tensor_of(g, "W")->data)[5], 5.0f);
    px_graph_free(g);
    rm_tmpdir();
}

Test(onnx_import, external_data_escapes_rejected) {
    make_tmpdir();
    char inner[512];
    snprintf(inner, sizeof inner, "%s/model", tmpdir);
    cr_assert_eq(mkdir(inner, 0755), 0);
    write_weights("secret.bin"); /* exists, but outside the model's folder */
    px_diag d;
    expect_error(load_tensor(ext_tensor("../secret.bin", "8", "24"), inner, &d), &d,
                 "outside the model's folder");
    expect_error(load_tensor(ext_tensor("a/../../secret.bin", "8", "24"), inner, &d), &d,
                 "cannot open");
    char target[1024], link[1024];
    snprintf(target, sizeof target, "%s/secret.bin", tmpdir);
    snprintf(link, sizeof link, "%s/link.bin", inner);
    cr_assert_eq(symlink(target, link), 0);
    expect_error(load_tensor(ext_tensor("link.bin", "8", "24"), inner, &d), &d,
                 "outside the model's folder");
    expect_error(load_tensor(ext_tensor(target, "8", "24"), inner, &d), &d, "absolute path");
    rm_tmpdir();
}

Test(onnx_import, external_data_bad_ranges_rejected) {
    make_tmpdir();
    write_weights("w.bin"); /* 32 bytes */
    px_diag d;
    expect_error(load_tensor(ext_tensor("w.bin", "4096", "24"), tmpdir, &d), &d,
                 "offset 4096 is outside");
    expect_error(load_tensor(ext_tensor("w.bin", "16", "24"), tmpdir, &d), &d, "runs past the end");
    expect_error(load_tensor(ext_tensor("w.bin", "0", "32"), tmpdir, &d), &d,
                 "holds 32 bytes but a float tensor [2,3] needs 24");
    expect_error(load_tensor(ext_tensor("w.bin", "12x", "24"), tmpdir, &d), &d,
                 "not a non-negative integer");
    expect_error(load_tensor(ext_tensor("w.bin", "-8", "24"), tmpdir, &d), &d,
                 "not a non-negative integer");
    expect_error(load_tensor(ext_tensor("missing.bin", "0", "24"), tmpdir, &d), &d, "cannot open");
    expect_error(load_tensor(ext_tensor(NULL, "0", "24"), tmpdir, &d), &d, "no 'location'");
    /* From a buffer without a folder, external data cannot be resolved. */
    expect_error(load_tensor(ext_tensor("w.bin", "8", "24"), NULL, &d), &d, "without a folder");
    rm_tmpdir();
}

Test(onnx_import, external_data_mmap_unaligned_offset) {
    make_tmpdir();
    size_t n = 600000, off = 100; /* 2.4 MB: above the mmap threshold */
    unsigned char *buf = malloc(off + 4 * n);
    cr_assert_not_null(buf);
    for (size_t i = 0; i < n; i++) {
        float f = (float)i;
        memcpy(buf + off + 4 * i, &f, 4);
    }
    write_file("big.bin", buf, off + 4 * n);
    free(buf);
    int64_t dims[1] = {(int64_t)n};
    Onnx__TensorProto *t = mb_tensor("W", PX_F32, 1, dims);
    mb_external(t, "big.bin", "100", NULL);
    px_diag d;
    px_graph *g = load_tensor(t, tmpdir, &d);
    cr_assert_not_null(g, "%s", d.text);
    const px_tensor *w = tensor_of(g, "W");
    cr_assert_eq(w->storage, PX_STORAGE_MMAP);
    cr_assert_eq(((const float *)w->data)[0], 0.0f);
    cr_assert_eq(((const float *)w->data)[n - 1], (float)(n - 1));
    px_graph_free(g);
    rm_tmpdir();
}

Test(onnx_import, external_data_over_2gib_is_mapped_not_read) {
    make_tmpdir();
    /* A sparse 2.5 GiB file: costs no disk, and mapping it reads nothing. */
    const int64_t bytes = INT64_C(5) << 29, n = bytes / 4;
    char path[512];
    snprintf(path, sizeof path, "%s/huge.bin", tmpdir);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    cr_assert(fd >= 0);
    cr_assert_eq(ftruncate(fd, (off_t)bytes), 0);
    float last = 42.5f;
    cr_assert_eq(pwrite(fd, &last, 4, (off_t)(bytes - 4)), 4);
    close(fd);
    int64_t dims[2] = {n / 1024, 1024};
    Onnx__TensorProto *t = mb_tensor("E", PX_F32, 2, dims);
    mb_external(t, "huge.bin", "0", "2684354560");
    px_diag d;
    px_graph *g = load_tensor(t, tmpdir, &d);
    cr_assert_not_null(g, "%s", d.text);
    const px_tensor *e = tensor_of(g, "E");
    cr_assert_eq(e->storage, PX_STORAGE_MMAP);
    cr_assert_eq((int64_t)e->nbytes, bytes);
    cr_assert_eq(px_tensor_numel(e), n);
    cr_assert_eq(((const float *)e->data)[n - 1], 42.5f);
    cr_assert_eq(((const float *)e->data)[12345], 0.0f);
    px_graph_free(g);
    rm_tmpdir();
}

/* ---- sparse tensors ---- */

static Onnx__SparseTensorProto *sparse_3x4(int coords) {
    Onnx__SparseTensorProto *sp = mb_alloc(sizeof *sp);
    onnx__sparse_tensor_proto__init(sp);
    static const int64_t dense_dims[2] = {3, 4};
    sp->n_dims = 2;
    sp->dims = mb_dup(dense_dims, sizeof dense_dims);
    static const float vals[3] = {1.0f, 2.0f, 3.0f};
    sp->values = mb_floats_tensor("S", 3, vals);
    /* (0,1), (1,3), (2,0) = linear 1, 7, 8 */
    static const int64_t co[6] = {0, 1, 1, 3, 2, 0}, lin[3] = {1, 7, 8};
    int64_t idims[2] = {3, 2};
    sp->indices = mb_tensor("", PX_I64, coords ? 2 : 1, idims);
    sp->indices->n_int64_data = coords ? 6 : 3;
    sp->indices->int64_data = mb_dup(coords ? co : lin, (coords ? 6 : 3) * sizeof(int64_t));
    return sp;
}

static void check_dense_3x4(const px_tensor *t) {
    cr_assert_eq(t->dtype, PX_F32);
    cr_assert_eq(t->shape.rank, 2);
    cr_assert_eq(t->shape.dims[1], 4);
    const float *f = t->data;
    for (int i = 0; i < 12; i++) {
        float want = i == 1 ? 1.0f : i == 7 ? 2.0f : i == 8 ? 3.0f : 0.0f;
        cr_assert_eq(f[i], want, "element %d", i);
    }
}

Test(onnx_import, sparse_initializer_densified) {
    for (int coords = 0; coords < 2; coords++) {
        Onnx__GraphProto *g = mb_graph("g");
        MB_PUSH(g, sparse_initializer, sparse_3x4(coords));
        MB_PUSH(g, output, mb_vi("S", NULL));
        px_diag d;
        px_graph *pg = mb_load(mb_model(g, 17), NULL, 0, &d);
        cr_assert_not_null(pg, "%s", d.text);
        check_dense_3x4(tensor_of(pg, "S"));
        px_graph_free(pg);
    }
}

Test(onnx_import, sparse_bad_index_and_huge_dense_rejected) {
    Onnx__SparseTensorProto *sp = sparse_3x4(0);
    sp->indices->int64_data[2] = 12;
    Onnx__GraphProto *g = mb_graph("g");
    MB_PUSH(g, sparse_initializer, sp);
    px_diag d;
    expect_error(mb_load(mb_model(g, 17), NULL, 0, &d), &d, "out of range");
    sp = sparse_3x4(0);
    sp->dims[0] = INT64_C(1) << 40;
    g = mb_graph("g");
    MB_PUSH(g, sparse_initializer, sp);
    expect_error(mb_load(mb_model(g, 17), NULL, 0, &d), &d, "densified");
}

/* ---- nodes and attributes ---- */

/* x -> op -> y, with x and y 1-D float[4]. */
static Onnx__GraphProto *one_node_graph(Onnx__NodeProto *n) {
    Onnx__GraphProto *g = mb_graph("main");
    MB_PUSH(g, input, mb_vi_f("x", 4));
    MB_PUSH(g, output, mb_vi_f("y", 4));
    MB_PUSH(g, node, n);
    return g;
}

Test(onnx_import, attributes_of_every_plain_kind) {
    Onnx__NodeProto *n = mb_node("Identity", NULL, "id0", "x", "y");
    Onnx__AttributeProto *a;
    a = mb_attr(n, "f", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1, a->f = 0.25f;
    a = mb_attr(n, "i", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1, a->i = -7;
    a = mb_attr(n, "s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1, a->s.len = 3, a->s.data = mb_dup("abc", 3);
    a = mb_attr(n, "t", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    static const float tv[2] = {5, 6};
    a->t = mb_floats_tensor("tv", 2, tv);
    a = mb_attr(n, "fs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    static const float fs[3] = {1, 2, 3};
    a->n_floats = 3, a->floats = mb_dup(fs, sizeof fs);
    a = mb_attr(n, "is", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    static const int64_t is[2] = {-1, INT64_MAX};
    a->n_ints = 2, a->ints = mb_dup(is, sizeof is);
    a = mb_attr(n, "ss", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    a->n_strings = 2, a->strings = mb_alloc(2 * sizeof *a->strings);
    a->strings[0].len = 1, a->strings[0].data = mb_dup("p", 1);
    a->strings[1].len = 2, a->strings[1].data = mb_dup("qr", 2);
    a = mb_attr(n, "ts", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS);
    a->n_tensors = 2, a->tensors = mb_alloc(2 * sizeof *a->tensors);
    a->tensors[0] = mb_floats_tensor("a", 1, tv);
    a->tensors[1] = mb_floats_tensor("b", 2, tv);
    a = mb_attr(n, "sp", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR);
    a->sparse_tensor = sparse_3x4(1);
    a = mb_attr(n, "sps", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS);
    a->n_sparse_tensors = 1, a->sparse_tensors = mb_alloc(sizeof *a->sparse_tensors);
    a->sparse_tensors[0] = sparse_3x4(0);
    a = mb_attr(n, "tp", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO);
    int64_t tdims[2] = {-1, 8};
    const char *syms[2] = {"batch", NULL};
    a->tp = mb_type(PX_I64, 2, tdims, syms);
    a = mb_attr(n, "tps", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS);
    a->n_type_protos = 2, a->type_protos = mb_alloc(2 * sizeof *a->type_protos);
    a->type_protos[0] = mb_type(PX_F16, -1, NULL, NULL);
    a->type_protos[1] = mb_type(PX_BOOL, 0, NULL, NULL);

    px_diag d;
    px_graph *g = mb_load(mb_model(one_node_graph(n), 17), NULL, 0, &d);
    cr_assert_not_null(g, "%s", d.text);
    px_node *pn = g->nodes[0];
    cr_assert_eq(pn->op, PX_OP_Identity);
    cr_assert_eq(pn->n_attrs, 12);
    cr_assert_eq(px_attr_float(pn, "f", 0), 0.25f);
    cr_assert_eq(px_attr_int(pn, "i", 0), -7);
    cr_assert_str_eq(px_attr_string(pn, "s", NULL), "abc");
    const px_tensor *t = px_attr_tensor(pn, "t");
    cr_assert_not_null(t);
    cr_assert_eq(((const float *)t->data)[1], 6.0f);
    int cnt;
    const float *f = px_attr_floats(pn, "fs", &cnt);
    cr_assert_eq(cnt, 3);
    cr_assert_eq(f[2], 3.0f);
    const int64_t *ints = px_attr_ints(pn, "is", &cnt);
    cr_assert_eq(cnt, 2);
    cr_assert_eq(ints[1], INT64_MAX);
    const px_attr *pa = px_node_attr(pn, "ss");
    cr_assert_eq(pa->kind, PX_ATTR_STRINGS);
    cr_assert_eq(pa->n, 2);
    cr_assert_str_eq(pa->strings[1].data, "qr");
    pa = px_node_attr(pn, "ts");
    cr_assert_eq(pa->kind, PX_ATTR_TENSORS);
    cr_assert_eq(pa->n, 2);
    cr_assert_eq(px_tensor_numel(pa->tensors[1]), 2);
    pa = px_node_attr(pn, "sp");
    cr_assert_eq(pa->kind, PX_ATTR_SPARSE_TENSOR);
    check_dense_3x4(pa->t);
    pa = px_node_attr(pn, "sps");
    cr_assert_eq(pa->kind, PX_ATTR_SPARSE_TENSORS);
    cr_assert_eq(pa->n, 1);
    check_dense_3x4(pa->tensors[0]);
    pa = px_node_attr(pn, "tp");
    cr_assert_eq(pa->kind, PX_ATTR_TYPE_PROTO);
    cr_assert_eq(pa->tp_dtype, PX_I64);
    cr_assert_eq(pa->tp_shape->rank, 2);
    cr_assert_eq(pa->tp_shape->dims[0], -1);
    cr_assert_str_eq(px_shape_sym(pa->tp_shape, 0), "batch");
    cr_assert_eq(pa->tp_shape->dims[1], 8);
    pa = px_node_attr(pn, "tps");
    cr_assert_eq(pa->kind, PX_ATTR_TYPE_PROTOS);
    cr_assert_eq(pa->n, 2);
    cr_assert_eq(pa->tp_dtypes[0], PX_F16);
    cr_assert_eq(pa->tp_shapes[0].rank, -1);
    cr_assert_eq(pa->tp_dtypes[1], PX_BOOL);
    cr_assert_eq(pa->tp_shapes[1].rank, 0);
    px_graph_free(g);
}

Test(onnx_import, attribute_kind_inferred_when_type_unset) {
    Onnx__NodeProto *n = mb_node("Identity", NULL, "id0", "x", "y");
    Onnx__AttributeProto *a = mb_attr(n, "i", 0);
    a->has_i = 1, a->i = 3;
    a = mb_attr(n, "fs", 0);
    static const float fs[2] = {1, 2};
    a->n_floats = 2, a->floats = mb_dup(fs, sizeof fs);
    a = mb_attr(n, "t", 0);
    a->t = mb_floats_tensor("tt", 2, fs);
    px_diag d;
    px_graph *g = mb_load(mb_model(one_node_graph(n), 17), NULL, 0, &d);
    cr_assert_not_null(g, "%s", d.text);
    cr_assert_eq(px_node_attr(g->nodes[0], "i")->kind, PX_ATTR_INT);
    cr_assert_eq(px_node_attr(g->nodes[0], "fs")->kind, PX_ATTR_FLOATS);
    cr_assert_eq(px_node_attr(g->nodes[0], "t")->kind, PX_ATTR_TENSOR);
    px_graph_free(g);

    n = mb_node("Identity", NULL, "id0", "x", "y");
    mb_attr(n, "nothing", 0);
    expect_error(mb_load(mb_model(one_node_graph(n), 17), NULL, 0, &d), &d,
                 "neither a type nor a value");
    n = mb_node("Identity", NULL, "id0", "x", "y");
    a = mb_attr(n, "two", 0);
    a->has_i = a->has_f = 1;
    expect_error(mb_load(mb_model(one_node_graph(n), 17), NULL, 0, &d), &d,
                 "more than one value field");
    n = mb_node("Identity", NULL, "id0", "x", "y");
    mb_attr(n, "dup", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)->has_i = 1;
    mb_attr(n, "dup", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)->has_i = 1;
    expect_error(mb_load(mb_model(one_node_graph(n), 17), NULL, 0, &d), &d, "given twice");
    n = mb_node("Identity", NULL, "id0", "x", "y");
    mb_attr(n, "t", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    expect_error(mb_load(mb_model(one_node_graph(n), 17), NULL, 0, &d), &d,
                 "type TENSOR but no tensor");
}

Test(onnx_import, constant_node_kept_as_node) {
    Onnx__GraphProto *g = mb_graph("main");
    Onnx__NodeProto *c = mb_node("Constant", NULL, "c0", "", "k");
    static const float kv[4] = {1, 2, 3, 4};
    mb_attr(c, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t =
        mb_floats_tensor("kv", 4, kv);
    MB_PUSH(g, node, c);
    MB_PUSH(g, input, mb_vi_f("x", 4));
    MB_PUSH(g, node, mb_node("Add", NULL, "add0", "x k", "y"));
    MB_PUSH(g, output, mb_vi_f("y", 4));
    px_diag d;
    px_graph *pg = mb_load(mb_model(g, 17), NULL, 0, &d);
    cr_assert_not_null(pg, "%s", d.text);
    cr_assert_eq(pg->n_nodes, 2);
    cr_assert_eq(pg->nodes[0]->op, PX_OP_Constant);
    cr_assert_eq(((const float *)px_attr_tensor(pg->nodes[0], "value")->data)[3], 4.0f);
    px_value *k = px_graph_find_value(pg, "k");
    cr_assert_eq(k->kind, PX_VALUE_INTERMEDIATE);
    cr_assert_eq(k->producer, pg->nodes[0]);
    cr_assert_eq(pg->nodes[1]->inputs[1], k);
    px_graph_free(pg);
}

/* If node whose branches read the outer value "x" and "w". */
static Onnx__ModelProto *if_model(void) {
    Onnx__GraphProto *g = mb_graph("main");
    MB_PUSH(g, input, mb_vi("cond", mb_type(PX_BOOL, 0, NULL, NULL)));
    MB_PUSH(g, input, mb_vi_f("x", 4));
    MB_PUSH(g, node, mb_node("Relu", NULL, "r", "x", "w"));
    Onnx__NodeProto *n = mb_node("If", NULL, "if0", "cond", "y");
    Onnx__GraphProto *then_g = mb_graph("then");
    MB_PUSH(then_g, node, mb_node("Neg", NULL, "neg", "w", "t_out"));
    MB_PUSH(then_g, output, mb_vi_f("t_out", 4));
    Onnx__GraphProto *else_g = mb_graph("else");
    MB_PUSH(else_g, output, mb_vi_f("x", 4)); /* returns the outer value itself */
    mb_attr(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = then_g;
    mb_attr(n, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = else_g;
    Onnx__AttributeProto *gs = mb_attr(n, "more", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS);
    gs->n_graphs = 1, gs->graphs = mb_alloc(sizeof *gs->graphs);
    gs->graphs[0] = mb_graph("g0");
    MB_PUSH(gs->graphs[0], output, mb_vi_f("w", 4));
    MB_PUSH(g, node, n);
    MB_PUSH(g, output, mb_vi_f("y", 4));
    return mb_model(g, 17);
}

/* An If on a graph input can never fold: refused by name at import. */
Test(onnx_import, runtime_if_refused_by_name) {
    px_diag d;
    px_graph *g = mb_load(if_model(), NULL, 0, &d);
    expect_error(g, &d, "unsupported operator use in node 'if0' (If): its condition 'cond'");
}

/* If on a constant: the chosen branch replaces it, keeping the output name. */
Test(onnx_import, constant_if_inlined) {
    Onnx__ModelProto *m = if_model();
    Onnx__GraphProto *g = m->graph;
    Onnx__NodeProto *c = mb_node("Constant", NULL, "c0", "", "cond");
    Onnx__TensorProto *t = mb_alloc(sizeof *t);
    onnx__tensor_proto__init(t);
    t->has_data_type = 1;
    t->data_type = PX_BOOL;
    t->n_int32_data = 1;
    t->int32_data = mb_alloc(sizeof *t->int32_data);
    t->int32_data[0] = 1;
    mb_attr(c, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = t;
    g->n_input = 1; /* drop the input cond: a Constant makes it */
    g->input[0] = g->input[1];
    MB_PUSH(g, node, c);
    px_diag d;
    px_graph *pg = mb_load(m, NULL, 0, &d);
    cr_assert_not_null(pg, "%s", d.text);
    px_value *y = px_graph_find_value(pg, "y");
    cr_assert_not_null(y->producer);
    cr_assert_str_eq(y->producer->op_type, "Neg");
    cr_assert_str_eq(y->producer->inputs[0]->name, "w");
    for (int i = 0; i < pg->n_nodes; i++) cr_assert_neq(pg->nodes[i]->op, PX_OP_If);
    px_graph_free(pg);
}

/* If nodes nested in each other's branches, `depth` deep; the innermost
 * branch returns the outer value x. */
static Onnx__GraphProto *nested_ifs(int depth) {
    Onnx__GraphProto *g = mb_graph("inner");
    MB_PUSH(g, output, mb_vi_f("x", 4));
    for (int k = 0; k < depth; k++) {
        Onnx__GraphProto *outer = mb_graph("level");
        char out[32];
        snprintf(out, sizeof out, "y%d", k);
        Onnx__NodeProto *n = mb_node("If", NULL, "nested_if", "cond", out);
        mb_attr(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = g;
        Onnx__GraphProto *e = mb_graph("else");
        MB_PUSH(e, output, mb_vi_f("x", 4));
        mb_attr(n, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = e;
        MB_PUSH(outer, node, n);
        MB_PUSH(outer, output, mb_vi_f(out, 4));
        g = outer;
    }
    return g;
}

/* Subgraphs nested deeper than PX_CONTROL_FLOW_MAX_DEPTH: an error, not a
 * deep recursion; at the limit the model still imports and inlines. */
Test(onnx_import, nested_subgraphs_bounded) {
    for (int depth = PX_CONTROL_FLOW_MAX_DEPTH; depth <= PX_CONTROL_FLOW_MAX_DEPTH + 8;
         depth += 8) {
        Onnx__GraphProto *g = nested_ifs(depth);
        g->name = "main";
        Onnx__NodeProto *c = mb_node("Constant", NULL, "c0", "", "cond");
        Onnx__TensorProto *t = mb_alloc(sizeof *t);
        onnx__tensor_proto__init(t);
        t->has_data_type = 1;
        t->data_type = PX_BOOL;
        t->n_int32_data = 1;
        t->int32_data = mb_alloc(sizeof *t->int32_data);
        t->int32_data[0] = 1;
        mb_attr(c, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = t;
        /* the Constant first: the outermost graph is main */
        Onnx__NodeProto *first = g->node[0];
        g->node[0] = c;
        MB_PUSH(g, node, first);
        MB_PUSH(g, input, mb_vi_f("x", 4));
        px_diag d;
        px_graph *pg = mb_load(mb_model(g, 17), NULL, 0, &d);
        if (depth > PX_CONTROL_FLOW_MAX_DEPTH) {
            expect_error(pg, &d, "nests subgraphs (If/Loop bodies) more than");
            continue;
        }
        cr_assert_not_null(pg, "%s", d.text);
        for (int i = 0; i < pg->n_nodes; i++) cr_assert_neq(pg->nodes[i]->op, PX_OP_If);
        px_graph_free(pg);
    }
}

/* A Loop that is not PyTorch's nn.EmbeddingBag is refused by name. */
Test(onnx_import, other_loop_refused_by_name) {
    Onnx__GraphProto *g = mb_graph("main");
    MB_PUSH(g, input, mb_vi_f("x", 4));
    Onnx__NodeProto *loop = mb_node("Loop", NULL, "loop0", "- - x", "y");
    mb_attr(loop, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = mb_graph("body");
    MB_PUSH(g, node, loop);
    MB_PUSH(g, output, mb_vi_f("y", 4));
    px_diag d;
    px_graph *pg = mb_load(mb_model(g, 17), NULL, 0, &d);
    expect_error(pg, &d, "unsupported operator use in node 'loop0' (Loop)");
}

Test(onnx_import, subgraph_imported_with_outer_values) {
    px_diag d;
    px_graph *g = mb_load(if_model(), NULL, 1, &d); /* allow_unsupported keeps it */
    cr_assert_not_null(g, "%s", d.text);
    px_node *n = g->nodes[1];
    cr_assert_eq(n->op, PX_OP_If);
    const px_attr *a = px_node_attr(n, "then_branch");
    cr_assert_eq(a->kind, PX_ATTR_GRAPH);
    px_graph *tg = a->g;
    cr_assert_eq(tg->parent, g);
    px_value *w = px_graph_find_value(tg, "w");
    cr_assert_not_null(w);
    cr_assert_eq(w->kind, PX_VALUE_OUTER);
    cr_assert_eq(tg->nodes[0]->inputs[0], w);
    cr_assert_eq(tg->n_outputs, 1);
    px_graph *eg = px_node_attr(n, "else_branch")->g;
    cr_assert_eq(eg->outputs[0]->kind, PX_VALUE_OUTER);
    cr_assert_str_eq(eg->outputs[0]->name, "x");
    a = px_node_attr(n, "more");
    cr_assert_eq(a->kind, PX_ATTR_GRAPHS);
    cr_assert_eq(a->n, 1);
    cr_assert_eq(a->graphs[0]->parent, g);
    cr_assert_eq(a->graphs[0]->outputs[0]->kind, PX_VALUE_OUTER);
    px_graph_free(g);
}

Test(onnx_import, unsupported_ops_listed_in_one_error) {
    Onnx__GraphProto *g = mb_graph("main");
    MB_PUSH(g, input, mb_vi_f("x", 4));
    MB_PUSH(g, node, mb_node("Relu", NULL, "ok", "x", "a"));
    MB_PUSH(g, node, mb_node("FancyOp", NULL, "bad1", "a", "b"));
    MB_PUSH(g, node, mb_node("TreeEnsembleClassifier", "ai.onnx.ml", "bad2", "b", "c"));
    Onnx__NodeProto *loop = mb_node("Loop", NULL, "bad3", "- - c", "y");
    mb_attr(loop, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = mb_graph("body");
    MB_PUSH(g, node, loop);
    MB_PUSH(g, output, mb_vi_f("y", 4));
    px_diag d;
    px_graph *pg = mb_load(mb_model(g, 17), NULL, 0, &d);
    /* (The Loop is judged after import, once its body is read: see
     * other_loop_refused_by_name.) */
    expect_error(pg, &d, "error: unsupported operators in <buffer>: 2 nodes\n");
    cr_assert_eq(strncmp(d.text, "error: unsupported operator", 27), 0, "%s", d.text);
    cr_assert(strstr(d.text, "'bad1' (ai.onnx::FancyOp)"), "%s", d.text);
    cr_assert(strstr(d.text, "'bad2' (ai.onnx.ml::TreeEnsembleClassifier)"), "%s", d.text);
    cr_assert_null(strstr(d.text, "'ok'"), "%s", d.text);
    cr_assert_eq(d.errors, 1);
    /* allow_unsupported keeps them as unknown ops (the empty Loop body has
     * no outputs, which is fine for the importer). */
    pg = mb_load(mb_model(g, 17), NULL, 1, &d);
    cr_assert_not_null(pg, "%s", d.text);
    cr_assert_eq(pg->nodes[1]->op, PX_OP_UNKNOWN);
    cr_assert_str_eq(pg->nodes[2]->domain, "ai.onnx.ml");
    cr_assert_eq(pg->nodes[3]->inputs[0], NULL);
    px_graph_free(pg);
}

Test(onnx_import, sequence_values_are_unsupported) {
    Onnx__GraphProto *g = mb_graph("main");
    Onnx__TypeProto *seq = mb_alloc(sizeof *seq);
    onnx__type_proto__init(seq);
    Onnx__TypeProto__Sequence *s = mb_alloc(sizeof *s);
    onnx__type_proto__sequence__init(s);
    s->elem_type = mb_type(PX_F32, -1, NULL, NULL);
    seq->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    seq->sequence_type = s;
    MB_PUSH(g, input, mb_vi("xs", seq));
    MB_PUSH(g, node, mb_node("Identity", NULL, "id", "xs", "ys"));
    MB_PUSH(g, output, mb_vi("ys", seq));
    px_diag d;
    expect_error(mb_load(mb_model(g, 17), NULL, 0, &d), &d, "unsupported operators");
    cr_assert(strstr(d.text, "not a tensor"), "%s", d.text);
}

Test(onnx_import, training_domain_ops_are_normal) {
    Onnx__GraphProto *g = mb_graph("main");
    MB_PUSH(g, input, mb_vi_f("r", 1));
    MB_PUSH(g, input, mb_vi_f("t", 1));
    MB_PUSH(g, input, mb_vi_f("x", 4));
    MB_PUSH(g, input, mb_vi_f("gx", 4));
    MB_PUSH(g, input, mb_vi_f("v", 4));
    MB_PUSH(g, input, mb_vi_f("h", 4));
    MB_PUSH(g, node,
            mb_node("Adam", "ai.onnx.preview.training", "adam", "r t x gx v h", "x2 v2 h2"));
    MB_PUSH(g, output, mb_vi_f("x2", 4));
    Onnx__ModelProto *m = mb_model(g, 17);
    Onnx__OperatorSetIdProto *o = mb_alloc(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = mb_str("ai.onnx.preview.training");
    o->has_version = 1, o->version = 1;
    m->opset_import[m->n_opset_import++] = o;
    px_diag d;
    px_graph *pg = mb_load(m, NULL, 0, &d);
    cr_assert_not_null(pg, "%s", d.text);
    cr_assert_eq(pg->nodes[0]->op, PX_OP_Adam);
    cr_assert_eq(px_graph_opset(pg, "ai.onnx.preview.training"), 1);
    px_graph_free(pg);
}

/* ---- model metadata, graph I/O, value_info ---- */

Test(onnx_import, model_fields_and_opsets) {
    Onnx__GraphProto *g = one_node_graph(mb_node("Relu", NULL, "r", "x", "y"));
    g->doc_string = mb_str("graph doc");
    g->node[0]->doc_string = mb_str("node doc");
    Onnx__ModelProto *m = mb_model(g, 0);
    m->ir_version = 9;
    m->producer_name = mb_str("pytorch");
    m->producer_version = mb_str("1.13");
    m->domain = mb_str("org.example");
    m->has_model_version = 1, m->model_version = 4;
    m->doc_string = mb_str("model doc");
    for (int i = 0; i < 2; i++) {
        Onnx__OperatorSetIdProto *o = mb_alloc(sizeof *o);
        onnx__operator_set_id_proto__init(o);
        o->domain = mb_str(i == 0 ? "ai.onnx" : "com.example");
        o->has_version = 1, o->version = i == 0 ? 21 : 2;
        m->opset_import[m->n_opset_import++] = o;
    }
    Onnx__StringStringEntryProto *e = mb_alloc(sizeof *e);
    onnx__string_string_entry_proto__init(e);
    e->key = mb_str("author"), e->value = mb_str("me");
    m->metadata_props[m->n_metadata_props++] = e;
    px_diag d;
    px_graph *pg = mb_load(m, NULL, 0, &d);
    cr_assert_not_null(pg, "%s", d.text);
    cr_assert_eq(pg->ir_version, 9);
    cr_assert_eq(px_graph_opset(pg, ""), 21, "ai.onnx and \"\" are the same domain");
    cr_assert_eq(px_graph_opset(pg, "ai.onnx"), 21);
    cr_assert_eq(px_graph_opset(pg, "com.example"), 2);
    cr_assert_str_eq(pg->producer_name, "pytorch");
    cr_assert_str_eq(pg->producer_version, "1.13");
    cr_assert_str_eq(pg->model_domain, "org.example");
    cr_assert_eq(pg->model_version, 4);
    cr_assert_str_eq(pg->model_doc, "model doc");
    cr_assert_str_eq(pg->doc, "graph doc");
    cr_assert_str_eq(pg->nodes[0]->doc, "node doc");
    cr_assert_eq(pg->n_meta, 1);
    cr_assert_str_eq(pg->meta[0].key, "author");
    cr_assert_str_eq(pg->meta[0].value, "me");
    px_graph_free(pg);
}

Test(onnx_import, opsets_1_to_19_accepted_bad_version_rejected) {
    for (int v = 1; v <= 19; v++) {
        px_diag d;
        px_graph *g =
            mb_load(mb_model(one_node_graph(mb_node("Relu", NULL, "r", "x", "y")), v), NULL, 0, &d);
        cr_assert_not_null(g, "opset %d: %s", v, d.text);
        cr_assert_eq(px_graph_opset(g, ""), v);
        px_graph_free(g);
    }
    Onnx__ModelProto *m = mb_model(one_node_graph(mb_node("Relu", NULL, "r", "x", "y")), 17);
    m->opset_import[0]->version = 0;
    px_diag d;
    expect_error(mb_load(m, NULL, 0, &d), &d, "invalid version 0");
}

Test(onnx_import, value_shapes_and_symbolic_dims) {
    Onnx__GraphProto *g = mb_graph("main");
    int64_t dims[3] = {-1, -1, 7};
    const char *syms[3] = {"batch", NULL, NULL};
    MB_PUSH(g, input, mb_vi("x", mb_type(PX_F16, 3, dims, syms)));
    MB_PUSH(g, node, mb_node("Relu", NULL, "r", "x", "h"));
    MB_PUSH(g, node, mb_node("Relu", NULL, "r2", "h", "y"));
    int64_t hd[1] = {5};
    MB_PUSH(g, value_info, mb_vi("h", mb_type(PX_F16, 1, hd, NULL)));
    MB_PUSH(g, value_info, mb_vi("not_a_value", mb_type(PX_F16, 1, hd, NULL)));
    MB_PUSH(g, output, mb_vi("y", mb_type(PX_F16, -1, NULL, NULL)));
    px_diag d;
    px_graph *pg = mb_load(mb_model(g, 17), NULL, 0, &d);
    cr_assert_not_null(pg, "%s", d.text);
    px_value *x = px_graph_find_value(pg, "x");
    cr_assert_eq(x->kind, PX_VALUE_INPUT);
    cr_assert_eq(x->dtype, PX_F16);
    cr_assert_eq(x->shape.rank, 3);
    cr_assert_eq(x->shape.dims[0], -1);
    cr_assert_eq(px_shape_sym(&x->shape, 0), px_intern("batch"), "dim_param is interned");
    cr_assert_eq(x->shape.dims[1], -1);
    cr_assert_null(px_shape_sym(&x->shape, 1));
    cr_assert_eq(x->shape.dims[2], 7);
    px_value *h = px_graph_find_value(pg, "h");
    cr_assert_eq(h->shape.rank, 1);
    cr_assert_eq(h->shape.dims[0], 5);
    px_value *y = px_graph_find_value(pg, "y");
    cr_assert(y->is_output);
    cr_assert_eq(y->dtype, PX_F16);
    cr_assert_eq(y->shape.rank, -1);
    cr_assert_eq(pg->n_inputs, 1);
    cr_assert_eq(pg->n_outputs, 1);
    px_graph_free(pg);
}

Test(onnx_import, input_that_is_initializer_has_default) {
    Onnx__GraphProto *g = one_node_graph(mb_node("Add", NULL, "a", "x w", "y"));
    static const float wv[4] = {1, 2, 3, 4};
    MB_PUSH(g, initializer, mb_floats_tensor("w", 4, wv));
    MB_PUSH(g, input, mb_vi_f("w", 4));
    px_diag d;
    px_graph *pg = mb_load(mb_model(g, 17), NULL, 0, &d);
    cr_assert_not_null(pg, "%s", d.text);
    px_value *w = px_graph_find_value(pg, "w");
    cr_assert_eq(w->kind, PX_VALUE_INITIALIZER);
    cr_assert_eq(w->also_input, 1);
    cr_assert_eq(pg->n_inputs, 1, "runtime inputs exclude initializers");
    cr_assert_eq(pg->n_inits, 1);
    cr_assert_eq(pg->inits[0], w);
    px_graph_free(pg);
}

Test(onnx_import, unsorted_nodes_are_toposorted) {
    Onnx__GraphProto *g = mb_graph("main");
    MB_PUSH(g, input, mb_vi_f("x", 4));
    MB_PUSH(g, node, mb_node("Relu", NULL, "second", "a", "y"));
    MB_PUSH(g, node, mb_node("Neg", NULL, "first", "x", "a"));
    MB_PUSH(g, output, mb_vi_f("y", 4));
    px_diag d;
    px_graph *pg = mb_load(mb_model(g, 17), NULL, 0, &d);
    cr_assert_not_null(pg, "%s", d.text);
    cr_assert_str_eq(pg->nodes[0]->name, "first");
    cr_assert_str_eq(pg->nodes[1]->name, "second");
    px_graph_free(pg);
}

/* ---- malformed graphs ---- */

Test(onnx_import, undefined_input_names_node_and_value) {
    Onnx__GraphProto *g = one_node_graph(mb_node("Add", NULL, "adder", "x ghost", "y"));
    px_diag d;
    px_graph *pg = mb_load(mb_model(g, 17), NULL, 0, &d);
    expect_error(pg, &d, "'adder'");
    cr_assert(strstr(d.text, "'ghost'"), "%s", d.text);
    cr_assert(strstr(d.text, "not defined"), "%s", d.text);
}

Test(onnx_import, duplicate_names_rejected) {
    px_diag d;
    Onnx__GraphProto *g = mb_graph("main");
    MB_PUSH(g, input, mb_vi_f("x", 4));
    MB_PUSH(g, node, mb_node("Relu", NULL, "p1", "x", "y"));
    MB_PUSH(g, node, mb_node("Neg", NULL, "p2", "x", "y"));
    MB_PUSH(g, output, mb_vi_f("y", 4));
    expect_error(mb_load(mb_model(g, 17), NULL, 0, &d), &d, "defined twice");
    cr_assert(strstr(d.text, "'p2'") && strstr(d.text, "'p1'"), "%s", d.text);

    g = one_node_graph(mb_node("Relu", NULL, "r", "x", "y"));
    MB_PUSH(g, input, mb_vi_f("x", 4));
    expect_error(mb_load(mb_model(g, 17), NULL, 0, &d), &d, "input 'x' is listed twice");

    static const float wv[1] = {1};
    g = one_node_graph(mb_node("Relu", NULL, "r", "x", "y"));
    MB_PUSH(g, initializer, mb_floats_tensor("w", 1, wv));
    MB_PUSH(g, initializer, mb_floats_tensor("w", 1, wv));
    expect_error(mb_load(mb_model(g, 17), NULL, 0, &d), &d, "initializer 'w' is defined twice");

    g = one_node_graph(mb_node("Relu", NULL, "r", "x", "x"));
    expect_error(mb_load(mb_model(g, 17), NULL, 0, &d), &d, "defined twice");
}

Test(onnx_import, missing_graph_and_outputs) {
    px_diag d;
    Onnx__ModelProto *m = mb_model(mb_graph("g"), 17);
    m->graph = NULL;
    expect_error(mb_load(m, NULL, 0, &d), &d, "has no graph");
    Onnx__GraphProto *g = one_node_graph(mb_node("Relu", NULL, "r", "x", "y"));
    MB_PUSH(g, output, mb_vi_f("nowhere", 4));
    expect_error(mb_load(mb_model(g, 17), NULL, 0, &d), &d, "output 'nowhere' is not produced");
    g = one_node_graph(mb_node("Relu", NULL, "r", "x", "y"));
    g->node[0]->op_type = mb_str("");
    expect_error(mb_load(mb_model(g, 17), NULL, 0, &d), &d, "has no op_type");
}

Test(onnx_import, cycle_rejected) {
    Onnx__GraphProto *g = mb_graph("main");
    MB_PUSH(g, input, mb_vi_f("x", 4));
    MB_PUSH(g, node, mb_node("Add", NULL, "a", "x b", "a_out"));
    MB_PUSH(g, node, mb_node("Relu", NULL, "b", "a_out", "b"));
    MB_PUSH(g, output, mb_vi_f("b", 4));
    px_diag d;
    expect_error(mb_load(mb_model(g, 17), NULL, 0, &d), &d, "cycle");
}
