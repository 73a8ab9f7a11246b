/* Helpers shared by the nn lowerings (lower_nn_*.c), which call the kernels
 * of runtime/kernels/nn*.c. */
#include "lower_nn_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const px_dtype px_lnn_float_types[] = {PX_F32, PX_F64, PX_F16, PX_BF16, PX_UNDEFINED};
const px_dtype px_lnn_index_types[] = {PX_I32, PX_I64, PX_UNDEFINED};

int px_lnn_check(const px_node *n, const px_value *v, const char *what, const px_dtype *allowed,
                 px_diag *d) {
    char s[256];
    if (!v) return px_lower_error(d, n, "missing %s", what);
    if (!px_shape_is_static(&v->shape))
        return px_lower_error(d, n, "%s '%s' has shape %s; the code generator needs static shapes",
                              what, v->name, px_shape_str(&v->shape, s, sizeof s));
    for (const px_dtype *t = allowed; *t != PX_UNDEFINED; t++)
        if (v->dtype == *t) return 0;
    size_t len = 0;
    s[0] = 0;
    for (const px_dtype *t = allowed; *t != PX_UNDEFINED && len < sizeof s - 32; t++)
        len += (size_t)snprintf(s + len, sizeof s - len, "%s%s", t == allowed ? "" : ", ",
                                px_dtype_name(*t));
    return px_lower_error(d, n, "%s '%s' has dtype %s, which %s does not support (supported: %s)",
                          what, v->name, px_dtype_name(v->dtype), n->op_type, s);
}

int px_lnn_same_dims(const px_shape *a, const px_shape *b) {
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

void px_lnn_tensor_opt(px_kcall *k, const px_value *v) {
    if (v) {
        px_kc_tensor(k, v);
    } else {
        px_kc_i64(k, 0);
        px_kc_i64(k, 0);
    }
}

int px_lnn_axis_ints(const px_node *n, const char *name, int count, int64_t dflt, int64_t *out,
                     px_diag *d) {
    if (!px_node_attr(n, name)) {
        for (int i = 0; i < count; i++) out[i] = dflt;
        return 0;
    }
    int c = 0;
    const int64_t *v = px_attr_ints(n, name, &c);
    if (c != count)
        return px_lower_error(d, n, "attribute '%s' has %d entries, expected %d", name, c, count);
    memcpy(out, v, (size_t)count * sizeof *out);
    return 0;
}
