#include "shape_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The newest ai.onnx opset whose operator forms we implement. */
#define PX_SU_LATEST_OPSET 19

int px_su_error(px_diag *d, const px_node *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = px_node_verror(d, n, "", fmt, ap);
    va_end(ap);
    return rc;
}

int64_t px_su_opset(const px_graph *g) {
    while (g && g->parent) g = g->parent;
    int64_t v = g ? px_graph_opset(g, "") : 0;
    return v > 0 ? v : PX_SU_LATEST_OPSET;
}

px_value *px_su_in(const px_node *n, int i) {
    return (i >= 0 && i < n->n_inputs) ? n->inputs[i] : NULL;
}

px_value *px_su_out(const px_node *n, int i) {
    return (i >= 0 && i < n->n_outputs) ? n->outputs[i] : NULL;
}

int px_su_need(const px_node *n, int i, const char *what, px_diag *d, px_value **out) {
    px_value *v = px_su_in(n, i);
    if (!v) return px_su_error(d, n, "missing required %s (input %d)", what, i);
    if (!px_dtype_valid((int)v->dtype))
        return px_su_error(d, n, "%s '%s' has no known element type", what, v->name);
    *out = v;
    return 0;
}

int px_su_arity(const px_node *n, int min_in, int max_in, px_diag *d) {
    if (n->n_inputs < min_in || (max_in >= 0 && n->n_inputs > max_in)) {
        if (max_in < 0)
            return px_su_error(d, n, "expects at least %d inputs, got %d", min_in, n->n_inputs);
        return px_su_error(d, n, "expects %d to %d inputs, got %d", min_in, max_in, n->n_inputs);
    }
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i]) return 0;
    return px_su_error(d, n, "has no outputs");
}

int px_su_set(const px_node *n, int i, px_dtype dt, const px_shape *s, px_diag *d) {
    px_value *v = px_su_out(n, i);
    if (!v) return 0;
    if (s->rank > PX_MAX_RANK)
        return px_su_error(d, n, "output '%s' would have rank %d (at most %d supported)", v->name,
                           s->rank, PX_MAX_RANK);
    for (int k = 0; k < s->rank; k++)
        if (s->dims[k] < -1)
            return px_su_error(d, n, "output '%s' would have negative dim %lld", v->name,
                               (long long)s->dims[k]);
    /* the byte count must be representable too (strings count as 1 byte) */
    int64_t numel = px_shape_numel(s), bytes;
    int64_t elem = px_dtype_size(dt) ? (int64_t)px_dtype_size(dt) : 1;
    if (px_shape_is_static(s) && (numel < 0 || px_mul_checked(numel, elem, &bytes))) {
        char buf[256];
        return px_su_error(d, n, "output '%s' would have an absurd size %s (byte count overflows)",
                           v->name, px_shape_str(s, buf, sizeof buf));
    }
    v->dtype = dt;
    v->shape = *s;
    return 0;
}

px_shape px_su_unknown_rank(int rank) {
    px_shape s;
    memset(&s, 0, sizeof s);
    s.rank = rank;
    for (int i = 0; i < rank && i < PX_MAX_RANK; i++) s.dims[i] = -1;
    return s;
}

void px_su_copy_dim(px_shape *dst, int di, const px_shape *src, int si) {
    dst->dims[di] = src->dims[si];
    dst->sym_id[di] = src->dims[si] < 0 ? src->sym_id[si] : 0;
}

void px_su_set_dim(px_shape *dst, int di, int64_t v) {
    dst->dims[di] = v;
    dst->sym_id[di] = 0;
}

int px_su_dim_same(const px_shape *a, int ai, const px_shape *b, int bi) {
    if (a->dims[ai] >= 0 || b->dims[bi] >= 0) return a->dims[ai] == b->dims[bi];
    return a->sym_id[ai] && a->sym_id[ai] == b->sym_id[bi]; /* one id per name */
}

int px_su_norm_axis(const px_node *n, px_diag *d, int64_t axis, int rank, int allow_end,
                    const char *what, int *out) {
    int64_t hi = allow_end ? rank : rank - 1;
    if (axis < -(hi + 1) || axis > hi)
        return px_su_error(d, n, "%s %lld is out of range for rank %d (valid: [%lld, %lld])", what,
                           (long long)axis, rank, (long long)-(hi + 1), (long long)hi);
    *out = (int)(axis < 0 ? axis + hi + 1 : axis);
    return 0;
}

int px_su_norm_axes(const px_node *n, px_diag *d, int64_t *axes, int count, int rank,
                    const char *what) {
    for (int i = 0; i < count; i++) {
        int a;
        if (px_su_norm_axis(n, d, axes[i], rank, 0, what, &a)) return -1;
        axes[i] = a;
        for (int j = 0; j < i; j++)
            if (axes[j] == a) return px_su_error(d, n, "%s lists axis %d twice", what, a);
    }
    return 0;
}

int px_su_const_ints(const px_node *n, px_diag *d, const px_value *v, const char *what,
                     int64_t *out, int cap, int *count) {
    if (!v || !px_value_is_const(v) || !v->data) return 0;
    const px_tensor *t = v->data;
    if (!px_dtype_is_int(t->dtype))
        return px_su_error(d, n, "%s '%s' must be an integer tensor, got %s", what, v->name,
                           px_dtype_name(t->dtype));
    int64_t numel = px_tensor_numel(t);
    if (numel < 0 || numel > cap)
        return px_su_error(d, n, "%s '%s' has %lld elements (at most %d supported)", what, v->name,
                           (long long)numel, cap);
    for (int64_t i = 0; i < numel; i++) out[i] = px_tensor_get_i64(t, i);
    *count = (int)numel;
    return 1;
}

int px_su_const_scalar(const px_node *n, px_diag *d, const px_value *v, const char *what,
                       double *out) {
    if (!v || !px_value_is_const(v) || !v->data) return 0;
    const px_tensor *t = v->data;
    if (t->dtype == PX_STRING || t->dtype == PX_C64 || t->dtype == PX_C128)
        return px_su_error(d, n, "%s '%s' must be numeric, got %s", what, v->name,
                           px_dtype_name(t->dtype));
    if (px_tensor_numel(t) != 1)
        return px_su_error(d, n, "%s '%s' must hold exactly one element, has %lld", what, v->name,
                           (long long)px_tensor_numel(t));
    *out = px_tensor_get_f64(t, 0);
    return 1;
}

int64_t px_su_len1d(const px_value *v) {
    if (!v) return -1;
    if (px_value_is_const(v) && v->data) return px_tensor_numel(v->data);
    if (v->shape.rank == 1) return v->shape.dims[0];
    if (v->shape.rank == 0) return 1;
    return -1;
}

int px_su_ints_attr_or_input(const px_node *n, px_diag *d, const char *attr, int input_index,
                             const char *what, int64_t *out, int cap, int *count, int *present,
                             int *known) {
    *present = 0;
    *known = 0;
    *count = -1;
    int c = 0;
    const int64_t *a = attr ? px_attr_ints(n, attr, &c) : NULL;
    if (attr && px_node_attr(n, attr)) {
        if (c > cap) return px_su_error(d, n, "%s has %d entries (at most %d)", what, c, cap);
        if (c > 0) memcpy(out, a, (size_t)c * sizeof *out);
        *present = *known = 1;
        *count = c;
        return 0;
    }
    px_value *v = input_index >= 0 ? px_su_in(n, input_index) : NULL;
    if (!v) return 0;
    *present = 1;
    if (v->dtype != PX_UNDEFINED && !px_dtype_is_int(v->dtype))
        return px_su_error(d, n, "%s '%s' must be an integer tensor, got %s", what, v->name,
                           px_dtype_name(v->dtype));
    if (v->shape.rank > 1)
        return px_su_error(d, n, "%s '%s' must be 1-D, has rank %d", what, v->name, v->shape.rank);
    int r = px_su_const_ints(n, d, v, what, out, cap, count);
    if (r < 0) return -1;
    if (r == 1) {
        *known = 1;
        return 0;
    }
    int64_t len = px_su_len1d(v);
    if (len > cap)
        return px_su_error(d, n, "%s has %lld entries (at most %d)", what, (long long)len, cap);
    *count = (int)len;
    return 0;
}

/* One output dim of a broadcast; x and y are dims of a and b (or NULL when
 * that operand has fewer dims). */
static int broadcast_dim(const px_node *n, px_diag *d, const px_shape *a, int ai, const px_shape *b,
                         int bi, px_shape *out, int oi) {
    if (ai < 0) {
        px_su_copy_dim(out, oi, b, bi);
        return 0;
    }
    if (bi < 0) {
        px_su_copy_dim(out, oi, a, ai);
        return 0;
    }
    int64_t x = a->dims[ai], y = b->dims[bi];
    if (x >= 0 && y >= 0) {
        if (x != y && x != 1 && y != 1) {
            char sa[256], sb[256];
            return px_su_error(d, n, "shapes %s and %s cannot be broadcast (dim %lld vs %lld)",
                               px_shape_str(a, sa, sizeof sa), px_shape_str(b, sb, sizeof sb),
                               (long long)x, (long long)y);
        }
        px_su_set_dim(out, oi, x == 1 ? y : x);
    } else if (x == 1) {
        px_su_copy_dim(out, oi, b, bi);
    } else if (y == 1) {
        px_su_copy_dim(out, oi, a, ai);
    } else if (x > 1) {
        /* the unknown side must be 1 or x */
        px_su_set_dim(out, oi, x);
    } else if (y > 1) {
        px_su_set_dim(out, oi, y);
    } else if (x == 0 || y == 0) {
        px_su_set_dim(out, oi, 0);
    } else if (px_su_dim_same(a, ai, b, bi)) {
        px_su_copy_dim(out, oi, a, ai);
    } else {
        out->dims[oi] = -1;
        out->sym_id[oi] = 0;
    }
    return 0;
}

int px_su_broadcast(const px_node *n, px_diag *d, const px_shape *a, const px_shape *b,
                    px_shape *out) {
    if (a->rank < 0 || b->rank < 0) {
        *out = px_shape_unknown();
        return 0;
    }
    px_shape r = px_su_unknown_rank(a->rank > b->rank ? a->rank : b->rank);
    for (int i = 0; i < r.rank; i++) {
        int ai = a->rank - r.rank + i, bi = b->rank - r.rank + i;
        if (broadcast_dim(n, d, a, ai, b, bi, &r, i)) return -1;
    }
    *out = r;
    return 0;
}

int px_su_check_unidirectional(const px_node *n, px_diag *d, const px_shape *target,
                               const px_shape *src, const char *what) {
    if (target->rank < 0 || src->rank < 0) return 0;
    char st[256], ss[256];
    if (src->rank > target->rank)
        return px_su_error(d, n, "%s of shape %s cannot broadcast to %s", what,
                           px_shape_str(src, ss, sizeof ss), px_shape_str(target, st, sizeof st));
    for (int i = 0; i < src->rank; i++) {
        int ti = target->rank - src->rank + i;
        int64_t x = src->dims[i], y = target->dims[ti];
        if (x >= 0 && y >= 0 && x != 1 && x != y)
            return px_su_error(d, n, "%s of shape %s cannot broadcast to %s", what,
                               px_shape_str(src, ss, sizeof ss),
                               px_shape_str(target, st, sizeof st));
    }
    return 0;
}

int px_su_same_dtype(const px_node *n, px_diag *d, const px_value *a, const px_value *b) {
    if (a->dtype == b->dtype) return 0;
    return px_su_error(d, n, "inputs '%s' (%s) and '%s' (%s) must have the same element type",
                       a->name, px_dtype_name(a->dtype), b->name, px_dtype_name(b->dtype));
}

/* "must be ..." of the error for the classes cls. */
static const char *class_wanted(unsigned cls) {
    switch (cls) {
    case PX_DTC_FLOAT: return "a floating-point tensor";
    case PX_DTC_FLOAT | PX_DTC_SINT: return "a floating-point or signed integer tensor";
    case PX_DTC_NUMERIC: return "numeric";
    case PX_DTC_BOOL: return "bool";
    default: return "of another element type";
    }
}

int px_su_want_class(const px_node *n, px_diag *d, const px_value *v, const char *what,
                     unsigned cls) {
    if (px_dtype_class(v->dtype) & cls) return 0;
    return px_su_error(d, n, "%s '%s' must be %s, got %s", what, v->name, class_wanted(cls),
                       px_dtype_name(v->dtype));
}

int px_su_want_float(const px_node *n, px_diag *d, const px_value *v, const char *what) {
    return px_su_want_class(n, d, v, what, PX_DTC_FLOAT);
}

int px_su_want_int(const px_node *n, px_diag *d, const px_value *v, const char *what) {
    if (px_dtype_is_int(v->dtype)) return 0;
    return px_su_error(d, n, "%s '%s' must be an integer tensor, got %s", what, v->name,
                       px_dtype_name(v->dtype));
}

int px_su_want_numeric(const px_node *n, px_diag *d, const px_value *v, const char *what) {
    return px_su_want_class(n, d, v, what, PX_DTC_NUMERIC);
}
