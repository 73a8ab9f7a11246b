/* Lowerings of the tensor ops that rearrange elements: Transpose, Concat,
 * Split and Trilu (Slice and Pad are in lower_tensor_window.c). */
#include "lower_tensor_internal.h"

#include "lower_matmul_fold.h"

#include <stdint.h>
#include <string.h>

/* Most inputs of a Concat / outputs of a Split: one buffer is the other side. */
#define MAX_PARTS (PX_KCALL_MAX_BUFS - 1)

/* Transpose: perm attribute, reversed axes by default. The swap of a
 * product's last axes is that product computed transposed
 * (lower_matmul_fold.h).
 * px_k_transpose — buf: [in, out]; p: in tensor, out tensor, perm[rank]. */
int px_lower_transpose(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *in = px_lower_in(n, 0), *out = px_lower_out(n, 0);
    if (px_ltn_check(n, in, "input", d) || px_ltn_check(n, out, "output", d) ||
        px_ltn_same_dtype(n, in, out, d))
        return -1;
    int r = in->shape.rank;
    int64_t perm[PX_MAX_RANK];
    int count = r, seen[PX_MAX_RANK] = {0};
    if (px_node_attr(n, "perm")) {
        const int64_t *p = px_attr_ints(n, "perm", &count);
        if (count != r)
            return px_lower_error(d, n, "attribute 'perm' has %d entries for a rank-%d input",
                                  count, r);
        memcpy(perm, p, (size_t)r * sizeof *perm);
    } else {
        for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
    }
    for (int i = 0; i < r; i++) {
        int a;
        if (px_ltn_axis(n, perm[i], r, "perm entry", &a, d)) return -1;
        if (seen[a]++) return px_lower_error(d, n, "attribute 'perm' repeats axis %d", a);
        perm[i] = a;
    }
    if (out->shape.rank != r) return px_lower_error(d, n, "output rank differs from input rank");
    for (int i = 0; i < r; i++)
        if (out->shape.dims[i] != in->shape.dims[perm[i]])
            return px_ltn_dim_error(n, "output", out, in->shape.dims[perm[i]], i, d);
    px_gemm_fold f;
    if (px_lmm_fold_transpose(n, &f)) { /* the transposed product, computed as B^T A^T */
        px_lmm_emit(&f, out, k);
        return 0;
    }
    px_kc_set_kernel(k, "px_k_transpose");
    px_kc_buf(k, in);
    px_kc_buf(k, out);
    px_kc_tensor(k, in);
    px_kc_tensor(k, out);
    px_kc_ints(k, r, perm);
    return 0;
}

/* Concat along axis (default 1 before opset 4, required after).
 * px_k_concat — buf: [in_0..in_{n-1}, out]; p: n, axis, out tensor, in tensors. */
int px_lower_concat(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    const px_value *out = px_lower_out(n, 0);
    if (px_ltn_check(n, out, "output", d)) return -1;
    if (n->n_inputs < 1 || n->n_inputs > MAX_PARTS)
        return px_lower_error(d, n, "%d inputs; the concat kernel takes 1 to %d", n->n_inputs,
                              MAX_PARTS);
    if (!px_node_attr(n, "axis") && px_lower_opset(g) >= 4)
        return px_lower_error(d, n, "missing attribute 'axis'");
    int r = out->shape.rank, axis;
    if (r < 1) return px_lower_error(d, n, "cannot concatenate scalars");
    if (px_ltn_axis(n, px_attr_int(n, "axis", 1), r, "axis", &axis, d)) return -1;
    int64_t total = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const px_value *in = n->inputs[i];
        if (px_ltn_check(n, in, "input", d) || px_ltn_same_dtype(n, in, out, d)) return -1;
        if (in->shape.rank != r)
            return px_lower_error(d, n, "input '%s' has rank %d, the output %d", in->name,
                                  in->shape.rank, r);
        for (int a = 0; a < r; a++)
            if (a != axis && in->shape.dims[a] != out->shape.dims[a])
                return px_ltn_dim_error(n, "input", in, out->shape.dims[a], a, d);
        total += in->shape.dims[axis];
    }
    if (total != out->shape.dims[axis]) return px_ltn_dim_error(n, "output", out, total, axis, d);
    px_kc_set_kernel(k, "px_k_concat");
    for (int i = 0; i < n->n_inputs; i++) px_kc_buf(k, n->inputs[i]);
    px_kc_buf(k, out);
    px_kc_i64(k, n->n_inputs);
    px_kc_i64(k, axis);
    px_kc_tensor(k, out);
    for (int i = 0; i < n->n_inputs; i++) px_kc_tensor(k, n->inputs[i]);
    return 0;
}

/* Split: the part sizes (from the 'split' attribute or input, or
 * num_outputs, or equal parts with a smaller last one) are already the
 * outputs' static dims along axis, so only axis matters here.
 * px_k_split — buf: [in, out_0..out_{n-1}]; p: n, axis, in tensor, out tensors. */
int px_lower_split(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *in = px_lower_in(n, 0);
    if (px_ltn_check(n, in, "input", d)) return -1;
    if (n->n_outputs < 1 || n->n_outputs > MAX_PARTS)
        return px_lower_error(d, n, "%d outputs; the split kernel makes 1 to %d", n->n_outputs,
                              MAX_PARTS);
    int r = in->shape.rank, axis;
    if (r < 1) return px_lower_error(d, n, "cannot split a scalar");
    if (px_ltn_axis(n, px_attr_int(n, "axis", 0), r, "axis", &axis, d)) return -1;
    int64_t total = 0;
    for (int i = 0; i < n->n_outputs; i++) {
        const px_value *out = n->outputs[i];
        if (px_ltn_check(n, out, "output", d) || px_ltn_same_dtype(n, in, out, d)) return -1;
        if (out->shape.rank != r)
            return px_lower_error(d, n, "output '%s' has rank %d, the input %d", out->name,
                                  out->shape.rank, r);
        for (int a = 0; a < r; a++)
            if (a != axis && out->shape.dims[a] != in->shape.dims[a])
                return px_ltn_dim_error(n, "output", out, in->shape.dims[a], a, d);
        total += out->shape.dims[axis];
    }
    if (total != in->shape.dims[axis]) return px_ltn_dim_error(n, "input", in, total, axis, d);
    px_kc_set_kernel(k, "px_k_split");
    px_kc_buf(k, in);
    for (int i = 0; i < n->n_outputs; i++) px_kc_buf(k, n->outputs[i]);
    px_kc_i64(k, n->n_outputs);
    px_kc_i64(k, axis);
    px_kc_tensor(k, in);
    for (int i = 0; i < n->n_outputs; i++) px_kc_tensor(k, n->outputs[i]);
    return 0;
}

/* Trilu: upper attribute (default 1), diagonal offset k as an optional int64
 * scalar input, read at run time.
 * px_k_trilu — buf: [in, k or NULL, out]; p: in tensor, out tensor, upper. */
int px_lower_trilu(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *in = px_lower_in(n, 0), *kv = px_lower_in(n, 1), *out = px_lower_out(n, 0);
    if (px_ltn_check(n, in, "input", d) || px_ltn_check(n, out, "output", d) ||
        px_ltn_same_dtype(n, in, out, d))
        return -1;
    if (in->shape.rank < 2 || !px_shape_equal(&in->shape, &out->shape))
        return px_lower_error(d, n, "input and output must have the same shape of rank >= 2");
    if (kv && (kv->dtype != PX_I64 || px_shape_numel(&kv->shape) != 1))
        return px_lower_error(d, n, "input 'k' ('%s') must be an int64 scalar", kv->name);
    px_kc_set_kernel(k, "px_k_trilu");
    px_kc_buf(k, in);
    px_kc_buf(k, kv);
    px_kc_buf(k, out);
    px_kc_tensor(k, in);
    px_kc_tensor(k, out);
    px_kc_i64(k, px_attr_int(n, "upper", 1) != 0);
    return 0;
}
