#include "save_onnx.h"

#include "out_paths.h"

#include "ckpt_layout.h"
#include "file_atomic.h"
#include "pb_write.h"
#include "px_kernel.h"
#include "px_train.h"
#include "sparse/masked.h"
#include "sparse/metadata.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    MODEL_GRAPH = 7,
    GRAPH_INITIALIZER = 5,
    TENSOR_DIMS = 1,
    TENSOR_DATA_TYPE = 2,
    TENSOR_NAME = 8,
    TENSOR_RAW_DATA = 9,
    TENSOR_EXTERNAL_DATA = 13,
    TENSOR_DATA_LOCATION = 14,
    ENTRY_KEY = 1,
    ENTRY_VALUE = 2,
    MODEL_METADATA_PROPS = 14,
};
#define ONNX_FLOAT 1
#define ONNX_EXTERNAL 1
#define CHUNK_BYTES ((int64_t)4 << 20) /* rows stream to rank 0 this much at a time */
#define DATA_ALIGN 64                  /* external tensors start at multiples of this */

static void put_entry(px_pb_buf *b, const char *key, const char *value) {
    px_pb_buf e = {0};
    px_pb_put_string(&e, ENTRY_KEY, key);
    px_pb_put_string(&e, ENTRY_VALUE, value);
    px_pb_put_bytes(b, TENSOR_EXTERNAL_DATA, e.data, e.len);
    b->oom |= e.oom;
    px_pb_free(&e);
}

/* A TensorProto without its data: inline, up to and including the raw_data
 * key and length (the float32 bytes follow; total head->len + nbytes);
 * external, whole, pointing at [offset, offset + nbytes) of `location`. */
static void tensor_head(px_pb_buf *head, const px_var_desc *d, const char *location,
                        int64_t offset) {
    for (int64_t i = 0; i < d->rank; i++) px_pb_put_int64(head, TENSOR_DIMS, d->dims[i]);
    px_pb_put_int64(head, TENSOR_DATA_TYPE, ONNX_FLOAT);
    px_pb_put_string(head, TENSOR_NAME, d->name);
    if (location) {
        char num[32];
        put_entry(head, "location", location);
        snprintf(num, sizeof num, "%lld", (long long)offset);
        put_entry(head, "offset", num);
        snprintf(num, sizeof num, "%lld", (long long)px_ck_var_bytes(d));
        put_entry(head, "length", num);
        px_pb_put_int64(head, TENSOR_DATA_LOCATION, ONNX_EXTERNAL);
        return;
    }
    px_pb_put_tag(head, TENSOR_RAW_DATA, PX_PB_LEN);
    px_pb_put_varint(head, (uint64_t)px_ck_var_bytes(d));
}

/* Where rank 0 writes a variable's bytes (the model or the data file). */
typedef struct sink {
    FILE *f;
    int ok;
    int64_t written;
} sink;

static void write_rows(void *ctx, const float *rows, int64_t n) {
    sink *s = ctx;
    size_t bytes = sizeof(float) * (size_t)n;
    if (s->f && s->ok && fwrite(rows, 1, bytes, s->f) != bytes) s->ok = 0;
    s->written += (int64_t)bytes;
}

/* Collective: the trained values of variable v, in order, into s (rank 0). */
static void stream_var(const px_program_desc *p, int64_t v, sink *s) {
    const px_var_desc *d = &p->vars[v];
    if (px_comm_var_is_ps(v))
        px_comm_var_stream(v, CHUNK_BYTES, write_rows, s);
    else if (px_comm_rank() == 0)
        write_rows(s, d->data, px_ck_var_bytes(d) / 4);
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void put_zeros(sink *s, int64_t n) {
    static const char zeros[DATA_ALIGN];
    if (s->f && s->ok && n > 0 && fwrite(zeros, 1, (size_t)n, s->f) != (size_t)n) s->ok = 0;
    s->written += n;
}

/* The data file: every trained variable kept (keep NULL: all), aligned.
 * Returns the offsets. */
static int64_t *write_data_file(const char *data_path, const px_program_desc *p, const char *keep,
                                int root) {
    int64_t *offsets = calloc((size_t)p->n_vars + 1, sizeof *offsets);
    if (!offsets) px_rt_fail("out of memory writing %s", data_path);
    px_atomic_file af;
    char err[4400];
    sink s = {NULL, 1, 0};
    if (root) {
        if (px_atomic_open(&af, data_path, err, sizeof err)) px_rt_fail("%s", err);
        s.f = af.f;
    }
    for (int64_t v = 0; v < p->n_vars; v++) {
        if (keep && !keep[v]) continue;
        put_zeros(&s, (DATA_ALIGN - s.written % DATA_ALIGN) % DATA_ALIGN);
        offsets[v] = s.written;
        stream_var(p, v, &s);
    }
    if (!root) return offsets;
    if (!s.ok) {
        int saved = errno;
        char where[4200];
        snprintf(where, sizeof where, "%s", af.device ? af.path : af.tmp);
        px_atomic_abort(&af);
        px_rt_fail("cannot write %s: %s", where, strerror(saved));
    }
    if (px_atomic_commit(&af, err, sizeof err)) px_rt_fail("%s", err);
    return offsets;
}

int px_save_is_external(const px_program_desc *p, int64_t base_bytes, const char *keep,
                        int external) {
    uint64_t inline_len = 0; /* at most: data, name, dims and a few keys */
    for (int64_t v = 0; v < p->n_vars; v++)
        if (!keep || keep[v])
            inline_len += (uint64_t)px_ck_var_bytes(&p->vars[v]) + strlen(p->vars[v].name) +
                          11 * (uint64_t)p->vars[v].rank + 64;
    return external || (uint64_t)base_bytes + inline_len >= (uint64_t)PX_SAVE_INLINE_LIMIT;
}

/* The masks of the masked weights (sparse/metadata.h), one more
 * metadata_props entry: protobuf appends it to the base's. */
static int write_sparsity_metadata(FILE *f) {
    char *json = px_sparse_metadata_json();
    if (!json) return 1;
    px_pb_buf e = {0}, m = {0};
    px_pb_put_string(&e, ENTRY_KEY, PX_SPARSITY_METADATA_KEY);
    px_pb_put_string(&e, ENTRY_VALUE, json);
    px_pb_put_bytes(&m, MODEL_METADATA_PROPS, e.data, e.len);
    int ok = !e.oom && !m.oom && fwrite(m.data, 1, m.len, f) == m.len;
    px_pb_free(&e);
    px_pb_free(&m);
    free(json);
    return ok;
}

void px_save_onnx(const char *path, const px_program_desc *p, int external) {
    px_save_model(path, p, p->onnx_base, p->onnx_base_bytes, NULL, external);
}

void px_save_model(const char *path, const px_program_desc *p, const uint8_t *base,
                   int64_t base_bytes, const char *keep, int external) {
    int root = px_comm_rank() == 0;
    px_sparse_write_back();  /* the masked weights' live values into their storage */
    external = px_save_is_external(p, base_bytes, keep, external);
    /* OUT.onnx.data would be a file next to a device (/dev/null.data). */
    if (external && px_is_char_device(path))
        px_rt_fail("cannot write the model to %s: its weights need external data (at least 2 GiB), "
                   "which is a file next to the model; give a path in a writable folder",
                   path);
    char data_path[4200], location[4200];
    snprintf(data_path, sizeof data_path, "%s.data", path);
    snprintf(location, sizeof location, "%s.data", base_name(path));
    int64_t *offsets = external ? write_data_file(data_path, p, keep, root) : NULL;

    px_pb_buf *heads = calloc((size_t)p->n_vars + 1, sizeof *heads);
    if (!heads) px_rt_fail("out of memory writing %s", path);
    uint64_t graph_len = 0;
    for (int64_t v = 0; v < p->n_vars; v++) {
        if (keep && !keep[v]) continue;
        const px_var_desc *d = &p->vars[v];
        tensor_head(&heads[v], d, external ? location : NULL, external ? offsets[v] : 0);
        if (heads[v].oom) px_rt_fail("out of memory writing %s", path);
        uint64_t tensor_len = heads[v].len + (external ? 0 : (uint64_t)px_ck_var_bytes(d));
        graph_len += px_pb_varint_size((uint64_t)GRAPH_INITIALIZER << 3 | PX_PB_LEN) +
                     px_pb_varint_size(tensor_len) + tensor_len;
    }
    px_atomic_file af;
    char err[4400];
    sink s = {NULL, 1, 0};
    if (root) {
        if (px_atomic_open(&af, path, err, sizeof err)) px_rt_fail("%s", err);
        s.f = af.f;
        px_pb_buf pre = {0};
        px_pb_put_tag(&pre, MODEL_GRAPH, PX_PB_LEN);
        px_pb_put_varint(&pre, graph_len);
        s.ok = fwrite(base, 1, (size_t)base_bytes, af.f) == (size_t)base_bytes &&
               fwrite(pre.data, 1, pre.len, af.f) == pre.len;
        px_pb_free(&pre);
    }
    for (int64_t v = 0; v < p->n_vars; v++) {
        if (keep && !keep[v]) continue;
        const px_var_desc *d = &p->vars[v];
        if (root) {
            uint64_t tensor_len = heads[v].len + (external ? 0 : (uint64_t)px_ck_var_bytes(d));
            px_pb_buf key = {0};
            px_pb_put_tag(&key, GRAPH_INITIALIZER, PX_PB_LEN);
            px_pb_put_varint(&key, tensor_len);
            s.ok = s.ok && fwrite(key.data, 1, key.len, af.f) == key.len &&
                   fwrite(heads[v].data, 1, heads[v].len, af.f) == heads[v].len;
            px_pb_free(&key);
        }
        if (!external) stream_var(p, v, &s);
    }
    for (int64_t v = 0; v < p->n_vars; v++) px_pb_free(&heads[v]);
    free(heads);
    free(offsets);
    if (!root) return;
    s.ok = s.ok && write_sparsity_metadata(af.f);
    if (!s.ok) {
        int saved = errno;
        char where[4200];
        snprintf(where, sizeof where, "%s", af.device ? af.path : af.tmp);
        px_atomic_abort(&af);
        px_rt_fail("cannot write %s: %s", where, strerror(saved));
    }
    if (px_atomic_commit(&af, err, sizeof err)) px_rt_fail("%s", err);
}
