/* A small reader for serialized ONNX TensorProto files, so generated
 * programs accept the backend test data without linking protobuf. Only the
 * fields a tensor's contents need are decoded; the rest are skipped. */
#include "npy.h"

#include "file_in.h"
#include "px_kernel.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct reader {
    const unsigned char *p, *end;
    int bad;
} reader;

static uint64_t varint(reader *r) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) break;
        unsigned char b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    r->bad = 1;
    return 0;
}

typedef struct growbuf {
    unsigned char *data;
    size_t len, cap;
} growbuf;

static void put(growbuf *g, const void *src, size_t n) {
    if (g->len + n > g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 256;
        while (cap < g->len + n) cap *= 2;
        unsigned char *grown = realloc(g->data, cap);
        if (!grown) px_rt_fail("out of memory reading a .pb data file (%zu bytes)", cap);
        g->data = grown;
        g->cap = cap;
    }
    memcpy(g->data + g->len, src, n);
    g->len += n;
}

/* Appends one typed-field element converted to dtype's storage. */
static void put_elem(growbuf *g, int dtype, uint64_t bits, int field) {
    union {
        float f;
        uint32_t u;
    } fc;
    switch (dtype) {
    case 1: /* float32: float_data (fixed32 bits) */
        fc.u = (uint32_t)bits;
        put(g, &fc.f, 4);
        break;
    case 11: { /* double_data */ put(g, &bits, 8); break;
    }
    case 7:
    case 13: put(g, &bits, 8); break; /* int64_data / uint64_data */
    case 12: {
        uint32_t v = (uint32_t)bits;
        put(g, &v, 4);
        break;
    } /* uint32 in uint64_data */
    case 6: {
        int32_t v = (int32_t)bits;
        put(g, &v, 4);
        break;
    }
    case 3:
    case 2:
    case 9: {
        uint8_t v = (uint8_t)bits;
        put(g, &v, 1);
        break;
    }
    case 4:
    case 5:
    case 10:
    case 16: {
        uint16_t v = (uint16_t)bits;
        put(g, &v, 2);
        break;
    }
    default: break;
    }
    (void)field;
}

int px_pb_load(const char *path, px_array *a, char *err, size_t cap) {
    memset(a, 0, sizeof *a);
    struct stat st;
    int fd = px_open_regular(path, "data file", &st, err, cap);
    if (fd < 0) return -1;
    growbuf file = {0}, data = {0};
    unsigned char chunk[65536];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0) put(&file, chunk, (size_t)n);
    close(fd);
    if (n < 0) {
        snprintf(err, cap, "cannot read %s: %s", path, strerror(errno));
        free(file.data);
        return -1;
    }
    if (file.len == 0) {
        snprintf(err, cap, "%s is empty: not a serialized ONNX TensorProto", path);
        return -1;
    }
    reader r = {file.data, file.data + file.len, 0};
    int have_raw = 0, rc = -1;
    const unsigned char *raw = NULL;
    size_t raw_len = 0;
    a->numel = 1;
    while (r.p < r.end && !r.bad) {
        uint64_t key = varint(&r);
        int field = (int)(key >> 3), wire = (int)(key & 7);
        if (wire == 0) { /* varint */
            uint64_t v = varint(&r);
            if (field == 1) {
                if (a->rank == PX_NPY_MAX_RANK) {
                    r.bad = 1;
                    break;
                }
                a->dims[a->rank++] = (int64_t)v;
            } else if (field == 2)
                a->dtype = (int)v;
            else if (field == 14 && v == 1) {
                snprintf(err, cap, "%s: tensors with external data are not supported here", path);
                goto cleanup;
            } else if (field == 5 || field == 7 || field == 11)
                put_elem(&data, a->dtype, v, field);
        } else if (wire == 1) { /* fixed64 */
            if (r.end - r.p < 8) {
                r.bad = 1;
                break;
            }
            uint64_t v;
            memcpy(&v, r.p, 8);
            r.p += 8;
            if (field == 10) put_elem(&data, a->dtype, v, field);
        } else if (wire == 5) { /* fixed32 */
            if (r.end - r.p < 4) {
                r.bad = 1;
                break;
            }
            uint32_t v;
            memcpy(&v, r.p, 4);
            r.p += 4;
            if (field == 4) put_elem(&data, a->dtype, v, field);
        } else if (wire == 2) { /* length-delimited */
            uint64_t len = varint(&r);
            if (len > (uint64_t)(r.end - r.p)) {
                r.bad = 1;
                break;
            }
            reader sub = {r.p, r.p + len, 0};
            r.p += len;
            if (field == 9) {
                have_raw = 1;
                raw = sub.p;
                raw_len = (size_t)len;
            } else if (field == 1) {
                while (sub.p < sub.end && !sub.bad) {
                    if (a->rank == PX_NPY_MAX_RANK) {
                        sub.bad = 1;
                        break;
                    }
                    a->dims[a->rank++] = (int64_t)varint(&sub);
                }
            } else if (field == 5 || field == 7 || field == 11) {
                while (sub.p < sub.end && !sub.bad) put_elem(&data, a->dtype, varint(&sub), field);
            } else if (field == 4) {
                for (; sub.end - sub.p >= 4; sub.p += 4) {
                    uint32_t v;
                    memcpy(&v, sub.p, 4);
                    put_elem(&data, a->dtype, v, field);
                }
            } else if (field == 10) {
                for (; sub.end - sub.p >= 8; sub.p += 8) {
                    uint64_t v;
                    memcpy(&v, sub.p, 8);
                    put_elem(&data, a->dtype, v, field);
                }
            } else if (field == 6) {
                snprintf(err, cap, "%s: string tensors are not supported", path);
                goto cleanup;
            }
            if (sub.bad) r.bad = 1;
        } else
            r.bad = 1;
    }
    if (r.bad) {
        snprintf(err, cap, "%s: not a valid serialized ONNX TensorProto", path);
        goto cleanup;
    }
    size_t es = px_rt_dtype_size(a->dtype);
    if (!es) {
        snprintf(err, cap, "%s: unsupported tensor data type %d", path, a->dtype);
        goto cleanup;
    }
    for (int i = 0; i < a->rank; i++) {
        if (a->dims[i] < 0 || (a->dims[i] && a->numel > INT64_MAX / a->dims[i])) {
            snprintf(err, cap, "%s: invalid dimensions", path);
            goto cleanup;
        }
        a->numel *= a->dims[i];
    }
    if (__builtin_mul_overflow((size_t)a->numel, es, &a->nbytes)) {
        snprintf(err, cap, "%s: dimensions describe more bytes than memory can address", path);
        goto cleanup;
    }
    size_t got = have_raw ? raw_len : data.len;
    if (got != a->nbytes) {
        snprintf(err, cap, "%s: %zu bytes of data for %lld elements of %s", path, got,
                 (long long)a->numel, px_rt_dtype_name(a->dtype));
        goto cleanup;
    }
    a->data = malloc(a->nbytes ? a->nbytes : 1);
    if (a->nbytes) memcpy(a->data, have_raw ? raw : data.data, a->nbytes);
    rc = 0;
cleanup:
    free(file.data);
    free(data.data);
    return rc;
}
