/* Dispatch and shared helpers of the constant evaluator. */
#include "const_eval_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *ce_label(const px_node *n, char *buf, size_t cap) {
    return px_node_label(n, buf, cap);
}

double ce_load_f64(const px_tensor *t, int64_t i) {
    const void *p = t->data;
    switch (t->dtype) {
    case PX_F32: return ((const float *)p)[i];
    case PX_F64: return ((const double *)p)[i];
    case PX_F16: return px_f16_to_f32(((const uint16_t *)p)[i]);
    case PX_BF16: return px_bf16_to_f32(((const uint16_t *)p)[i]);
    case PX_U64: return (double)((const uint64_t *)p)[i];
    default: return (double)ce_load_i64(t, i);
    }
}

int64_t ce_load_i64(const px_tensor *t, int64_t i) {
    const void *p = t->data;
    switch (t->dtype) {
    case PX_BOOL: return ((const uint8_t *)p)[i] != 0;
    case PX_U8: return ((const uint8_t *)p)[i];
    case PX_I8: return ((const int8_t *)p)[i];
    case PX_U16: return ((const uint16_t *)p)[i];
    case PX_I16: return ((const int16_t *)p)[i];
    case PX_U32: return ((const uint32_t *)p)[i];
    case PX_I32: return ((const int32_t *)p)[i];
    case PX_I64: return ((const int64_t *)p)[i];
    case PX_U64: return (int64_t)((const uint64_t *)p)[i];
    case PX_F32:
    case PX_F64:
    case PX_F16:
    case PX_BF16: {
        double v = ce_load_f64(t, i);
        /* Callers only ask floats for ints after range checks; stay defined anyway. */
        if (!(v > -9.2e18 && v < 9.2e18)) return 0;
        return (int64_t)v;
    }
    default: return 0;
    }
}

void ce_store_f64(px_tensor *t, int64_t i, double v) {
    void *p = t->data;
    switch (t->dtype) {
    case PX_F32: ((float *)p)[i] = (float)v; return;
    case PX_F64: ((double *)p)[i] = v; return;
    case PX_F16: ((uint16_t *)p)[i] = px_f32_to_f16((float)v); return;
    case PX_BF16: ((uint16_t *)p)[i] = px_f32_to_bf16((float)v); return;
    case PX_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    default:
        if (!(v > -9.2e18 && v < 9.2e18)) v = 0; /* out of range: callers refuse earlier */
        ce_store_i64(t, i, (int64_t)v);
        return;
    }
}

void ce_store_i64(px_tensor *t, int64_t i, int64_t v) {
    void *p = t->data;
    /* Narrowing goes through the unsigned type: wraps like ONNX runtimes do. */
    switch (t->dtype) {
    case PX_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    case PX_U8: ((uint8_t *)p)[i] = (uint8_t)v; return;
    case PX_I8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; return;
    case PX_U16: ((uint16_t *)p)[i] = (uint16_t)v; return;
    case PX_I16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; return;
    case PX_U32: ((uint32_t *)p)[i] = (uint32_t)v; return;
    case PX_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; return;
    case PX_I64: ((int64_t *)p)[i] = v; return;
    case PX_U64: ((uint64_t *)p)[i] = (uint64_t)v; return;
    case PX_F32: ((float *)p)[i] = (float)v; return; /* direct: one rounding */
    case PX_F64: ((double *)p)[i] = (double)v; return;
    case PX_F16:
    case PX_BF16: ce_store_f64(t, i, (double)v); return;
    default: return;
    }
}

int ce_numeric(px_dtype t) {
    return t == PX_BOOL || px_dtype_is_float(t) || (px_dtype_is_int(t) && t != PX_U64);
}

int ce_alloc(px_dtype dtype, const px_shape *shape, px_tensor **out, px_diag *d) {
    int64_t numel = px_shape_numel(shape);
    if (numel < 0 || numel > PX_CONST_EVAL_MAX_ELEMS) return PX_EVAL_NOT_FOLDABLE;
    *out = px_tensor_new(dtype, shape, d);
    return *out ? PX_EVAL_OK : PX_EVAL_ERROR;
}

int ce_read_ints(const px_tensor *t, int64_t *dst, int cap) {
    if (!t || (t->dtype != PX_I64 && t->dtype != PX_I32) || t->shape.rank > 1) return -1;
    int64_t count = px_shape_numel(&t->shape);
    if (count < 0 || count > cap || (count > 0 && !t->data)) return -1;
    for (int64_t i = 0; i < count; i++) dst[i] = ce_load_i64(t, i);
    return (int)count;
}

int ce_broadcast_shape(const px_node *n, int k, const px_shape *const *shapes, px_shape *out,
                       px_diag *d) {
    int rank = 0;
    for (int i = 0; i < k; i++)
        if (shapes[i]->rank > rank) rank = shapes[i]->rank;
    *out = px_shape_make(rank, NULL);
    for (int ax = 0; ax < rank; ax++) {
        int64_t dim = 1;
        for (int i = 0; i < k; i++) {
            int off = ax - (rank - shapes[i]->rank);
            if (off < 0) continue;
            int64_t di = shapes[i]->dims[off];
            if (di == 1) continue;
            if (dim != 1 && dim != di) {
                char lb[256], s1[128], s2[128];
                px_shape_str(shapes[0], s1, sizeof s1);
                px_shape_str(shapes[i], s2, sizeof s2);
                return px_error(d, "%s: shapes %s and %s do not broadcast",
                                ce_label(n, lb, sizeof lb), s1, s2);
            }
            dim = di;
        }
        out->dims[ax] = dim;
    }
    return 0;
}

void ce_strides(const px_shape *s, int64_t *strides) {
    int64_t acc = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        strides[i] = acc;
        acc *= s->dims[i];
    }
}

int64_t ce_broadcast_index(const px_shape *out, const px_shape *in, int64_t flat) {
    int64_t idx = 0, in_stride = 1;
    for (int ax = out->rank - 1; ax >= 0; ax--) {
        int64_t coord = flat % out->dims[ax];
        flat /= out->dims[ax];
        int off = ax - (out->rank - in->rank);
        if (off < 0) break;
        int64_t di = in->dims[off];
        if (di != 1) idx += coord * in_stride;
        in_stride *= di;
    }
    return idx;
}

int ce_axis(const px_node *n, int64_t axis, int rank, int64_t *out, px_diag *d) {
    if (axis < -rank || axis >= rank) {
        char lb[256];
        return px_error(d, "%s: axis %lld is out of range for rank %d", ce_label(n, lb, sizeof lb),
                        (long long)axis, rank);
    }
    *out = axis < 0 ? axis + rank : axis;
    return 0;
}

/* ops.def's eval column, as px_eval_<eval> (const_eval_internal.h). */
static const ce_eval_fn evaluators[PX_OP_COUNT] = {
#define OP(name, domain, flags, sig, shape, grad, lower, eval)                                     \
    [PX_OP_##name] = PX_OP_RULE_REF(px_eval_, eval),
#include "ops.def"
#undef OP
};

static ce_eval_fn lookup(px_op op) {
    return ((int)op > PX_OP_UNKNOWN && op < PX_OP_COUNT) ? evaluators[op] : NULL;
}

int px_const_eval_supports(px_op op) {
    return op != PX_OP_UNKNOWN && lookup(op) != NULL;
}

int px_const_eval_node(const px_node *n, const px_tensor *const *inputs, px_tensor **outputs,
                       px_diag *d) {
    for (int j = 0; j < n->n_outputs; j++) outputs[j] = NULL;
    if (n->op == PX_OP_UNKNOWN) return PX_EVAL_NOT_FOLDABLE;
    ce_eval_fn f = lookup(n->op);
    if (!f) return PX_EVAL_NOT_FOLDABLE;
    /* Every present input except a Shape/Size descriptor must carry data; a
     * STRING tensor is only passed through by Constant/Identity. */
    for (int i = 0; i < n->n_inputs; i++) {
        const px_tensor *t = inputs[i];
        if (!t) continue;
        if (!px_shape_is_static(&t->shape)) return PX_EVAL_NOT_FOLDABLE;
        if (n->op == PX_OP_Shape || n->op == PX_OP_Size) continue;
        if (!t->data && px_shape_numel(&t->shape) > 0) return PX_EVAL_NOT_FOLDABLE;
        if (t->dtype == PX_STRING && n->op != PX_OP_Identity) return PX_EVAL_NOT_FOLDABLE;
    }
    int status = f(n, inputs, outputs, d);
    if (status != PX_EVAL_OK) {
        for (int j = 0; j < n->n_outputs; j++) {
            px_tensor_free(outputs[j]);
            outputs[j] = NULL;
        }
    }
    return status;
}
