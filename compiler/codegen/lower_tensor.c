/* Helpers shared by the tensor lowerings (lower_tensor_*.c), which call the
 * kernels of runtime/kernels/tensor*.c. */
#include "lower_tensor_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int px_ltn_check(const px_node *n, const px_value *v, const char *what, px_diag *d) {
    char s[256];
    if (!v) return px_lower_error(d, n, "missing %s", what);
    if (v->dtype == PX_STRING)
        return px_lower_error(
            d, n,
            "%s ('%s') is a string tensor; the code generator supports %s only on "
            "numeric and bool tensors",
            what, v->name, n->op_type);
    if (px_dtype_size(v->dtype) == 0)
        return px_lower_error(d, n, "%s ('%s') has dtype %s, which %s does not support", what,
                              v->name, px_dtype_name(v->dtype), n->op_type);
    if (!px_shape_is_static(&v->shape))
        return px_lower_error(d, n,
                              "%s ('%s') has shape %s; the code generator needs static shapes",
                              what, v->name, px_shape_str(&v->shape, s, sizeof s));
    if (v->shape.rank > 16)
        return px_lower_error(d, n, "%s ('%s') has rank %d; the kernels support up to 16", what,
                              v->name, v->shape.rank);
    return 0;
}

int px_ltn_same_dtype(const px_node *n, const px_value *in, const px_value *out, px_diag *d) {
    if (in->dtype == out->dtype) return 0;
    return px_lower_error(d, n, "output '%s' has dtype %s but input '%s' has %s", out->name,
                          px_dtype_name(out->dtype), in->name, px_dtype_name(in->dtype));
}

int px_ltn_const_ints(const px_node *n, const px_value *v, const char *what, int64_t *out, int cap,
                      int *count, px_diag *d) {
    if (!v) return 0;
    if (!px_value_is_const(v) || !v->data)
        return px_lower_error(
            d, n,
            "%s ('%s') is computed at run time; the code generator needs it to be "
            "a compile-time constant",
            what, v->name);
    if (!px_dtype_is_int(v->dtype))
        return px_lower_error(d, n, "%s ('%s') has dtype %s, expected an integer type", what,
                              v->name, px_dtype_name(v->dtype));
    int64_t numel = px_tensor_numel(v->data);
    if (numel > cap)
        return px_lower_error(d, n, "%s ('%s') has %lld entries, at most %d are supported", what,
                              v->name, (long long)numel, cap);
    for (int64_t i = 0; i < numel; i++) out[i] = px_tensor_get_i64(v->data, i);
    *count = (int)numel;
    return 1;
}

int px_ltn_ints_attr_or_input(const px_node *n, const char *attr, int input, const char *what,
                              int64_t *out, int cap, int *count, px_diag *d) {
    if (attr && px_node_attr(n, attr)) {
        int c = 0;
        const int64_t *v = px_attr_ints(n, attr, &c);
        if (c > cap)
            return px_lower_error(d, n, "attribute '%s' has %d entries, at most %d are supported",
                                  attr, c, cap);
        if (c) memcpy(out, v, (size_t)c * sizeof *out);
        *count = c;
        return 1;
    }
    return px_ltn_const_ints(n, px_lower_in(n, input), what, out, cap, count, d);
}

int px_ltn_axis(const px_node *n, int64_t axis, int rank, const char *what, int *out, px_diag *d) {
    if (axis < -rank || axis >= rank)
        return px_lower_error(d, n, "%s %lld is out of range for rank %d", what, (long long)axis,
                              rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return 0;
}

void px_ltn_name(px_kcall *k, const px_node *n) {
    const char *name = n->name;
    if (!name[0] && n->n_outputs > 0 && n->outputs[0]) name = n->outputs[0]->name;
    size_t len = strlen(name);
    if (len > 200) len = 200; /* messages only need to identify the node */
    px_kc_i64(k, (int64_t)len);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = 0;
        for (size_t b = 0; b < 8 && i + b < len; b++)
            w |= (uint64_t)(unsigned char)name[i + b] << (8 * b);
        px_kc_i64(k, (int64_t)w);
    }
}

int px_ltn_scalar_bits(px_dtype dtype, double value, int64_t *bits) {
    if (px_dtype_size(dtype) == 0 || px_dtype_size(dtype) > 8) return -1;
    px_tensor t = {0};
    uint64_t storage = 0;
    t.dtype = dtype;
    t.shape = px_shape_scalar();
    t.nbytes = px_dtype_size(dtype);
    t.data = &storage;
    t.storage = PX_STORAGE_BORROWED;
    if (px_dtype_is_float(dtype) || dtype == PX_BOOL)
        px_tensor_set_f64(&t, 0, value);
    else
        px_tensor_set_i64(&t, 0, (int64_t)value);
    *bits = px_ltn_tensor_bits(&t);
    return 0;
}

int64_t px_ltn_tensor_bits(const px_tensor *t) {
    uint64_t w = 0;
    size_t es = px_dtype_size(t->dtype);
    const unsigned char *b = t->data;
    if (es > 8 || px_tensor_numel(t) < 1) return 0;
    for (size_t i = 0; i < es; i++) w |= (uint64_t)b[i] << (8 * i);
    return (int64_t)w;
}

int px_ltn_dim_error(const px_node *n, const char *what, const px_value *v, int64_t want_dim,
                     int axis, px_diag *d) {
    char s[128];
    return px_lower_error(d, n, "%s '%s' has shape %s, expected dim %d to be %lld", what, v->name,
                          px_shape_str(&v->shape, s, sizeof s), axis, (long long)want_dim);
}
