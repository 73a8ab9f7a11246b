#include "npy_header.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *descr; /* without the byte-order character */
    int dtype;
    const char *name;
    size_t size;
} dtypes[] = {
    {"f4", 1, "float32", 4},  {"u1", 2, "uint8", 1},   {"i1", 3, "int8", 1},
    {"u2", 4, "uint16", 2},   {"i2", 5, "int16", 2},   {"i4", 6, "int32", 4},
    {"i8", 7, "int64", 8},    {"b1", 9, "bool", 1},    {"f2", 10, "float16", 2},
    {"f8", 11, "float64", 8}, {"u4", 12, "uint32", 4}, {"u8", 13, "uint64", 8},
};

/* NumPy has no bfloat16: such tensors travel as their uint16 bit patterns,
 * as ONNX's numpy_helper stores them. */
#define PX_BF16 16

size_t px_rt_dtype_size(int dtype) {
    if (dtype == PX_BF16) return 2;
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (dtypes[i].dtype == dtype) return dtypes[i].size;
    return 0;
}

const char *px_rt_dtype_name(int dtype) {
    if (dtype == PX_BF16) return "bfloat16";
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (dtypes[i].dtype == dtype) return dtypes[i].name;
    return "unsupported";
}

static int fail(char *err, size_t cap, const char *fmt, const char *path, const char *detail) {
    snprintf(err, cap, fmt, path, detail);
    return -1;
}

/* Finds 'key': in the header dict and returns a pointer just after the colon. */
static const char *dict_value(const char *hdr, const char *key) {
    const char *p = strstr(hdr, key);
    if (!p) return NULL;
    p = strchr(p + strlen(key), ':');
    if (!p) return NULL;
    p++;
    while (*p == ' ') p++;
    return p;
}

static int parse_header(const char *hdr, px_array *a, const char *path, char *err, size_t cap) {
    const char *v = dict_value(hdr, "'descr'");
    if (!v || *v != '\'') return fail(err, cap, "%s: .npy header has no descr%s", path, "");
    char descr[16] = {0};
    const char *end = strchr(v + 1, '\'');
    if (!end || end - v - 1 >= (long)sizeof descr)
        return fail(err, cap, "%s: bad descr in .npy header%s", path, "");
    memcpy(descr, v + 1, (size_t)(end - v - 1));
    char order = descr[0];
    const char *code = descr + 1;
    if (order == '>' && strcmp(code, "u1") && strcmp(code, "i1") && strcmp(code, "b1"))
        return fail(err, cap,
                    "%s: big-endian data (%s) is not supported: save it little-endian, "
                    "np.save(path, x.astype(x.dtype.newbyteorder('<')))",
                    path, descr);
    a->dtype = 0;
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (strcmp(dtypes[i].descr, code) == 0) a->dtype = dtypes[i].dtype;
    if (!a->dtype)
        return fail(err, cap,
                    "%s: unsupported .npy dtype '%s': save it as the type the model expects, "
                    "e.g. np.save(path, x.astype(np.float32))",
                    path, descr);
    v = dict_value(hdr, "'fortran_order'");
    if (!v) return fail(err, cap, "%s: .npy header has no fortran_order%s", path, "");
    if (strncmp(v, "True", 4) == 0)
        return fail(err, cap,
                    "%s: the array is stored in Fortran (column-major) order%s; save it with "
                    "np.save(path, np.ascontiguousarray(x)) to get C order",
                    path, "");
    if (strncmp(v, "False", 5) != 0)
        return fail(err, cap, "%s: .npy fortran_order is neither True nor False%s", path, "");
    v = dict_value(hdr, "'shape'");
    if (!v || *v != '(') return fail(err, cap, "%s: .npy header has no shape%s", path, "");
    v++;
    a->rank = 0;
    a->numel = 1;
    while (*v && *v != ')') {
        while (*v == ' ' || *v == ',') v++;
        if (*v == ')') break;
        char *next;
        errno = 0;
        long long dim = strtoll(v, &next, 10);
        if (next == v || errno || dim < 0)
            return fail(err, cap, "%s: bad dimension in .npy shape%s", path, "");
        if (a->rank == PX_NPY_MAX_RANK) return fail(err, cap, "%s: rank above 16%s", path, "");
        if (dim && a->numel > INT64_MAX / dim)
            return fail(err, cap, "%s: shape too large%s", path, "");
        a->dims[a->rank++] = dim;
        a->numel *= dim;
        v = next;
    }
    return 0;
}

int px_rt_dtype_from_name(const char *name) {
    if (!strcmp(name, "bfloat16")) return PX_BF16;
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (!strcmp(dtypes[i].name, name)) return dtypes[i].dtype;
    return 0;
}

int px_npy_header_parse(const unsigned char *b, size_t len, px_array *a, size_t *data_offset,
                        const char *path, char *err, size_t cap) {
    memset(a, 0, sizeof *a);
    size_t hlen, hoff;
    if (len < 10) return fail(err, cap, "%s: not a .npy file (too short)%s", path, "");
    if (memcmp(b, "\x93NUMPY", 6))
        return fail(err, cap, "%s: not a .npy file (bad magic)%s", path, "");
    if (b[6] == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        hoff = 10;
    } else if ((b[6] == 2 || b[6] == 3) && len >= 12) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        hoff = 12;
    } else {
        return fail(err, cap, "%s: unsupported .npy version%s", path, "");
    }
    if (hlen > len - hoff) return fail(err, cap, "%s: truncated .npy header%s", path, "");
    char *hdr = malloc(hlen + 1);
    if (!hdr) return fail(err, cap, "%s: out of memory reading the .npy header%s", path, "");
    memcpy(hdr, b + hoff, hlen);
    hdr[hlen] = '\0';
    int rc = parse_header(hdr, a, path, err, cap);
    free(hdr);
    if (rc) return -1;
    /* Checked: a shape like (2**57, 16) of int64 wraps to 0 bytes otherwise,
     * and every later read of the array would run past the data. */
    if (__builtin_mul_overflow((size_t)a->numel, px_rt_dtype_size(a->dtype), &a->nbytes))
        return fail(err, cap, "%s: .npy shape describes more bytes than memory can address%s", path,
                    "");
    *data_offset = hoff + hlen;
    return 0;
}

static const char *descr_of(int dtype) {
    if (dtype == PX_BF16) return "u2";
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (dtypes[i].dtype == dtype) return dtypes[i].descr;
    return NULL;
}

size_t px_npy_header_format(unsigned char *out, size_t cap, int dtype, int rank,
                            const int64_t *dims, size_t min_len) {
    const char *code = descr_of(dtype);
    if (!code || rank < 0 || rank > PX_NPY_MAX_RANK) return 0;
    char shape[512] = "", hdr[1024];
    size_t used = 0;
    for (int i = 0; i < rank; i++)
        used += (size_t)snprintf(shape + used, sizeof shape - used, "%lld,%s", (long long)dims[i],
                                 i + 1 < rank ? " " : "");
    if (rank > 1) shape[used - 1] = '\0'; /* numpy writes (2, 3) but (4,) */
    char order =
        (strcmp(code, "u1") == 0 || strcmp(code, "i1") == 0 || strcmp(code, "b1") == 0) ? '|' : '<';
    int n = snprintf(hdr, sizeof hdr, "{'descr': '%c%s', 'fortran_order': False, 'shape': (%s), }",
                     order, code, shape);
    size_t total = 10 + (size_t)n + 1;
    if (total < min_len) total = min_len;
    total += (64 - total % 64) % 64;
    if (total > cap || total - 10 > 65535) return 0;
    size_t hlen = total - 10;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (unsigned char)(hlen & 0xff);
    out[9] = (unsigned char)(hlen >> 8);
    memcpy(out + 10, hdr, (size_t)n);
    memset(out + 10 + n, ' ', hlen - (size_t)n - 1);
    out[total - 1] = '\n';
    return total;
}
