/* Lowerings of the tensor ops driven by index data: Gather, GatherElements,
 * ScatterElements and OneHot. Index values are only known at run time, so the kernels check
 * their range and report the node by name (packed into the parameters). */
#include "lower_tensor_internal.h"

#include <string.h>

static int check_indices(const px_node *n, const px_value *idx, px_diag *d) {
    if (px_ltn_check(n, idx, "input 'indices'", d)) return -1;
    if (idx->dtype != PX_I32 && idx->dtype != PX_I64)
        return px_lower_error(d, n, "input 'indices' ('%s') has dtype %s; expected int32 or int64",
                              idx->name, px_dtype_name(idx->dtype));
    return 0;
}

/* Gather on any axis (negative normalized here).
 * px_k_gather — buf: [data, indices, out]; p: data, indices, out tensors,
 * axis, node name. */
int px_lower_gather(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *data = px_lower_in(n, 0), *idx = px_lower_in(n, 1), *out = px_lower_out(n, 0);
    if (px_ltn_check(n, data, "input 'data'", d) || check_indices(n, idx, d) ||
        px_ltn_check(n, out, "output", d) || px_ltn_same_dtype(n, data, out, d))
        return -1;
    int r = data->shape.rank, q = idx->shape.rank, axis;
    if (r < 1) return px_lower_error(d, n, "input 'data' must have rank >= 1");
    if (px_ltn_axis(n, px_attr_int(n, "axis", 0), r, "axis", &axis, d)) return -1;
    int ok = out->shape.rank == r + q - 1;
    for (int i = 0, o = 0; ok && i < r; i++) {
        if (i == axis) {
            for (int j = 0; j < q; j++, o++) ok &= out->shape.dims[o] == idx->shape.dims[j];
        } else {
            ok &= out->shape.dims[o++] == data->shape.dims[i];
        }
    }
    if (!ok) return px_lower_error(d, n, "output '%s' has the wrong shape", out->name);
    if (data->shape.dims[axis] == 0 && px_shape_numel(&idx->shape) > 0)
        return px_lower_error(d, n, "gathers from an empty axis %d", axis);
    px_kc_set_kernel(k, "px_k_gather");
    px_kc_buf(k, data);
    px_kc_buf(k, idx);
    px_kc_buf(k, out);
    px_kc_tensor(k, data);
    px_kc_tensor(k, idx);
    px_kc_tensor(k, out);
    px_kc_i64(k, axis);
    px_ltn_name(k, n);
    return 0;
}

/* GatherElements: out has the indices' shape.
 * px_k_gather_elements — buf: [data, indices, out]; p: data, indices, out
 * tensors, axis, node name. */
int px_lower_gather_elements(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *data = px_lower_in(n, 0), *idx = px_lower_in(n, 1), *out = px_lower_out(n, 0);
    if (px_ltn_check(n, data, "input 'data'", d) || check_indices(n, idx, d) ||
        px_ltn_check(n, out, "output", d) || px_ltn_same_dtype(n, data, out, d))
        return -1;
    int r = data->shape.rank, axis;
    if (r < 1 || idx->shape.rank != r)
        return px_lower_error(d, n, "data and indices must have the same rank >= 1");
    if (!px_shape_equal(&idx->shape, &out->shape))
        return px_lower_error(d, n, "output '%s' must have the indices' shape", out->name);
    if (px_ltn_axis(n, px_attr_int(n, "axis", 0), r, "axis", &axis, d)) return -1;
    px_kc_set_kernel(k, "px_k_gather_elements");
    px_kc_buf(k, data);
    px_kc_buf(k, idx);
    px_kc_buf(k, out);
    px_kc_tensor(k, data);
    px_kc_tensor(k, idx);
    px_kc_tensor(k, out);
    px_kc_i64(k, axis);
    px_ltn_name(k, n);
    return 0;
}

/* ScatterElements: out = data, then out[i with its axis coordinate replaced
 * by indices[i]] = updates[i] (reduction none), or combined with it by add,
 * mul, max or min (float, double, int32 and int64 data).
 * px_k_scatter_elements — buf: [data, indices, updates, out]; p: data,
 * indices, out tensors, axis, reduction (0 none, 1 add, 2 mul, 3 max,
 * 4 min), node name. */
int px_lower_scatter_elements(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *data = px_lower_in(n, 0), *idx = px_lower_in(n, 1), *upd = px_lower_in(n, 2),
                   *out = px_lower_out(n, 0);
    if (px_ltn_check(n, data, "input 'data'", d) || check_indices(n, idx, d) ||
        px_ltn_check(n, upd, "input 'updates'", d) || px_ltn_check(n, out, "output", d) ||
        px_ltn_same_dtype(n, data, out, d) || px_ltn_same_dtype(n, upd, out, d))
        return -1;
    static const char *const reductions[5] = {"none", "add", "mul", "max", "min"};
    const char *red = px_attr_string(n, "reduction", "none");
    int64_t code = 0;
    while (code < 5 && strcmp(red, reductions[code])) code++;
    if (code == 5) return px_lower_error(d, n, "unknown reduction '%s'", red);
    if (code && data->dtype != PX_F32 && data->dtype != PX_F64 && data->dtype != PX_I32 &&
        data->dtype != PX_I64)
        return px_lower_error(d, n,
                              "reduction '%s' does not support dtype %s (float, double, "
                              "int32, int64)",
                              red, px_dtype_name(data->dtype));
    int r = data->shape.rank, axis;
    if (r < 1 || idx->shape.rank != r || !px_shape_equal(&idx->shape, &upd->shape))
        return px_lower_error(d, n,
                              "data, indices and updates must have one rank >= 1, indices "
                              "and updates one shape");
    if (!px_shape_equal(&data->shape, &out->shape))
        return px_lower_error(d, n, "output '%s' must have the data's shape", out->name);
    if (px_ltn_axis(n, px_attr_int(n, "axis", 0), r, "axis", &axis, d)) return -1;
    for (int i = 0; i < r; i++)
        if (i != axis && idx->shape.dims[i] > data->shape.dims[i])
            return px_lower_error(d, n, "indices '%s' are larger than data along axis %d",
                                  idx->name, i);
    px_kc_set_kernel(k, "px_k_scatter_elements");
    px_kc_buf(k, data);
    px_kc_buf(k, idx);
    px_kc_buf(k, upd);
    px_kc_buf(k, out);
    px_kc_tensor(k, data);
    px_kc_tensor(k, idx);
    px_kc_tensor(k, out);
    px_kc_i64(k, axis);
    px_kc_i64(k, code);
    px_ltn_name(k, n);
    return 0;
}

/* OneHot: depth is the output's static size along axis (shape inference
 * read it from the constant depth input); values [off, on] are read at run
 * time.
 * px_k_onehot — buf: [indices, values, out]; p: indices, values, out
 * tensors, axis. */
int px_lower_onehot(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *idx = px_lower_in(n, 0), *values = px_lower_in(n, 2), *out = px_lower_out(n, 0);
    if (px_ltn_check(n, idx, "input 'indices'", d) ||
        px_ltn_check(n, values, "input 'values'", d) || px_ltn_check(n, out, "output", d) ||
        px_ltn_same_dtype(n, values, out, d))
        return -1;
    if (idx->dtype == PX_BOOL)
        return px_lower_error(d, n, "input 'indices' ('%s') must be numeric, not bool", idx->name);
    if (px_shape_numel(&values->shape) != 2)
        return px_lower_error(d, n, "input 'values' ('%s') must hold 2 elements [off, on]",
                              values->name);
    int r = out->shape.rank, axis;
    if (r != idx->shape.rank + 1)
        return px_lower_error(d, n, "output '%s' must have the indices' rank plus one", out->name);
    if (px_ltn_axis(n, px_attr_int(n, "axis", -1), r, "axis", &axis, d)) return -1;
    for (int i = 0, j = 0; i < r; i++)
        if (i != axis && out->shape.dims[i] != idx->shape.dims[j++])
            return px_lower_error(d, n, "output '%s' does not match the indices' shape", out->name);
    px_kc_set_kernel(k, "px_k_onehot");
    px_kc_buf(k, idx);
    px_kc_buf(k, values);
    px_kc_buf(k, out);
    px_kc_tensor(k, idx);
    px_kc_tensor(k, values);
    px_kc_tensor(k, out);
    px_kc_i64(k, axis);
    return 0;
}
