/* Lowerings of Slice and Pad, the ops that take a window of their input.
 * Constant starts / pads are resolved here (clamped, one per axis), so the
 * static kernels only walk; lists computed at run time go to the _dyn
 * kernels, which check them against the static output shape. */
#include "lower_tensor_internal.h"
#include "px_enums.h"
#include "px_slice_clamp.h"

#include <stdint.h>
#include <string.h>

/* Checks an index-list input of the dynamic Slice / Pad kernels and writes
 * its descriptor (dtype 0, rank 0 when absent). */
static int dyn_list(const px_node *n, const px_value *v, const char *what, int required,
                    px_kcall *k, px_diag *d) {
    if (!v) {
        if (required) return px_lower_error(d, n, "missing %s", what);
        px_kc_i64(k, 0);
        px_kc_i64(k, 0);
        return 0;
    }
    if (px_ltn_check(n, v, what, d)) return -1;
    if ((v->dtype != PX_I32 && v->dtype != PX_I64) || v->shape.rank != 1)
        return px_lower_error(d, n, "%s ('%s') must be a 1-D int32 or int64 tensor", what, v->name);
    px_kc_tensor(k, v);
    return 0;
}

/* Slice with starts/ends/axes/steps computed at run time: the kernel clamps
 * them and checks they give the static output shape.
 * px_k_slice_dyn — buf: [in, out, starts, ends, axes or NULL, steps or NULL];
 * p: in, out, starts, ends, axes, steps tensors (0, 0 when absent), node name. */
static int lower_slice_dyn(const px_node *n, const px_value *in, const px_value *out, px_kcall *k,
                           px_diag *d) {
    if (out->shape.rank != in->shape.rank)
        return px_lower_error(d, n, "output rank differs from input rank");
    px_kc_set_kernel(k, "px_k_slice_dyn");
    px_kc_buf(k, in);
    px_kc_buf(k, out);
    for (int i = 1; i <= 4; i++) px_kc_buf(k, px_lower_in(n, i));
    px_kc_tensor(k, in);
    px_kc_tensor(k, out);
    if (dyn_list(n, px_lower_in(n, 1), "input 'starts'", 1, k, d) ||
        dyn_list(n, px_lower_in(n, 2), "input 'ends'", 1, k, d) ||
        dyn_list(n, px_lower_in(n, 3), "input 'axes'", 0, k, d) ||
        dyn_list(n, px_lower_in(n, 4), "input 'steps'", 0, k, d))
        return -1;
    px_ltn_name(k, n);
    return 0;
}

/* Slice: starts/ends/axes attributes before opset 10, constant inputs (with
 * steps) after; negative indices count from the end, out-of-range ones clamp.
 * Constant lists are resolved here; computed ones go to px_k_slice_dyn.
 * px_k_slice — buf: [in, out]; p: in tensor, out tensor, starts[rank], steps[rank]. */
int px_lower_slice(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *in = px_lower_in(n, 0), *out = px_lower_out(n, 0);
    if (px_ltn_check(n, in, "input 'data'", d) || px_ltn_check(n, out, "output", d) ||
        px_ltn_same_dtype(n, in, out, d))
        return -1;
    for (int i = 1; i <= 4; i++) {
        const px_value *v = px_lower_in(n, i);
        if (v && !px_value_is_const(v)) return lower_slice_dyn(n, in, out, k, d);
    }
    int r = in->shape.rank;
    int64_t starts[PX_MAX_RANK], ends[PX_MAX_RANK], axes[PX_MAX_RANK], steps[PX_MAX_RANK];
    int ns = 0, ne = 0, na = 0, nt = 0, has;
    if ((has = px_ltn_ints_attr_or_input(n, "starts", 1, "input 'starts'", starts, PX_MAX_RANK, &ns,
                                         d)) <= 0)
        return has < 0 ? -1 : px_lower_error(d, n, "missing 'starts'");
    if ((has = px_ltn_ints_attr_or_input(n, "ends", 2, "input 'ends'", ends, PX_MAX_RANK, &ne,
                                         d)) <= 0)
        return has < 0 ? -1 : px_lower_error(d, n, "missing 'ends'");
    if ((has = px_ltn_ints_attr_or_input(n, "axes", 3, "input 'axes'", axes, PX_MAX_RANK, &na, d)) <
        0)
        return -1;
    if (!has) {
        na = ns;
        for (int i = 0; i < ns; i++) axes[i] = i;
    }
    if ((has = px_ltn_ints_attr_or_input(n, NULL, 4, "input 'steps'", steps, PX_MAX_RANK, &nt, d)) <
        0)
        return -1;
    if (!has) {
        nt = ns;
        for (int i = 0; i < ns; i++) steps[i] = 1;
    }
    if (ne != ns || na != ns || nt != ns)
        return px_lower_error(d, n, "starts, ends, axes and steps have %d, %d, %d and %d entries",
                              ns, ne, na, nt);
    int64_t first[PX_MAX_RANK], step_of[PX_MAX_RANK], len[PX_MAX_RANK];
    int seen[PX_MAX_RANK] = {0};
    for (int a = 0; a < r; a++) {
        first[a] = 0;
        step_of[a] = 1;
        len[a] = in->shape.dims[a];
    }
    for (int i = 0; i < ns; i++) {
        int a;
        if (px_ltn_axis(n, axes[i], r, "axes entry", &a, d)) return -1;
        if (seen[a]++) return px_lower_error(d, n, "axis %d is sliced twice", a);
        if (steps[i] == 0) return px_lower_error(d, n, "steps entry %d is 0", i);
        px_slice_axis(in->shape.dims[a], starts[i], ends[i], steps[i], &first[a], &len[a]);
        step_of[a] = steps[i];
    }
    if (out->shape.rank != r) return px_lower_error(d, n, "output rank differs from input rank");
    for (int a = 0; a < r; a++)
        if (out->shape.dims[a] != len[a]) return px_ltn_dim_error(n, "output", out, len[a], a, d);
    px_kc_set_kernel(k, "px_k_slice");
    px_kc_buf(k, in);
    px_kc_buf(k, out);
    px_kc_tensor(k, in);
    px_kc_tensor(k, out);
    px_kc_ints(k, r, first);
    px_kc_ints(k, r, step_of);
    return 0;
}

/* Pad: mode attribute; pads as attribute ('paddings' in opset 1, 'pads' to
 * opset 10) or constant input; the constant as attribute 'value' (< 11) or
 * optional input (read at run time, so it may be computed); axes input from
 * opset 18; negative pads crop. Pads and axes computed at run time go to
 * px_k_pad_dyn, which checks them against the static output shape.
 * px_k_pad — buf: [in, out, value or NULL]; p: in tensor, out tensor, mode,
 * begins[rank], value bytes in one int64. */
int px_lower_pad(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *in = px_lower_in(n, 0), *out = px_lower_out(n, 0), *cv = px_lower_in(n, 2);
    if (px_ltn_check(n, in, "input 'data'", d) || px_ltn_check(n, out, "output", d) ||
        px_ltn_same_dtype(n, in, out, d) ||
        (cv && px_ltn_check(n, cv, "input 'constant_value'", d)))
        return -1;
    if (px_dtype_size(in->dtype) > 8)
        return px_lower_error(d, n, "dtype %s is not supported", px_dtype_name(in->dtype));
    const char *mode_s = px_attr_string(n, "mode", "constant");
    int mode = px_pad_mode_from_name(mode_s);
    if (mode < 0)
        return px_lower_error(
            d, n, "attribute 'mode' is '%s'; expected constant, reflect, edge or wrap", mode_s);
    int r = in->shape.rank;
    int64_t bits = 0;
    if (!cv && px_ltn_scalar_bits(in->dtype, px_attr_float(n, "value", 0.0f), &bits))
        return px_lower_error(d, n, "dtype %s is not supported", px_dtype_name(in->dtype));
    if (cv && cv->dtype != in->dtype)
        return px_lower_error(d, n, "input 'constant_value' ('%s') is %s but the data is %s",
                              cv->name, px_dtype_name(cv->dtype), px_dtype_name(in->dtype));
    if (cv && px_shape_numel(&cv->shape) != 1)
        return px_lower_error(d, n, "input 'constant_value' ('%s') must hold one element",
                              cv->name);
    const px_value *pv = px_lower_in(n, 1), *av = px_lower_in(n, 3);
    if (!px_node_attr(n, "pads") && !px_node_attr(n, "paddings") && pv &&
        (!px_value_is_const(pv) || (av && !px_value_is_const(av)))) {
        /* px_k_pad_dyn — buf: [in, out, value or NULL, pads, axes or NULL];
         * p: in, out tensors, mode, pads, axes tensors, value bytes, node name */
        if (out->shape.rank != r)
            return px_lower_error(d, n, "output rank differs from input rank");
        px_kc_set_kernel(k, "px_k_pad_dyn");
        px_kc_buf(k, in);
        px_kc_buf(k, out);
        px_kc_buf(k, cv);
        px_kc_buf(k, pv);
        px_kc_buf(k, av);
        px_kc_tensor(k, in);
        px_kc_tensor(k, out);
        px_kc_i64(k, mode);
        if (dyn_list(n, pv, "input 'pads'", 1, k, d) || dyn_list(n, av, "input 'axes'", 0, k, d))
            return -1;
        px_kc_i64(k, bits);
        px_ltn_name(k, n);
        return 0;
    }
    int64_t pads[2 * PX_MAX_RANK], axes[PX_MAX_RANK];
    int np = 0, na = 0, has;
    const char *attr = px_node_attr(n, "paddings") ? "paddings" : "pads";
    if ((has = px_ltn_ints_attr_or_input(n, attr, 1, "input 'pads'", pads, 2 * PX_MAX_RANK, &np,
                                         d)) <= 0)
        return has < 0 ? -1 : px_lower_error(d, n, "missing 'pads'");
    if ((has = px_ltn_const_ints(n, px_lower_in(n, 3), "input 'axes'", axes, PX_MAX_RANK, &na, d)) <
        0)
        return -1;
    if (!has) {
        na = r;
        for (int i = 0; i < r; i++) axes[i] = i;
    }
    if (np != 2 * na)
        return px_lower_error(d, n, "'pads' has %d entries, expected %d (2 per padded axis)", np,
                              2 * na);
    int64_t begin[PX_MAX_RANK] = {0}, end[PX_MAX_RANK] = {0};
    int seen[PX_MAX_RANK] = {0};
    for (int i = 0; i < na; i++) {
        int a;
        if (px_ltn_axis(n, axes[i], r, "axes entry", &a, d)) return -1;
        if (seen[a]++) return px_lower_error(d, n, "axis %d is padded twice", a);
        begin[a] = pads[i];
        end[a] = pads[i + na];
    }
    if (out->shape.rank != r) return px_lower_error(d, n, "output rank differs from input rank");
    for (int a = 0; a < r; a++) {
        int64_t dim = in->shape.dims[a];
        if (out->shape.dims[a] != dim + begin[a] + end[a])
            return px_ltn_dim_error(n, "output", out, dim + begin[a] + end[a], a, d);
        if (mode != PX_PAD_CONSTANT && dim == 0 && out->shape.dims[a] > 0)
            return px_lower_error(d, n, "mode '%s' cannot pad axis %d of size 0", mode_s, a);
    }
    px_kc_set_kernel(k, "px_k_pad");
    px_kc_buf(k, in);
    px_kc_buf(k, out);
    px_kc_buf(k, cv);
    px_kc_tensor(k, in);
    px_kc_tensor(k, out);
    px_kc_i64(k, mode);
    px_kc_ints(k, r, begin);
    px_kc_i64(k, bits);
    return 0;
}
