#include "save_onnx.h"

#include "out_paths.h"

#include "ckpt_layout.h"
#include "file_atomic.h"
#include "pb_write.h"
#include "px_kernel.h"
#include "px_train.h"
#include "sparse/masked.h"
#include "sparse/metadata.h"
#include "tp_slabs.h"

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

/* What --save writes, entry k of n_vars + n_tied: the trained variables,
 * then the tied copies made from them (px_tied_desc). */
typedef struct entry {
    const char *name;
    int64_t rank;
    const int64_t *dims;
    int64_t var; /* the variable whose values it holds */
    const px_tied_desc *tie;
} entry;

static entry entry_of(const px_program_desc *p, int64_t k) {
    if (k < p->n_vars) {
        px_var_desc d = px_tp_full_var(p, k); /* whole under --tp */
        return (entry){d.name, d.rank, d.dims, k, NULL};
    }
    const px_tied_desc *t = &p->tied[k - p->n_vars];
    return (entry){t->name, t->rank, t->dims, t->var, t};
}

static int64_t entry_bytes(const px_program_desc *p, const entry *e) {
    px_var_desc d = px_tp_full_var(p, e->var);
    return px_ck_var_bytes(&d);
}

/* A TensorProto without its data: inline, up to and including the raw_data
 * key and length (the float32 bytes follow; total head->len + nbytes);
 * external, whole, pointing at [offset, offset + nbytes) of `location`. */
static void tensor_head(px_pb_buf *head, const entry *d, int64_t nbytes, const char *location,
                        int64_t offset) {
    for (int64_t i = 0; i < d->rank; i++) px_pb_put_int64(head, TENSOR_DIMS, d->dims[i]);
    px_pb_put_int64(head, TENSOR_DATA_TYPE, ONNX_FLOAT);
    px_pb_put_string(head, TENSOR_NAME, d->name);
    if (location) {
        char num[32];
        put_entry(head, "location", location);
        snprintf(num, sizeof num, "%lld", (long long)offset);
        put_entry(head, "offset", num);
        snprintf(num, sizeof num, "%lld", (long long)nbytes);
        put_entry(head, "length", num);
        px_pb_put_int64(head, TENSOR_DATA_LOCATION, ONNX_EXTERNAL);
        return;
    }
    px_pb_put_tag(head, TENSOR_RAW_DATA, PX_PB_LEN);
    px_pb_put_varint(head, (uint64_t)nbytes);
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

/* Collective: the values of replicated variable v, whole, on rank 0: its
 * storage, or for one stored split (--tp) its slabs gathered into *owned,
 * or for one another stage holds (--pp) what that stage's first rank sends
 * into *owned (freed by the caller). Ranks other than 0 may get NULL. */
static const float *whole_values(const px_program_desc *p, int64_t v, float **owned) {
    *owned = NULL;
    int held = px_var_held(p, v), split = held && px_tp_var_split(p, v);
    int receive = !held && px_comm_rank() == 0;
    if (held && !split && p->pp <= 1) return p->vars[v].data;
    int64_t n = px_tp_full_var(p, v).nbytes / 4;
    if ((split || receive) && !(*owned = malloc(sizeof(float) * (size_t)(n + 1))))
        px_rt_fail("out of memory gathering '%s'", p->vars[v].name);
    if (split) px_tp_gather(p, v, p->vars[v].data, *owned);
    const float *values = *owned ? *owned : p->vars[v].data;
    if (p->pp > 1 && p->var_pp_stage)
        px_comm_pp_to_first((float *)values, n, (int)p->var_pp_stage[v]);
    return values;
}

/* Collective: the trained values of variable v, in order, into s (rank 0). */
static void stream_var(const px_program_desc *p, int64_t v, sink *s) {
    if (px_comm_var_is_ps(v)) {
        px_comm_var_stream(v, CHUNK_BYTES, write_rows, s);
        return;
    }
    float *owned;
    const float *values = whole_values(p, v, &owned);
    if (px_comm_rank() == 0) write_rows(s, values, px_tp_full_var(p, v).nbytes / 4);
    free(owned);
}

/* A variable's rows gathered in memory (rank 0). */
typedef struct collected {
    float *data;
    int64_t n;
} collected;

static void collect_rows(void *ctx, const float *rows, int64_t n) {
    collected *c = ctx;
    if (c->data) memcpy(c->data + c->n, rows, sizeof(float) * (size_t)n);
    c->n += n;
}

/* dst = transpose(src of dims, perm), element by element in dst's order. */
static void transpose_into(float *dst, const float *src, int64_t rank, const int64_t *dims,
                           const int64_t *perm) {
    int64_t stride[8], tdims[8], tstride[8], idx[8] = {0}, n = 1, off = 0;
    for (int64_t k = rank - 1; k >= 0; k--) {
        stride[k] = n;
        n *= dims[k];
    }
    for (int64_t k = 0; k < rank; k++) {
        tdims[k] = dims[perm[k]];
        tstride[k] = stride[perm[k]];
    }
    for (int64_t i = 0; i < n; i++) {
        dst[i] = src[off];
        for (int64_t k = rank - 1; k >= 0; k--) {
            idx[k]++;
            off += tstride[k];
            if (idx[k] < tdims[k]) break;
            off -= tstride[k] * tdims[k];
            idx[k] = 0;
        }
    }
}

/* Collective: the values of entry k, in order, into s (rank 0). A tied copy
 * is its variable's trained values, transposed as its descriptor says. */
static void stream_entry(const px_program_desc *p, int64_t k, sink *s) {
    entry e = entry_of(p, k);
    if (!e.tie) {
        stream_var(p, k, s);
        return;
    }
    px_var_desc whole = px_tp_full_var(p, e.var);
    const px_var_desc *d = &whole;
    int64_t n = px_ck_var_bytes(d) / 4;
    int root = px_comm_rank() == 0;
    collected c = {root ? malloc(sizeof(float) * (size_t)(n ? n : 1)) : NULL, 0};
    float *t = root && e.tie->perm ? malloc(sizeof(float) * (size_t)(n ? n : 1)) : NULL;
    if (root && (!c.data || (e.tie->perm && !t))) px_rt_fail("out of memory writing %s", e.name);
    float *owned = NULL;
    if (px_comm_var_is_ps(e.var))
        px_comm_var_stream(e.var, CHUNK_BYTES, collect_rows, &c);
    else {
        const float *values = whole_values(p, e.var, &owned);
        if (root) collect_rows(&c, values, n);
    }
    if (root) {
        if (t) transpose_into(t, c.data, d->rank, d->dims, e.tie->perm);
        write_rows(s, t ? t : c.data, n);
    }
    free(t);
    free(c.data);
    free(owned);
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

/* The data file: every trained variable and tied copy kept (keep NULL:
 * all; else indexed like the entries), aligned. Returns the offsets. */
static int64_t *write_data_file(const char *data_path, const px_program_desc *p, const char *keep,
                                int root) {
    int64_t n_entries = p->n_vars + p->n_tied;
    int64_t *offsets = calloc((size_t)n_entries + 1, sizeof *offsets);
    if (!offsets) px_rt_fail("out of memory writing %s", data_path);
    px_atomic_file af;
    char err[4400];
    sink s = {NULL, 1, 0};
    if (root) {
        if (px_atomic_open(&af, data_path, err, sizeof err)) px_rt_fail("%s", err);
        s.f = af.f;
    }
    for (int64_t k = 0; k < n_entries; k++) {
        if (keep && !keep[k]) continue;
        put_zeros(&s, (DATA_ALIGN - s.written % DATA_ALIGN) % DATA_ALIGN);
        offsets[k] = s.written;
        stream_entry(p, k, &s);
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
    for (int64_t k = 0; k < p->n_vars + p->n_tied; k++) {
        if (keep && !keep[k]) continue;
        entry e = entry_of(p, k);
        inline_len += (uint64_t)entry_bytes(p, &e) + strlen(e.name) + 11 * (uint64_t)e.rank + 64;
    }
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
    px_sparse_write_back(); /* the masked weights' live values into their storage */
    int64_t n_entries = p->n_vars + p->n_tied;
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

    px_pb_buf *heads = calloc((size_t)n_entries + 1, sizeof *heads);
    if (!heads) px_rt_fail("out of memory writing %s", path);
    uint64_t graph_len = 0;
    for (int64_t k = 0; k < n_entries; k++) {
        if (keep && !keep[k]) continue;
        entry e = entry_of(p, k);
        int64_t nbytes = entry_bytes(p, &e);
        tensor_head(&heads[k], &e, nbytes, external ? location : NULL, external ? offsets[k] : 0);
        if (heads[k].oom) px_rt_fail("out of memory writing %s", path);
        uint64_t tensor_len = heads[k].len + (external ? 0 : (uint64_t)nbytes);
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
    for (int64_t k = 0; k < n_entries; k++) {
        if (keep && !keep[k]) continue;
        entry e = entry_of(p, k);
        if (root) {
            uint64_t tensor_len = heads[k].len + (external ? 0 : (uint64_t)entry_bytes(p, &e));
            px_pb_buf key = {0};
            px_pb_put_tag(&key, GRAPH_INITIALIZER, PX_PB_LEN);
            px_pb_put_varint(&key, tensor_len);
            s.ok = s.ok && fwrite(key.data, 1, key.len, af.f) == key.len &&
                   fwrite(heads[k].data, 1, heads[k].len, af.f) == heads[k].len;
            px_pb_free(&key);
        }
        if (!external) stream_entry(p, k, &s);
    }
    for (int64_t k = 0; k < n_entries; k++) px_pb_free(&heads[k]);
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
