/* Shape functions of the ops that make new tensors from attributes or
 * small inputs: Constant, ConstantOfShape, Range, OneHot, EyeLike. */
#include "shape_util.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

int px_shape_constant(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    if (px_su_arity(n, 0, 0, d)) return -1;
    /* exactly one of the value* attributes gives the contents */
    static const char *const names[] = {"value",        "sparse_value", "value_float",
                                        "value_floats", "value_int",    "value_ints",
                                        "value_string", "value_strings"};
    const px_attr *a = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const px_attr *c = px_node_attr(n, names[i]);
        if (!c) continue;
        if (a)
            return px_su_error(d, n, "has both '%s' and '%s'; exactly one is allowed", a->name,
                               c->name);
        a = c;
    }
    if (!a) return px_su_error(d, n, "has no value attribute");
    px_shape s = px_shape_scalar();
    px_dtype dt = PX_UNDEFINED;
    switch (a->kind) {
    case PX_ATTR_TENSOR:
    case PX_ATTR_SPARSE_TENSOR:
        if (!a->t) return px_su_error(d, n, "attribute '%s' holds no tensor", a->name);
        dt = a->t->dtype;
        s = a->t->shape;
        break;
    case PX_ATTR_FLOAT: dt = PX_F32; break;
    case PX_ATTR_INT: dt = PX_I64; break;
    case PX_ATTR_STRING: dt = PX_STRING; break;
    case PX_ATTR_FLOATS:
    case PX_ATTR_INTS:
    case PX_ATTR_STRINGS:
        dt = a->kind == PX_ATTR_FLOATS ? PX_F32 : a->kind == PX_ATTR_INTS ? PX_I64 : PX_STRING;
        s = px_su_unknown_rank(1);
        px_su_set_dim(&s, 0, a->n);
        break;
    default:
        return px_su_error(d, n, "attribute '%s' has an unexpected kind %d", a->name, (int)a->kind);
    }
    return px_su_set(n, 0, dt, &s, d);
}

int px_shape_constant_of_shape(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *sv;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "input", d, &sv)) return -1;
    if (sv->dtype != PX_I64)
        return px_su_error(d, n, "input '%s' must be int64, got %s", sv->name,
                           px_dtype_name(sv->dtype));
    if (sv->shape.rank > 1)
        return px_su_error(d, n, "input '%s' must be 1-D, has rank %d", sv->name, sv->shape.rank);
    px_dtype dt = PX_F32;
    const px_tensor *value = px_attr_tensor(n, "value");
    if (value) {
        if (px_tensor_numel(value) != 1)
            return px_su_error(d, n, "attribute 'value' must hold one element, has %lld",
                               (long long)px_tensor_numel(value));
        dt = value->dtype;
    }
    int64_t dims[PX_MAX_RANK];
    int count = 0;
    int k = px_su_const_ints(n, d, sv, "input", dims, PX_MAX_RANK, &count);
    if (k < 0) return -1;
    px_shape s;
    if (k == 1) {
        s = px_su_unknown_rank(count);
        for (int i = 0; i < count; i++) {
            if (dims[i] < 0)
                return px_su_error(d, n, "shape entry %d is negative (%lld)", i,
                                   (long long)dims[i]);
            px_su_set_dim(&s, i, dims[i]);
        }
    } else {
        int64_t len = px_su_len1d(sv);
        s = px_su_unknown_rank(len > PX_MAX_RANK ? -1 : (int)len);
    }
    return px_su_set(n, 0, dt, &s, d);
}

/* Element count of Range, computed in the inputs' own type as ONNX does. */
static int range_count(const px_node *n, px_diag *d, px_value *const *in, const double *v,
                       int64_t *out) {
    px_dtype dt = in[0]->dtype;
    double start = v[0], limit = v[1], delta = v[2], c;
    if (delta == 0) return px_su_error(d, n, "delta is 0");
    if (px_dtype_is_int(dt)) {
        /* exact integer arithmetic: doubles lose precision past 2^53 */
        int64_t s = px_tensor_get_i64(in[0]->data, 0), l = px_tensor_get_i64(in[1]->data, 0);
        int64_t dl = px_tensor_get_i64(in[2]->data, 0), span;
        if (__builtin_sub_overflow(l, s, &span) || span == INT64_MIN)
            return px_su_error(d, n, "absurd size: limit - start overflows");
        int64_t q = span / dl;
        if (q * dl != span && ((span > 0) == (dl > 0))) q++;
        *out = q > 0 ? q : 0;
        return 0;
    }
    if (dt == PX_F32)
        c = ceilf(((float)limit - (float)start) / (float)delta);
    else
        c = ceil((limit - start) / delta);
    if (!(c < 9.0e18)) return px_su_error(d, n, "absurd size: Range yields %g elements", c);
    *out = c > 0 ? (int64_t)c : 0;
    return 0;
}

int px_shape_range(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *in[3];
    static const char *const what[3] = {"start", "limit", "delta"};
    if (px_su_arity(n, 3, 3, d)) return -1;
    double v[3];
    int known = 1;
    for (int i = 0; i < 3; i++) {
        if (px_su_need(n, i, what[i], d, &in[i]) || px_su_want_numeric(n, d, in[i], what[i]))
            return -1;
        if (i > 0 && px_su_same_dtype(n, d, in[0], in[i])) return -1;
        int64_t numel = px_shape_numel(&in[i]->shape);
        if (px_shape_is_static(&in[i]->shape) && numel != 1)
            return px_su_error(d, n, "%s '%s' must be a scalar", what[i], in[i]->name);
        int k = px_su_const_scalar(n, d, in[i], what[i], &v[i]);
        if (k < 0) return -1;
        known = known && k == 1;
    }
    px_shape s = px_su_unknown_rank(1);
    if (known) {
        int64_t count = 0;
        if (range_count(n, d, in, v, &count)) return -1;
        px_su_set_dim(&s, 0, count);
    }
    return px_su_set(n, 0, in[0]->dtype, &s, d);
}

int px_shape_onehot(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *idx, *depth, *values;
    if (px_su_arity(n, 3, 3, d) || px_su_need(n, 0, "indices", d, &idx) ||
        px_su_need(n, 1, "depth", d, &depth) || px_su_need(n, 2, "values", d, &values))
        return -1;
    if (px_su_want_numeric(n, d, idx, "indices") || px_su_want_numeric(n, d, depth, "depth"))
        return -1;
    if (px_shape_is_static(&values->shape) && px_shape_numel(&values->shape) != 2)
        return px_su_error(d, n, "values '%s' must hold 2 elements (off, on)", values->name);
    double dv;
    int k = px_su_const_scalar(n, d, depth, "depth", &dv);
    if (k < 0) return -1;
    if (k == 1 && !(dv >= 1 && dv < 9.0e18))
        return px_su_error(d, n, "depth must be positive, got %g", dv);
    int r = idx->shape.rank, axis;
    px_shape out = px_shape_unknown();
    if (r >= 0) {
        if (r + 1 > PX_MAX_RANK)
            return px_su_error(d, n, "output rank %d exceeds the supported %d", r + 1, PX_MAX_RANK);
        if (px_su_norm_axis(n, d, px_attr_int(n, "axis", -1), r, 1, "axis", &axis)) return -1;
        out = px_su_unknown_rank(r + 1);
        for (int i = 0, j = 0; i <= r; i++) {
            if (i == axis) {
                if (k == 1) px_su_set_dim(&out, i, (int64_t)dv);
            } else {
                px_su_copy_dim(&out, i, &idx->shape, j++);
            }
        }
    }
    return px_su_set(n, 0, values->dtype, &out, d);
}

int px_shape_eyelike(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *x;
    if (px_su_arity(n, 1, 1, d) || px_su_need(n, 0, "input", d, &x)) return -1;
    if (x->shape.rank >= 0 && x->shape.rank != 2)
        return px_su_error(d, n, "input '%s' must be 2-D, has rank %d", x->name, x->shape.rank);
    px_dtype dt = x->dtype;
    if (px_node_attr(n, "dtype")) {
        int64_t t = px_attr_int(n, "dtype", 0);
        if (t < 0 || t > 1000 || !px_dtype_valid((int)t))
            return px_su_error(d, n, "attribute 'dtype' = %lld is not a known element type",
                               (long long)t);
        dt = (px_dtype)t;
    }
    px_shape s = x->shape.rank < 0 ? px_su_unknown_rank(2) : x->shape;
    return px_su_set(n, 0, dt, &s, d);
}
