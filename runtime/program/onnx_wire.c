#include "onnx_wire.h"

#include "hash64.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_FIXED32 = 5 };

/* ModelProto, GraphProto, NodeProto, TensorProto and StringStringEntryProto
 * field numbers (onnx.proto). */
enum { MODEL_GRAPH = 7 };
enum { GRAPH_NODE = 1, GRAPH_INITIALIZER = 5 };
enum { NODE_INPUT = 1, NODE_OUTPUT = 2, NODE_NAME = 3, NODE_OP_TYPE = 4, NODE_DOMAIN = 7 };
enum {
    TENSOR_DIMS = 1,
    TENSOR_DATA_TYPE = 2,
    TENSOR_FLOAT_DATA = 4,
    TENSOR_INT32_DATA = 5,
    TENSOR_INT64_DATA = 7,
    TENSOR_NAME = 8,
    TENSOR_RAW_DATA = 9,
    TENSOR_DOUBLE_DATA = 10,
    TENSOR_UINT64_DATA = 11,
    TENSOR_EXTERNAL_DATA = 13,
    TENSOR_DATA_LOCATION = 14,
};
enum { ENTRY_KEY = 1, ENTRY_VALUE = 2 };

typedef struct cursor {
    const uint8_t *p, *end;
} cursor;

/* One field: its number, wire type and value (varint/fixed) or bytes. */
typedef struct field {
    int num, wire;
    uint64_t v;
    px_wire_str s;
} field;

static int fail(char *err, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && cap) vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

static int varint(cursor *c, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && c->p < c->end; shift += 7) {
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* Next field of the message under c: 1, 0 at its end, -1 when malformed. */
static int next_field(cursor *c, field *f) {
    if (c->p >= c->end) return 0;
    uint64_t key;
    if (varint(c, &key)) return -1;
    f->num = (int)(key >> 3);
    f->wire = (int)(key & 7);
    if (f->num <= 0) return -1;
    switch (f->wire) {
    case WIRE_VARINT: return varint(c, &f->v) ? -1 : 1;
    case WIRE_FIXED64:
    case WIRE_FIXED32: {
        size_t n = f->wire == WIRE_FIXED64 ? 8 : 4;
        if ((size_t)(c->end - c->p) < n) return -1;
        f->v = 0;
        memcpy(&f->v, c->p, n);
        c->p += n;
        return 1;
    }
    case WIRE_LEN: {
        uint64_t len;
        if (varint(c, &len) || len > (uint64_t)(c->end - c->p)) return -1;
        f->s.p = c->p;
        f->s.len = (size_t)len;
        c->p += len;
        return 1;
    }
    default: return -1; /* groups (3, 4) are not used by ONNX */
    }
}

int px_wire_next_field(px_wire_str msg, size_t *pos, px_wire_field *f) {
    if (*pos > msg.len) return -1;
    cursor c = {msg.p + *pos, msg.p + msg.len};
    const uint8_t *start = c.p;
    /* next_field sets only v or s, by wire type: zeroed so that -O3 (Release)
       does not warn that the other may be copied uninitialized */
    field x = {0};
    int rc = next_field(&c, &x);
    if (rc <= 0) return rc;
    f->num = x.num;
    f->wire = x.wire;
    f->v = x.v;
    f->s = x.s;
    f->whole.p = start;
    f->whole.len = (size_t)(c.p - start);
    *pos = (size_t)(c.p - msg.p);
    return 1;
}

static int str_eq(px_wire_str s, const char *z) {
    size_t n = strlen(z);
    return s.len == n && (n == 0 || memcmp(s.p, z, n) == 0);
}

static int64_t parse_i64(px_wire_str s, int *ok) {
    char buf[32];
    if (s.len == 0 || s.len >= sizeof buf) {
        *ok = 0;
        return 0;
    }
    memcpy(buf, s.p, s.len);
    buf[s.len] = 0;
    char *end;
    long long v = strtoll(buf, &end, 10);
    *ok = *end == 0 && v >= 0;
    return v;
}

/* One external_data entry (key/value) applied to t. */
static int external_entry(px_wire_str entry, px_wire_tensor *t, char *err, size_t cap) {
    cursor c = {entry.p, entry.p + entry.len};
    px_wire_str key = {0}, value = {0};
    field f;
    int r;
    while ((r = next_field(&c, &f)) == 1) {
        if (f.wire != WIRE_LEN) continue;
        if (f.num == ENTRY_KEY) key = f.s;
        if (f.num == ENTRY_VALUE) value = f.s;
    }
    if (r < 0) return fail(err, cap, "malformed external_data entry");
    int ok = 1;
    if (str_eq(key, "location"))
        t->location = value;
    else if (str_eq(key, "offset"))
        t->ext_offset = parse_i64(value, &ok);
    else if (str_eq(key, "length"))
        t->ext_length = parse_i64(value, &ok);
    if (!ok)
        return fail(err, cap, "external data %.*s '%.*s' is not a whole number", (int)key.len,
                    (const char *)key.p, (int)value.len > 64 ? 64 : (int)value.len,
                    (const char *)value.p);
    return 0;
}

static int parse_tensor(px_wire_str msg, px_wire_tensor *t, char *err, size_t cap) {
    memset(t, 0, sizeof *t);
    t->msg = msg;
    t->ext_length = -1;
    cursor c = {msg.p, msg.p + msg.len};
    field f;
    int r;
    while ((r = next_field(&c, &f)) == 1) {
        switch (f.num) {
        case TENSOR_DIMS:
            if (f.wire == WIRE_VARINT) {
                if (t->rank == PX_WIRE_MAX_RANK) return fail(err, cap, "tensor of rank > 16");
                t->dims[t->rank++] = (int64_t)f.v;
            } else if (f.wire == WIRE_LEN) {
                cursor d = {f.s.p, f.s.p + f.s.len};
                while (d.p < d.end) {
                    uint64_t v;
                    if (varint(&d, &v)) return fail(err, cap, "malformed tensor dims");
                    if (t->rank == PX_WIRE_MAX_RANK) return fail(err, cap, "tensor of rank > 16");
                    t->dims[t->rank++] = (int64_t)v;
                }
            }
            break;
        case TENSOR_DATA_TYPE:
            if (f.wire == WIRE_VARINT) t->dtype = (int32_t)f.v;
            break;
        case TENSOR_NAME:
            if (f.wire == WIRE_LEN) t->name = f.s;
            break;
        case TENSOR_RAW_DATA:
            if (f.wire == WIRE_LEN) {
                t->has_raw = 1;
                t->raw = f.s;
            }
            break;
        case TENSOR_FLOAT_DATA:
        case TENSOR_INT32_DATA:
        case TENSOR_INT64_DATA:
        case TENSOR_DOUBLE_DATA:
        case TENSOR_UINT64_DATA: t->typed_field = f.num; break;
        case TENSOR_EXTERNAL_DATA:
            if (f.wire == WIRE_LEN && external_entry(f.s, t, err, cap)) return -1;
            break;
        case TENSOR_DATA_LOCATION:
            if (f.wire == WIRE_VARINT) t->external = f.v == 1;
            break;
        default: break;
        }
    }
    if (r < 0) return fail(err, cap, "malformed TensorProto");
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] < 0) return fail(err, cap, "tensor with a negative dimension");
    return 0;
}

/* A node's identity: op type, domain ("ai.onnx" is ""), inputs and outputs
 * in order. Names and attributes are left out: what the graph computes with
 * which values is what the weights must match. */
static int parse_node(px_wire_str msg, px_wire_node *out) {
    cursor c = {msg.p, msg.p + msg.len};
    px_wire_str op = {0}, domain = {0};
    uint64_t ins = PX_HASH64_INIT, outs = PX_HASH64_INIT;
    int64_t n_in = 0, n_out = 0;
    field f;
    int r;
    while ((r = next_field(&c, &f)) == 1) {
        if (f.wire != WIRE_LEN) continue;
        if (f.num == NODE_INPUT) {
            ins = px_hash64(ins, f.s.p, f.s.len);
            n_in++;
        } else if (f.num == NODE_OUTPUT) {
            outs = px_hash64(outs, f.s.p, f.s.len);
            n_out++;
        } else if (f.num == NODE_OP_TYPE)
            op = f.s;
        else if (f.num == NODE_DOMAIN)
            domain = f.s;
        else if (f.num == NODE_NAME)
            out->name = f.s;
    }
    out->op_type = op;
    if (r < 0) return -1;
    if (str_eq(domain, "ai.onnx")) domain.len = 0;
    uint64_t h = px_hash64(PX_HASH64_INIT, op.p, op.len);
    h = px_hash64(h, domain.p, domain.len);
    h = px_hash64_u64(px_hash64_u64(h, (uint64_t)n_in), ins);
    out->hash = px_hash64_u64(px_hash64_u64(h, (uint64_t)n_out), outs);
    return 0;
}

/* Appends x to a growing array of elem-byte entries. */
static int push(void **arr, int64_t *n, int64_t *cap, const void *x, size_t elem) {
    if (*n == *cap) {
        int64_t nc = *cap ? *cap * 2 : 16;
        void *p = realloc(*arr, (size_t)nc * elem);
        if (!p) return -1;
        *arr = p;
        *cap = nc;
    }
    memcpy((char *)*arr + (size_t)*n * elem, x, elem);
    (*n)++;
    return 0;
}

typedef struct model_builder {
    px_wire_model *m;
    int64_t n_inits, cap_inits, cap_nodes;
} model_builder;

static int parse_graph(px_wire_str g, model_builder *b, char *err, size_t cap) {
    cursor c = {g.p, g.p + g.len};
    field f;
    int r;
    while ((r = next_field(&c, &f)) == 1) {
        if (f.wire != WIRE_LEN) continue;
        if (f.num == GRAPH_NODE) {
            px_wire_node nd = {0};
            if (parse_node(f.s, &nd))
                return fail(err, cap, "malformed NodeProto (node #%lld)", (long long)b->m->n_nodes);
            if (push((void **)&b->m->nodes, &b->m->n_nodes, &b->cap_nodes, &nd, sizeof nd))
                return fail(err, cap, "out of memory");
        } else if (f.num == GRAPH_INITIALIZER) {
            px_wire_tensor t;
            if (parse_tensor(f.s, &t, err, cap)) {
                size_t k = strlen(err);
                snprintf(err + k, cap - k, " (initializer #%lld)", (long long)b->n_inits);
                return -1;
            }
            if (push((void **)&b->m->inits, &b->n_inits, &b->cap_inits, &t, sizeof t))
                return fail(err, cap, "out of memory");
        }
    }
    return r < 0 ? fail(err, cap, "malformed GraphProto") : 0;
}

int px_wire_parse_model(const uint8_t *buf, size_t len, px_wire_model *m, char *err, size_t cap) {
    memset(m, 0, sizeof *m);
    model_builder b = {.m = m};
    cursor c = {buf, buf + len};
    field f;
    int r, graphs = 0;
    while ((r = next_field(&c, &f)) == 1) {
        if (f.num != MODEL_GRAPH || f.wire != WIRE_LEN) continue;
        graphs++;
        if (parse_graph(f.s, &b, err, cap)) {
            px_wire_model_free(m);
            return -1;
        }
    }
    m->n_inits = (int)b.n_inits;
    if (r < 0 || graphs == 0) {
        px_wire_model_free(m);
        return fail(err, cap,
                    r < 0 ? "not a valid ONNX model (malformed or truncated protobuf)"
                          : "not an ONNX model (no graph)");
    }
    return 0;
}

void px_wire_model_free(px_wire_model *m) {
    free(m->inits);
    free(m->nodes);
    memset(m, 0, sizeof *m);
}

int px_wire_name_is(const px_wire_tensor *t, const char *s) {
    return str_eq(t->name, s);
}

size_t px_wire_dtype_size(int32_t dtype) {
    switch (dtype) {
    case 1: /* float */
    case 6: /* int32 */
    case 12: /* uint32 */ return 4;
    case 7:  /* int64 */
    case 11: /* double */
    case 13: /* uint64 */
    case 14: /* complex64 */ return 8;
    case 2:  /* uint8 */
    case 3:  /* int8 */
    case 9:  /* bool */
    case 17: /* float8 e4m3fn */
    case 18: /* float8 e4m3fnuz */
    case 19: /* float8 e5m2 */
    case 20: /* float8 e5m2fnuz */ return 1;
    case 4:  /* uint16 */
    case 5:  /* int16 */
    case 10: /* float16 */
    case 16: /* bfloat16 */ return 2;
    case 15: return 16; /* complex128 */
    default: return 0;
    }
}

int64_t px_wire_numel(const px_wire_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0 || (t->dims[i] && n > INT64_MAX / t->dims[i])) return -1;
        n *= t->dims[i];
    }
    return n;
}

/* The typed field ONNX keeps a dtype's values in, with the wire type of one
 * unpacked value. */
static int typed_field_of(int32_t dtype, int *wire) {
    switch (dtype) {
    case 1: *wire = WIRE_FIXED32; return TENSOR_FLOAT_DATA;
    case 11: *wire = WIRE_FIXED64; return TENSOR_DOUBLE_DATA;
    case 7: *wire = WIRE_VARINT; return TENSOR_INT64_DATA;
    case 12:
    case 13: *wire = WIRE_VARINT; return TENSOR_UINT64_DATA;
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 9:
    case 10:
    case 16:
    case 17:
    case 18:
    case 19:
    case 20: *wire = WIRE_VARINT; return TENSOR_INT32_DATA;
    default: return 0;
    }
}

/* Copies elements [first, first+count) out of the typed field; returns the
 * number of elements the field holds, counted up to `limit`. */
static int64_t read_typed(const px_wire_tensor *t, int num, int wire, size_t esize, int64_t first,
                          int64_t count, int64_t limit, uint8_t *dst, int *bad) {
    cursor c = {t->msg.p, t->msg.p + t->msg.len};
    int64_t idx = 0, end = limit, stop = first + count;
    field f;
    int r = 0;
    while (idx < end && (r = next_field(&c, &f)) == 1) {
        if (f.num != num) continue;
        if (f.wire == wire) {
            if (idx >= first && idx < stop)
                memcpy(dst + (size_t)(idx - first) * esize, &f.v, esize);
            idx++;
            continue;
        }
        if (f.wire != WIRE_LEN) {
            *bad = 1;
            return idx;
        }
        cursor d = {f.s.p, f.s.p + f.s.len};
        size_t fixed = wire == WIRE_FIXED32 ? 4 : wire == WIRE_FIXED64 ? 8 : 0;
        if (fixed && f.s.len % fixed) {
            *bad = 1;
            return idx;
        }
        if (fixed && (idx + (int64_t)(f.s.len / fixed) <= first || idx >= stop)) { /* skip it */
            idx += (int64_t)(f.s.len / fixed);
            continue;
        }
        while (d.p < d.end && idx < end) {
            uint64_t v = 0;
            if (fixed) {
                memcpy(&v, d.p, fixed);
                d.p += fixed;
            } else if (varint(&d, &v)) {
                *bad = 1;
                return idx;
            }
            if (idx >= first && idx < stop) memcpy(dst + (size_t)(idx - first) * esize, &v, esize);
            idx++;
        }
    }
    if (idx < end && r < 0) *bad = 1;
    return idx;
}

int px_wire_read_inline(const px_wire_tensor *t, int64_t first, int64_t count, void *dst, char *err,
                        size_t cap) {
    size_t esize = px_wire_dtype_size(t->dtype);
    int64_t numel = px_wire_numel(t);
    if (!esize) return fail(err, cap, "unsupported data type %d", (int)t->dtype);
    if (numel < 0) return fail(err, cap, "dimensions overflow");
    if (first < 0 || count < 0 || first > numel || count > numel - first)
        return fail(err, cap, "elements [%lld, %lld) are outside the tensor's %lld",
                    (long long)first, (long long)(first + count), (long long)numel);
    if (t->external) return fail(err, cap, "the data is external");
    if (t->has_raw) {
        if ((uint64_t)t->raw.len != (uint64_t)numel * esize)
            return fail(err, cap, "raw_data holds %zu bytes, %lld elements of %zu bytes need %llu",
                        t->raw.len, (long long)numel, esize,
                        (unsigned long long)((uint64_t)numel * esize));
        if (count) memcpy(dst, t->raw.p + (size_t)first * esize, (size_t)count * esize);
        return 0;
    }
    int wire;
    int num = typed_field_of(t->dtype, &wire);
    if (!num) return fail(err, cap, "no typed field holds data type %d", (int)t->dtype);
    if (t->typed_field && t->typed_field != num)
        return fail(err, cap, "data type %d kept in typed field %d (expected field %d)",
                    (int)t->dtype, t->typed_field, num);
    /* Reading up to the end also counts what follows: a field holding more
     * elements than the dims say is an error, not silently cut. */
    int64_t limit = first + count == numel ? INT64_MAX : first + count;
    int bad = 0;
    int64_t got = read_typed(t, num, wire, esize, first, count, limit, dst, &bad);
    if (bad) return fail(err, cap, "malformed typed data (field %d)", num);
    if (got < first + count || (limit == INT64_MAX && got != numel))
        return fail(err, cap, "holds %lld elements, %lld expected", (long long)got,
                    (long long)numel);
    return 0;
}
