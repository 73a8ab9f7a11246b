/* ONNX TensorProto / SparseTensorProto / TypeProto -> IR tensors and types.
 * Every size is checked before anything is allocated: dims come from an
 * untrusted file, and only data actually present (or mapped) is trusted. */
#include "external_data.h"
#include "onnx_import_internal.h"

#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "raw_data is little-endian and copied as is: big-endian hosts need byte swapping here"
#endif

char *pxi_strdup(const char *s) {
    if (!s) return NULL;
    char *r = strdup(s);
    if (!r) abort(); /* same policy as the IR's own allocations */
    return r;
}

/* The typed repeated fields of TensorProto, in the order ONNX documents them. */
typedef enum typed_field {
    FIELD_NONE,
    FIELD_FLOAT,
    FIELD_INT32,
    FIELD_STRING,
    FIELD_INT64,
    FIELD_DOUBLE,
    FIELD_UINT64,
    FIELD_COUNT
} typed_field;

static const char *const field_names[FIELD_COUNT] = {
    "none", "float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data",
};

static size_t field_len(const Onnx__TensorProto *tp, typed_field f) {
    switch (f) {
    case FIELD_FLOAT: return tp->n_float_data;
    case FIELD_INT32: return tp->n_int32_data;
    case FIELD_STRING: return tp->n_string_data;
    case FIELD_INT64: return tp->n_int64_data;
    case FIELD_DOUBLE: return tp->n_double_data;
    case FIELD_UINT64: return tp->n_uint64_data;
    default: return 0;
    }
}

/* Which typed field ONNX uses for a dtype (onnx.proto comments). */
static typed_field field_for(px_dtype t) {
    switch (t) {
    case PX_F32:
    case PX_C64: return FIELD_FLOAT;
    case PX_I32:
    case PX_I16:
    case PX_I8:
    case PX_U16:
    case PX_U8:
    case PX_BOOL:
    case PX_F16:
    case PX_BF16: return FIELD_INT32;
    case PX_STRING: return FIELD_STRING;
    case PX_I64: return FIELD_INT64;
    case PX_F64:
    case PX_C128: return FIELD_DOUBLE;
    case PX_U32:
    case PX_U64: return FIELD_UINT64;
    default: return FIELD_NONE;
    }
}

/* Complex numbers take two entries (real, imaginary) of their typed field. */
static int64_t entries_per_elem(px_dtype t) {
    return t == PX_C64 || t == PX_C128 ? 2 : 1;
}

static const char *tensor_label(const Onnx__TensorProto *tp, const char *label) {
    if (tp->name && *tp->name) return tp->name;
    return label ? label : "<unnamed>";
}

/* Validates dims and computes shape, element count and byte size. */
static int tensor_geometry(px_import_ctx *c, const Onnx__TensorProto *tp, const char *name,
                           px_dtype dt, px_shape *shape, int64_t *numel, int64_t *nbytes) {
    if (tp->n_dims > PX_MAX_RANK)
        return px_error(c->d, "tensor '%s' has rank %zu; at most %d is supported", name, tp->n_dims,
                        PX_MAX_RANK);
    int64_t n = 1;
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0)
            return px_error(c->d, "tensor '%s' has negative dimension %lld at axis %zu", name,
                            (long long)tp->dims[i], i);
        if (px_mul_checked(n, tp->dims[i], &n))
            return px_error(c->d, "tensor '%s': the element count of its dims overflows 64 bits",
                            name);
    }
    size_t es = dt == PX_STRING ? sizeof(px_bytes) : px_dtype_size(dt);
    if (px_mul_checked(n, (int64_t)es, nbytes) || (uint64_t)*nbytes > (uint64_t)SIZE_MAX / 2)
        return px_error(c->d, "tensor '%s': %lld elements of %s overflow the addressable size",
                        name, (long long)n, px_dtype_name(dt));
    *shape = px_shape_make((int)tp->n_dims, tp->dims);
    *numel = n;
    return 0;
}

static int parse_nonneg(const char *s, int64_t *out) {
    if (!s || !*s) return -1;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        if (v > (INT64_MAX - (*s - '0')) / 10) return -1;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 0;
}

static px_tensor *tensor_from_external(px_import_ctx *c, const Onnx__TensorProto *tp,
                                       const char *name, px_dtype dt, const px_shape *shape,
                                       int64_t nbytes) {
    px_external_ref ref = {NULL, 0, -1};
    if (dt == PX_STRING) {
        px_error(c->d, "tensor '%s': string tensors cannot use external data", name);
        return NULL;
    }
    if (tp->has_raw_data || tp->n_float_data || tp->n_int32_data || tp->n_int64_data ||
        tp->n_double_data || tp->n_uint64_data || tp->n_string_data) {
        px_error(c->d, "tensor '%s' has both external data and data inside the model", name);
        return NULL;
    }
    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = tp->external_data[i];
        if (!e || !e->key) continue;
        if (strcmp(e->key, "location") == 0)
            ref.location = e->value;
        else if (strcmp(e->key, "offset") == 0 || strcmp(e->key, "length") == 0) {
            int64_t *dst = e->key[0] == 'o' ? &ref.offset : &ref.length;
            if (parse_nonneg(e->value, dst)) {
                px_error(c->d, "tensor '%s': external data %s '%s' is not a non-negative integer",
                         name, e->key, e->value ? e->value : "");
                return NULL;
            }
        }
        /* "checksum" (and unknown keys, as onnx does) are ignored. */
    }
    if (!ref.location) {
        px_error(c->d, "tensor '%s' uses external data but has no 'location' entry", name);
        return NULL;
    }
    if (nbytes == 0) return px_tensor_new(dt, shape, c->d); /* nothing to read */
    px_tensor *t = calloc(1, sizeof *t);
    if (!t) abort();
    t->dtype = dt;
    t->shape = *shape;
    t->nbytes = (size_t)nbytes;
    t->storage = PX_STORAGE_MALLOC;
    if (px_external_data_load(c->base_dir, name, &ref, t, c->d)) {
        px_tensor_free(t);
        return NULL;
    }
    return t;
}

/* Copies the dtype's typed field into t (lengths already checked). */
static void decode_typed(const Onnx__TensorProto *tp, px_tensor *t, int64_t numel) {
    void *p = t->data;
    switch (t->dtype) {
    case PX_F32:
    case PX_C64: memcpy(p, tp->float_data, t->nbytes); break;
    case PX_F64:
    case PX_C128: memcpy(p, tp->double_data, t->nbytes); break;
    case PX_I64: memcpy(p, tp->int64_data, t->nbytes); break;
    case PX_U64: memcpy(p, tp->uint64_data, t->nbytes); break;
    case PX_I32: memcpy(p, tp->int32_data, t->nbytes); break;
    case PX_U32:
        for (int64_t i = 0; i < numel; i++) ((uint32_t *)p)[i] = (uint32_t)tp->uint64_data[i];
        break;
    /* Narrow types travel widened in int32_data; f16/bf16 as their bit patterns. */
    case PX_I16:
        for (int64_t i = 0; i < numel; i++) ((int16_t *)p)[i] = (int16_t)tp->int32_data[i];
        break;
    case PX_I8:
        for (int64_t i = 0; i < numel; i++) ((int8_t *)p)[i] = (int8_t)tp->int32_data[i];
        break;
    case PX_U16:
    case PX_F16:
    case PX_BF16:
        for (int64_t i = 0; i < numel; i++)
            ((uint16_t *)p)[i] = (uint16_t)((uint32_t)tp->int32_data[i] & 0xffffu);
        break;
    case PX_U8:
        for (int64_t i = 0; i < numel; i++)
            ((uint8_t *)p)[i] = (uint8_t)((uint32_t)tp->int32_data[i] & 0xffu);
        break;
    case PX_BOOL:
        for (int64_t i = 0; i < numel; i++) ((uint8_t *)p)[i] = tp->int32_data[i] != 0;
        break;
    case PX_STRING: {
        px_bytes *b = p;
        for (int64_t i = 0; i < numel; i++) {
            size_t len = tp->string_data[i].len;
            b[i].data = malloc(len + 1);
            if (!b[i].data) abort();
            if (len) memcpy(b[i].data, tp->string_data[i].data, len);
            b[i].data[len] = '\0';
            b[i].len = len;
        }
        break;
    }
    default: break;
    }
}

px_tensor *pxi_tensor_from_proto(px_import_ctx *c, const Onnx__TensorProto *tp, const char *label) {
    const char *name = tensor_label(tp, label);
    if (tp->segment) {
        px_error(c->d,
                 "tensor '%s' is a segment of a larger tensor (TensorProto.segment); segmented "
                 "tensors are not supported",
                 name);
        return NULL;
    }
    if (!tp->has_data_type || tp->data_type == PX_UNDEFINED) {
        px_error(c->d, "tensor '%s' has no data_type", name);
        return NULL;
    }
    if (!px_dtype_valid(tp->data_type)) {
        px_error(c->d, "tensor '%s' has unknown data_type %d", name, (int)tp->data_type);
        return NULL;
    }
    px_dtype dt = (px_dtype)tp->data_type;
    px_shape shape;
    int64_t numel = 0, nbytes = 0;
    if (tensor_geometry(c, tp, name, dt, &shape, &numel, &nbytes)) return NULL;

    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return tensor_from_external(c, tp, name, dt, &shape, nbytes);

    /* Exactly one place may hold the data: raw_data or one typed field. */
    typed_field expected = field_for(dt);
    for (int f = FIELD_FLOAT; f < FIELD_COUNT; f++) {
        if (f == (int)expected || field_len(tp, (typed_field)f) == 0) continue;
        px_error(c->d, "tensor '%s' of type %s stores data in %s (expected %s or raw_data)", name,
                 px_dtype_name(dt), field_names[f], field_names[expected]);
        return NULL;
    }
    size_t typed_len = field_len(tp, expected);
    char sbuf[256];
    if (tp->has_raw_data) {
        if (typed_len) {
            px_error(c->d, "tensor '%s' has both raw_data and %s", name, field_names[expected]);
            return NULL;
        }
        if (dt == PX_STRING) {
            px_error(c->d, "tensor '%s': string tensors must use string_data, not raw_data", name);
            return NULL;
        }
        if ((uint64_t)tp->raw_data.len != (uint64_t)nbytes) {
            px_error(c->d,
                     "tensor '%s': raw_data has %zu bytes but %lld elements of %s (dims %s) "
                     "need %lld",
                     name, tp->raw_data.len, (long long)numel, px_dtype_name(dt),
                     px_shape_str(&shape, sbuf, sizeof sbuf), (long long)nbytes);
            return NULL;
        }
        px_tensor *t = px_tensor_new(dt, &shape, c->d);
        if (t && nbytes) memcpy(t->data, tp->raw_data.data, (size_t)nbytes);
        return t;
    }
    int64_t want = numel * entries_per_elem(dt); /* cannot overflow: numel*elsize did not */
    if ((uint64_t)typed_len != (uint64_t)want) {
        if (typed_len == 0)
            px_error(c->d, "tensor '%s' has %lld elements (dims %s) but no data", name,
                     (long long)numel, px_shape_str(&shape, sbuf, sizeof sbuf));
        else
            px_error(c->d,
                     "tensor '%s' has %lld elements (dims %s) but %s holds %zu values "
                     "(expected %lld)",
                     name, (long long)numel, px_shape_str(&shape, sbuf, sizeof sbuf),
                     field_names[expected], typed_len, (long long)want);
        return NULL;
    }
    px_tensor *t = px_tensor_new(dt, &shape, c->d);
    if (t && numel > 0) decode_typed(tp, t, numel);
    return t;
}

/* Dense shape of a sparse tensor, with the size limit for densifying. */
static int sparse_geometry(px_import_ctx *c, const Onnx__SparseTensorProto *sp, const char *name,
                           px_dtype dt, px_shape *shape) {
    if (sp->n_dims > PX_MAX_RANK)
        return px_error(c->d, "sparse tensor '%s' has rank %zu; at most %d is supported", name,
                        sp->n_dims, PX_MAX_RANK);
    int64_t n = 1, bytes;
    for (size_t i = 0; i < sp->n_dims; i++)
        if (sp->dims[i] < 0 || px_mul_checked(n, sp->dims[i], &n))
            return px_error(c->d, "sparse tensor '%s' has invalid dims (negative or overflowing)",
                            name);
    if (px_mul_checked(n, (int64_t)px_dtype_size(dt), &bytes) || bytes > PX_IMPORT_DENSIFY_MAX)
        return px_error(c->d,
                        "sparse tensor '%s' would take more than %lld bytes once densified; "
                        "refusing to import it",
                        name, (long long)PX_IMPORT_DENSIFY_MAX);
    *shape = px_shape_make((int)sp->n_dims, sp->dims);
    return 0;
}

px_tensor *pxi_tensor_from_sparse(px_import_ctx *c, const Onnx__SparseTensorProto *sp,
                                  const char *label) {
    px_tensor *values = NULL, *indices = NULL, *dense = NULL;
    if (!sp->values) {
        px_error(c->d, "sparse tensor '%s' has no values", label ? label : "<unnamed>");
        return NULL;
    }
    const char *name = tensor_label(sp->values, label);
    px_shape shape;
    values = pxi_tensor_from_proto(c, sp->values, name);
    if (!values) goto cleanup;
    if (values->dtype == PX_STRING) {
        px_error(c->d, "sparse tensor '%s': string values are not supported", name);
        goto cleanup;
    }
    if (sparse_geometry(c, sp, name, values->dtype, &shape)) goto cleanup;
    int64_t nnz = px_tensor_numel(values);
    if (values->shape.rank != 1) {
        px_error(c->d, "sparse tensor '%s': values must be 1-D, got rank %d", name,
                 values->shape.rank);
        goto cleanup;
    }
    int rank = shape.rank;
    int64_t numel = px_shape_numel(&shape);
    if (nnz > 0) {
        if (!sp->indices) {
            px_error(c->d, "sparse tensor '%s' has %lld values but no indices", name,
                     (long long)nnz);
            goto cleanup;
        }
        indices = pxi_tensor_from_proto(c, sp->indices, name);
        if (!indices) goto cleanup;
        if (!px_dtype_is_int(indices->dtype)) {
            px_error(c->d, "sparse tensor '%s': indices must be integers, got %s", name,
                     px_dtype_name(indices->dtype));
            goto cleanup;
        }
    }
    /* Indices are either [NNZ] linear positions or [NNZ, rank] coordinates. */
    int coords = indices && indices->shape.rank == 2;
    if (indices && !((indices->shape.rank == 1 && indices->shape.dims[0] == nnz) ||
                     (coords && indices->shape.dims[0] == nnz && indices->shape.dims[1] == rank))) {
        char sbuf[256];
        px_error(c->d,
                 "sparse tensor '%s': indices of shape %s do not match %lld values of rank %d",
                 name, px_shape_str(&indices->shape, sbuf, sizeof sbuf), (long long)nnz, rank);
        goto cleanup;
    }
    dense = px_tensor_new(values->dtype, &shape, c->d);
    if (!dense) goto cleanup;
    size_t es = px_dtype_size(values->dtype);
    for (int64_t k = 0; k < nnz; k++) {
        int64_t pos = 0;
        if (coords) {
            for (int a = 0; a < rank; a++) {
                int64_t ix = px_tensor_get_i64(indices, k * rank + a);
                if (ix < 0 || ix >= shape.dims[a]) {
                    pos = -1;
                    break;
                }
                pos = pos * shape.dims[a] + ix;
            }
        } else {
            pos = px_tensor_get_i64(indices, k);
            if (pos >= numel) pos = -1;
        }
        if (pos < 0) {
            px_error(c->d, "sparse tensor '%s': index #%lld is out of range", name, (long long)k);
            px_tensor_free(dense);
            dense = NULL;
            goto cleanup;
        }
        memcpy((char *)dense->data + (size_t)pos * es, (char *)values->data + (size_t)k * es, es);
    }
cleanup:
    px_tensor_free(values);
    px_tensor_free(indices);
    return dense;
}

int pxi_type_from_proto(px_import_ctx *c, const Onnx__TypeProto *tp, const char *label,
                        px_dtype *dtype, px_shape *shape, int *is_tensor) {
    *dtype = PX_UNDEFINED;
    *shape = px_shape_unknown();
    *is_tensor = 1;
    if (!tp) return 0;
    int32_t elem;
    const Onnx__TensorShapeProto *sp;
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type) {
        elem = tp->tensor_type->has_elem_type ? tp->tensor_type->elem_type : 0;
        sp = tp->tensor_type->shape;
    } else if (tp->value_case == ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE &&
               tp->sparse_tensor_type) {
        /* Described like a tensor, but a sparse runtime value is not one. */
        *is_tensor = 0;
        elem = tp->sparse_tensor_type->has_elem_type ? tp->sparse_tensor_type->elem_type : 0;
        sp = tp->sparse_tensor_type->shape;
    } else {
        *is_tensor = tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET;
        return 0;
    }
    if (!px_dtype_valid(elem))
        return px_error(c->d, "'%s' has unknown element type %d", label, (int)elem);
    *dtype = (px_dtype)elem;
    if (!sp) return 0; /* rank unknown */
    if (sp->n_dim > PX_MAX_RANK)
        return px_error(c->d, "'%s' has rank %zu; at most %d is supported", label, sp->n_dim,
                        PX_MAX_RANK);
    px_shape s = px_shape_make((int)sp->n_dim, NULL); /* all dims unknown */
    for (size_t i = 0; i < sp->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *dim = sp->dim[i];
        if (!dim) continue;
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (dim->dim_value >= 0) s.dims[i] = dim->dim_value;
        } else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   dim->dim_param && *dim->dim_param) {
            px_shape_set_sym(&s, i, dim->dim_param);
        }
    }
    *shape = s;
    return 0;
}
