/* ONNX export: serializes the ModelProto built by onnx_export_graph.c, moves
 * large tensors to an external data file when asked to (or when the model
 * would pass protobuf's 2 GiB limit), and replaces files atomically. */
#include "onnx_export_internal.h"

#include "file_atomic.h"
#include "out_paths.h"
#include "onnx_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

size_t px_export_proto_limit = (size_t)INT32_MAX;

#define EXTERNAL_ALIGN 4096
/* Rough protobuf cost of the external_data entries that replace raw_data. */
#define EXTERNAL_ENTRY_COST 128

/* ---- external data ---- */

typedef struct external_plan {
    const char *location; /* file name relative to the model, e.g. "m.onnx.data" */
    uint64_t size;        /* bytes of the data file */
    int n_external;
} external_plan;

static Onnx__StringStringEntryProto *entry(px_export_ctx *c, const char *key, const char *value) {
    Onnx__StringStringEntryProto *e = px_export_alloc(c, sizeof *e);
    char *v = px_export_alloc(c, strlen(value) + 1);
    if (!e || !v) return NULL;
    onnx__string_string_entry_proto__init(e);
    e->key = (char *)key;
    e->value = strcpy(v, value);
    return e;
}

/* Points b's TensorProto at the external file instead of raw_data. */
static int move_external(px_export_ctx *c, px_export_blob *b, external_plan *plan) {
    uint64_t offset = (plan->size + EXTERNAL_ALIGN - 1) / EXTERNAL_ALIGN * EXTERNAL_ALIGN;
    char num[2][32];
    snprintf(num[0], sizeof num[0], "%llu", (unsigned long long)offset);
    snprintf(num[1], sizeof num[1], "%llu", (unsigned long long)b->len);
    Onnx__TensorProto *tp = b->proto;
    tp->external_data = px_export_alloc(c, 3 * sizeof *tp->external_data);
    if (!tp->external_data) return -1;
    if (!(tp->external_data[0] = entry(c, "location", plan->location)) ||
        !(tp->external_data[1] = entry(c, "offset", num[0])) ||
        !(tp->external_data[2] = entry(c, "length", num[1])))
        return -1;
    tp->n_external_data = 3;
    tp->has_data_location = 1;
    tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    tp->has_raw_data = 0;
    tp->raw_data.len = 0;
    tp->raw_data.data = NULL;
    b->offset = offset;
    b->external = 1;
    plan->size = offset + b->len;
    plan->n_external++;
    return 0;
}

static int by_length_desc(const void *a, const void *b) {
    const px_export_blob *x = *(px_export_blob *const *)a, *y = *(px_export_blob *const *)b;
    return x->len < y->len ? 1 : x->len > y->len ? -1 : 0;
}

/* Moves tensors of at least `threshold` bytes out, then, while the model is
 * still over the protobuf limit, the largest remaining ones. */
static int plan_external(px_export_ctx *c, Onnx__ModelProto *m, size_t threshold,
                         external_plan *plan, const char *path) {
    for (size_t i = 0; threshold && i < c->n_blobs; i++)
        if (c->blobs[i].len >= threshold && move_external(c, &c->blobs[i], plan)) return -1;
    size_t size = onnx__model_proto__get_packed_size(m);
    if (size <= px_export_proto_limit) return 0;

    px_export_blob **order = malloc((c->n_blobs + 1) * sizeof *order);
    if (!order) return px_error(c->d, "ONNX export: out of memory");
    size_t n = 0;
    for (size_t i = 0; i < c->n_blobs; i++)
        if (!c->blobs[i].external) order[n++] = &c->blobs[i];
    qsort(order, n, sizeof *order, by_length_desc);
    int rc = 0;
    for (size_t i = 0; i < n && size > px_export_proto_limit; i++) {
        if ((rc = move_external(c, order[i], plan))) break;
        size = size - order[i]->len + EXTERNAL_ENTRY_COST;
        if (size <= px_export_proto_limit) size = onnx__model_proto__get_packed_size(m);
    }
    free(order);
    if (rc) return rc;
    size = onnx__model_proto__get_packed_size(m);
    if (size > px_export_proto_limit)
        return px_error(c->d,
                        "ONNX export of '%s': the graph structure alone takes %zu bytes, over "
                        "protobuf's limit of %zu even with every tensor in external data",
                        path, size, px_export_proto_limit);
    return 0;
}

/* ---- files ---- */

typedef struct file_sink {
    ProtobufCBuffer base;
    FILE *f;
    int failed;
} file_sink;

static void sink_append(ProtobufCBuffer *buffer, size_t len, const uint8_t *data) {
    file_sink *s = (file_sink *)buffer;
    if (!s->failed && len && fwrite(data, 1, len, s->f) != len) s->failed = 1;
}

static int write_model(FILE *f, const Onnx__ModelProto *m) {
    file_sink sink = {.base = {.append = sink_append}, .f = f, .failed = 0};
    protobuf_c_message_pack_to_buffer(&m->base, &sink.base);
    return sink.failed ? -1 : 0;
}

static int write_external(FILE *f, const px_export_ctx *c) {
    static const uint8_t zeros[EXTERNAL_ALIGN];
    uint64_t pos = 0;
    for (size_t i = 0; i < c->n_blobs; i++) { /* offsets were assigned in blob order */
        const px_export_blob *b = &c->blobs[i];
        if (!b->external) continue;
        while (pos < b->offset) {
            size_t pad = (size_t)(b->offset - pos);
            if (pad > sizeof zeros) pad = sizeof zeros;
            if (fwrite(zeros, 1, pad, f) != pad) return -1;
            pos += pad;
        }
        if (b->len && fwrite(b->data, 1, b->len, f) != b->len) return -1;
        pos += b->len;
    }
    return 0;
}

/* ---- public API ---- */

int px_onnx_save_buffer(const px_graph *g, void **buf, size_t *len, px_diag *d) {
    if (!g || !buf || !len) return px_error(d, "px_onnx_save_buffer: NULL argument");
    *buf = NULL;
    *len = 0;
    px_export_ctx c = {.d = d};
    int rc = -1;
    Onnx__ModelProto *m = px_export_build_model(&c, g);
    if (!m) goto cleanup;
    size_t size = onnx__model_proto__get_packed_size(m);
    if (size > px_export_proto_limit) {
        px_error(d,
                 "ONNX export of graph '%s': the model takes %zu bytes, over protobuf's limit "
                 "of %zu; save it to a file so large tensors go to external data",
                 g->name ? g->name : "", size, px_export_proto_limit);
        goto cleanup;
    }
    uint8_t *out = malloc(size ? size : 1);
    if (!out) {
        px_error(d, "ONNX export: out of memory for a %zu-byte model", size);
        goto cleanup;
    }
    size_t packed = onnx__model_proto__pack(m, out);
    if (packed != size) {
        free(out);
        px_error(d, "ONNX export: protobuf-c packed %zu bytes, expected %zu", packed, size);
        goto cleanup;
    }
    *buf = out;
    *len = size;
    rc = 0;
cleanup:
    px_export_ctx_free(&c);
    return rc;
}

int px_onnx_save_file(const px_graph *g, const char *path, const px_export_opts *opts, px_diag *d) {
    if (!g || !path || !path[0]) return px_error(d, "px_onnx_save_file: missing graph or path");
    const int to_stdout = strcmp(path, "-") == 0;
    px_export_ctx c = {.d = d};
    px_atomic_file data_file, model_file;
    int data_open = 0, model_open = 0;
    char *location = NULL, *data_path = NULL;
    int rc = -1;

    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (!to_stdout && !base[0]) {
        px_error(d, "ONNX export: '%s' names a folder, not a file", path);
        goto cleanup;
    }
    location = malloc(strlen(base) + 8);
    data_path = malloc(strlen(path) + 8);
    if (!location || !data_path) {
        px_error(d, "ONNX export: out of memory");
        goto cleanup;
    }
    sprintf(location, "%s.data", base);
    sprintf(data_path, "%s.data", path);

    Onnx__ModelProto *m = px_export_build_model(&c, g);
    if (!m) goto cleanup;
    external_plan plan = {.location = location};
    size_t threshold = opts ? opts->external_threshold : 0;
    if (plan_external(&c, m, threshold, &plan, path)) goto cleanup;

    if (to_stdout) {
        if (plan.n_external) {
            px_error(d,
                     "ONNX export to standard output: %d tensors need external data (threshold "
                     "or 2 GiB limit), which needs a file path",
                     plan.n_external);
            goto cleanup;
        }
        if (write_model(stdout, m) || fflush(stdout) != 0) {
            px_error(d, "writing the ONNX model to standard output failed: %s", strerror(errno));
            goto cleanup;
        }
        rc = 0;
        goto cleanup;
    }

    /* Every file through the output policy (common/file_atomic.h): a
     * temporary renamed over a regular file, a device written in place. */
    if (plan.n_external && px_is_char_device(path)) {
        px_error(d,
                 "ONNX export to %s: %d tensors need external data (threshold or 2 GiB limit), a "
                 "file next to the model, which a device cannot have",
                 path, plan.n_external);
        goto cleanup;
    }
    char err[4400];
    if (plan.n_external) {
        if (px_atomic_open(&data_file, data_path, err, sizeof err)) {
            px_error(d, "%s", err);
            goto cleanup;
        }
        data_open = 1;
        if (write_external(data_file.f, &c)) {
            px_error(d, "writing '%s' failed: %s", data_path, strerror(errno));
            goto cleanup;
        }
    }
    if (px_atomic_open(&model_file, path, err, sizeof err)) {
        px_error(d, "%s", err);
        goto cleanup;
    }
    model_open = 1;
    if (write_model(model_file.f, m)) {
        px_error(d, "writing '%s' failed: %s", path, strerror(errno));
        goto cleanup;
    }
    /* data first, so a renamed model never points at missing data */
    data_open = model_open = 0;
    if (plan.n_external && px_atomic_commit(&data_file, err, sizeof err)) {
        px_atomic_abort(&model_file);
        px_error(d, "%s", err);
        goto cleanup;
    }
    if (px_atomic_commit(&model_file, err, sizeof err)) {
        px_error(d, "%s", err);
        goto cleanup;
    }
    rc = 0;
cleanup:
    if (data_open) px_atomic_abort(&data_file);
    if (model_open) px_atomic_abort(&model_file);
    px_export_ctx_free(&c);
    free(location);
    free(data_path);
    return rc;
}
