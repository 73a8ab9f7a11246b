#include "tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- shapes ---- */

px_shape px_shape_unknown(void) {
    px_shape s;
    memset(&s, 0, sizeof s);
    s.rank = -1;
    return s;
}

px_shape px_shape_scalar(void) {
    px_shape s;
    memset(&s, 0, sizeof s);
    return s;
}

px_shape px_shape_make(int rank, const int64_t *dims) {
    px_shape s = px_shape_scalar();
    if (rank < 0 || rank > PX_MAX_RANK) return px_shape_unknown();
    s.rank = rank;
    for (int i = 0; i < rank; i++) s.dims[i] = dims ? dims[i] : -1;
    return s;
}

int px_shape_is_static(const px_shape *s) {
    if (s->rank < 0) return 0;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] < 0) return 0;
    return 1;
}

int px_shape_equal(const px_shape *a, const px_shape *b) {
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++) {
        if (a->dims[i] != b->dims[i]) return 0;
        if (a->dims[i] < 0 && a->sym_id[i] != b->sym_id[i]) return 0; /* one id per name */
    }
    return 1;
}

int px_mul_checked(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0) return -1;
    if (a != 0 && b > INT64_MAX / a) return -1;
    *out = a * b;
    return 0;
}

int64_t px_shape_numel(const px_shape *s) {
    if (!px_shape_is_static(s)) return -1;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        if (px_mul_checked(n, s->dims[i], &n)) return -1;
    return n;
}

const char *px_shape_str(const px_shape *s, char *buf, size_t cap) {
    if (cap == 0) return buf;
    if (s->rank < 0) {
        snprintf(buf, cap, "[?]");
        return buf;
    }
    size_t used = 0;
    buf[0] = '\0';
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (used < cap) {                                                                          \
            int k = snprintf(buf + used, cap - used, __VA_ARGS__);                                 \
            if (k > 0) used += (size_t)k;                                                          \
        }                                                                                          \
    } while (0)
    PUT("[");
    for (int i = 0; i < s->rank; i++) {
        if (i) PUT(",");
        if (s->dims[i] >= 0)
            PUT("%lld", (long long)s->dims[i]);
        else if (px_shape_sym(s, i))
            PUT("%s", px_shape_sym(s, i));
        else
            PUT("?");
    }
    PUT("]");
#undef PUT
    return buf;
}

/* ---- interning: an open-addressing set that lives for the process ---- */

/* Each interned string has an id, 1, 2, ... in the order of first use
 * (intern_names[id - 1]); the table's slots hold ids. A shape names its
 * symbolic dims by these ids (px_shape_sym). */
static char **intern_names;
static uint32_t *intern_slots;
static size_t intern_cap, intern_count, intern_names_cap;

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int intern_grow(void) {
    size_t cap = intern_cap ? intern_cap * 2 : 256;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t id = 1; id <= intern_count; id++) {
        size_t j = hash_str(intern_names[id - 1]) & (cap - 1);
        while (slots[j]) j = (j + 1) & (cap - 1);
        slots[j] = (uint32_t)id;
    }
    free(intern_slots);
    intern_slots = slots;
    intern_cap = cap;
    return 0;
}

/* The id of s, interned on first use; 0 when out of memory. */
static uint32_t intern_id(const char *s) {
    if ((intern_count + 1) * 2 > intern_cap && intern_grow()) return 0;
    size_t j = hash_str(s) & (intern_cap - 1);
    while (intern_slots[j]) {
        if (strcmp(intern_names[intern_slots[j] - 1], s) == 0) return intern_slots[j];
        j = (j + 1) & (intern_cap - 1);
    }
    if (intern_count == intern_names_cap) {
        if (intern_names_cap >= UINT32_MAX / 2) return 0;
        size_t cap = intern_names_cap ? intern_names_cap * 2 : 256;
        char **names = realloc(intern_names, cap * sizeof *names);
        if (!names) return 0;
        intern_names = names;
        intern_names_cap = cap;
    }
    char *copy = strdup(s);
    if (!copy) return 0;
    intern_names[intern_count++] = copy;
    intern_slots[j] = (uint32_t)intern_count;
    return (uint32_t)intern_count;
}

const char *px_intern(const char *s) {
    uint32_t id = s ? intern_id(s) : 0;
    return id ? intern_names[id - 1] : NULL;
}

const char *px_shape_sym(const px_shape *s, int i) {
    uint32_t id = s->sym_id[i];
    return id ? intern_names[id - 1] : NULL;
}

void px_shape_set_sym(px_shape *s, int i, const char *name) {
    s->sym_id[i] = name ? intern_id(name) : 0;
}

/* ---- tensors ---- */

static size_t elem_size(px_dtype t) {
    return t == PX_STRING ? sizeof(px_bytes) : px_dtype_size(t);
}

px_tensor *px_tensor_new(px_dtype dtype, const px_shape *shape, px_diag *d) {
    char buf[256];
    if (!px_dtype_valid((int)dtype)) {
        px_error(d, "tensor of invalid dtype %d", (int)dtype);
        return NULL;
    }
    int64_t numel = px_shape_numel(shape);
    int64_t nbytes;
    if (numel < 0 || px_mul_checked(numel, (int64_t)elem_size(dtype), &nbytes) ||
        (uint64_t)nbytes > (uint64_t)SIZE_MAX / 2) {
        px_error(d, "tensor shape %s of %s is not static or too large",
                 px_shape_str(shape, buf, sizeof buf), px_dtype_name(dtype));
        return NULL;
    }
    px_tensor *t = calloc(1, sizeof *t);
    if (!t) goto oom;
    t->dtype = dtype;
    t->shape = *shape;
    t->nbytes = (size_t)nbytes;
    t->storage = PX_STORAGE_MALLOC;
    t->data = calloc(1, nbytes ? (size_t)nbytes : 1);
    if (!t->data) goto oom;
    return t;
oom:
    free(t);
    px_error(d, "out of memory allocating %lld bytes for a %s tensor %s", (long long)nbytes,
             px_dtype_name(dtype), px_shape_str(shape, buf, sizeof buf));
    return NULL;
}

px_tensor *px_tensor_clone(const px_tensor *src, px_diag *d) {
    px_tensor *t = px_tensor_new(src->dtype, &src->shape, d);
    if (!t) return NULL;
    if (src->dtype != PX_STRING) {
        if (src->nbytes) memcpy(t->data, src->data, src->nbytes);
        return t;
    }
    int64_t n = px_tensor_numel(src);
    const px_bytes *in = src->data;
    px_bytes *out = t->data;
    for (int64_t i = 0; i < n; i++) {
        out[i].data = malloc(in[i].len + 1);
        if (!out[i].data) {
            px_tensor_free(t);
            px_error(d, "out of memory cloning a string tensor");
            return NULL;
        }
        if (in[i].len) memcpy(out[i].data, in[i].data, in[i].len);
        out[i].data[in[i].len] = '\0';
        out[i].len = in[i].len;
    }
    return t;
}

int64_t px_tensor_numel(const px_tensor *t) {
    return px_shape_numel(&t->shape);
}

void px_tensor_free(px_tensor *t) {
    if (!t) return;
    if (t->dtype == PX_STRING && t->data && t->storage == PX_STORAGE_MALLOC) {
        px_bytes *b = t->data;
        int64_t n = px_tensor_numel(t);
        for (int64_t i = 0; i < n; i++) free(b[i].data);
    }
    if (t->storage == PX_STORAGE_MALLOC)
        free(t->data);
    else if (t->storage == PX_STORAGE_MMAP && t->data)
        munmap((char *)t->data - t->map_off, t->map_len);
    free(t);
}

/* IEEE half <-> single, round-to-nearest-even. */
float px_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0)
            bits = sign;
        else { /* subnormal: normalize */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31)
        bits = sign | 0x7f800000u | (man << 13);
    else
        bits = sign | ((exp + 112) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t px_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t exp = (x >> 23) & 0xff, man = x & 0x7fffff;
    if (exp == 0xff) return sign | 0x7c00 | (man ? 0x200 : 0);
    int e = (int)exp - 127 + 15;
    if (e >= 31) return sign | 0x7c00;
    if (e <= 0) {
        if (e < -10) return sign;
        man |= 0x800000;
        int shift = 14 - e;
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return sign | (uint16_t)half;
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++; /* may carry into exp: correct */
    return sign | (uint16_t)half;
}

float px_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t px_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

double px_tensor_get_f64(const px_tensor *t, int64_t i) {
    const void *p = t->data;
    switch (t->dtype) {
    case PX_F32: return ((const float *)p)[i];
    case PX_F64: return ((const double *)p)[i];
    case PX_F16: return px_f16_to_f32(((const uint16_t *)p)[i]);
    case PX_BF16: return px_bf16_to_f32(((const uint16_t *)p)[i]);
    case PX_U8: return ((const uint8_t *)p)[i];
    case PX_I8: return ((const int8_t *)p)[i];
    case PX_U16: return ((const uint16_t *)p)[i];
    case PX_I16: return ((const int16_t *)p)[i];
    case PX_I32: return ((const int32_t *)p)[i];
    case PX_I64: return (double)((const int64_t *)p)[i];
    case PX_U32: return ((const uint32_t *)p)[i];
    case PX_U64: return (double)((const uint64_t *)p)[i];
    case PX_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return NAN;
    }
}

int64_t px_tensor_get_i64(const px_tensor *t, int64_t i) {
    const void *p = t->data;
    switch (t->dtype) {
    case PX_U8: return ((const uint8_t *)p)[i];
    case PX_I8: return ((const int8_t *)p)[i];
    case PX_U16: return ((const uint16_t *)p)[i];
    case PX_I16: return ((const int16_t *)p)[i];
    case PX_I32: return ((const int32_t *)p)[i];
    case PX_I64: return ((const int64_t *)p)[i];
    case PX_U32: return ((const uint32_t *)p)[i];
    case PX_U64: return (int64_t)((const uint64_t *)p)[i];
    case PX_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: {
        double v = px_tensor_get_f64(t, i);
        if (!(v == v)) return 0;
        if (v >= 9.2233720368547758e18) return INT64_MAX;
        if (v <= -9.2233720368547758e18) return INT64_MIN;
        return (int64_t)v;
    }
    }
}

void px_tensor_set_f64(px_tensor *t, int64_t i, double v) {
    void *p = t->data;
    switch (t->dtype) {
    case PX_F32: ((float *)p)[i] = (float)v; break;
    case PX_F64: ((double *)p)[i] = v; break;
    case PX_F16: ((uint16_t *)p)[i] = px_f32_to_f16((float)v); break;
    case PX_BF16: ((uint16_t *)p)[i] = px_f32_to_bf16((float)v); break;
    case PX_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default:
        if (px_dtype_is_int(t->dtype)) {
            /* Out-of-range float -> int conversion is UB in C: clamp first. */
            int64_t iv;
            if (!(v == v))
                iv = 0;
            else if (v >= 9.2233720368547758e18)
                iv = INT64_MAX;
            else if (v <= -9.2233720368547758e18)
                iv = INT64_MIN;
            else
                iv = (int64_t)v;
            if (t->dtype == PX_U64 && v >= 9.2233720368547758e18 && v < 1.8446744073709552e19)
                ((uint64_t *)p)[i] = (uint64_t)v;
            else
                px_tensor_set_i64(t, i, iv);
        }
        break;
    }
}

void px_tensor_set_i64(px_tensor *t, int64_t i, int64_t v) {
    void *p = t->data;
    switch (t->dtype) {
    case PX_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case PX_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    case PX_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case PX_I16: ((int16_t *)p)[i] = (int16_t)v; break;
    case PX_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case PX_I64: ((int64_t *)p)[i] = v; break;
    case PX_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case PX_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case PX_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: px_tensor_set_f64(t, i, (double)v); break;
    }
}

int px_tensor_equal(const px_tensor *a, const px_tensor *b) {
    if (a->dtype != b->dtype || !px_shape_equal(&a->shape, &b->shape)) return 0;
    if (a->dtype != PX_STRING)
        return a->nbytes == b->nbytes &&
               (a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0);
    int64_t n = px_tensor_numel(a);
    const px_bytes *x = a->data, *y = b->data;
    for (int64_t i = 0; i < n; i++)
        if (x[i].len != y[i].len || (x[i].len && memcmp(x[i].data, y[i].data, x[i].len))) return 0;
    return 1;
}
