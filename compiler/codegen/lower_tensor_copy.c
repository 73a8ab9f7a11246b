/* Lowerings of the tensor ops that copy or generate whole tensors:
 * Identity, Reshape, Flatten, Squeeze, Unsqueeze (one shared copy kernel:
 * their outputs hold the input's bytes, only the static shape differs),
 * Dropout at inference, Shape, Size, Constant, ConstantOfShape, EyeLike,
 * Range, Expand and Tile. */
#include "lower_tensor_internal.h"

#include <string.h>

/* px_k_copy — buf: [in, out]; p: in tensor, out tensor. */
int px_lower_copy(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *in = px_lower_in(n, 0), *out = px_lower_out(n, 0);
    if (px_ltn_check(n, in, "input 'data'", d) || px_ltn_check(n, out, "output", d) ||
        px_ltn_same_dtype(n, in, out, d))
        return -1;
    if (px_shape_numel(&in->shape) != px_shape_numel(&out->shape)) {
        char a[128], b[128];
        return px_lower_error(d, n, "output '%s' of shape %s does not hold the %s input '%s'",
                              out->name, px_shape_str(&out->shape, a, sizeof a),
                              px_shape_str(&in->shape, b, sizeof b), in->name);
    }
    px_kc_set_kernel(k, "px_k_copy");
    px_kc_buf(k, in);
    px_kc_buf(k, out);
    px_kc_tensor(k, in);
    px_kc_tensor(k, out);
    return 0;
}

/* Dropout's ratio: attribute before opset 12, optional constant input after
 * (default 0.5 either way). */
static int dropout_ratio(const px_node *n, double *ratio, px_diag *d) {
    *ratio = px_attr_float(n, "ratio", 0.5f);
    const px_value *r = px_lower_in(n, 1);
    if (!r) return 0;
    if (!px_value_is_const(r) || !r->data || px_tensor_numel(r->data) != 1 ||
        !px_dtype_is_float(r->dtype))
        return px_lower_error(d, n,
                              "input 'ratio' ('%s') must be a constant float scalar in training "
                              "mode",
                              r->name);
    *ratio = px_tensor_get_f64(r->data, 0);
    return 0;
}

/* Dropout. At inference (opset >= 7 without training_mode, or with a
 * constant false one) it is the identity and the optional mask is all true;
 * training mode with ratio 0 is the identity too. Training mode with a
 * positive ratio needs random numbers, which inference programs do not have.
 * px_k_dropout — buf: [in, out, mask or NULL]; p: in tensor, out tensor,
 * mask tensor (0, 0 when absent). */
int px_lower_dropout(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    const px_value *in = px_lower_in(n, 0), *out = px_lower_out(n, 0), *mask = px_lower_out(n, 1);
    if (px_ltn_check(n, in, "input 'data'", d) || px_ltn_check(n, out, "output", d) ||
        px_ltn_same_dtype(n, in, out, d) || (mask && px_ltn_check(n, mask, "output 'mask'", d)))
        return -1;
    if (px_lower_opset(g) < 7 && px_attr_int(n, "is_test", 0) == 0)
        return px_lower_error(d, n,
                              "Dropout before opset 7 without is_test=1 is training-mode Dropout; "
                              "training-mode Dropout with ratio>0 needs a seeded generator, "
                              "which only training programs have (compile --infer runs Dropout "
                              "as the identity, as model.eval() does)");
    const px_value *tm = px_lower_in(n, 2);
    int training = 0;
    if (tm) {
        if (!px_value_is_const(tm) || !tm->data || px_tensor_numel(tm->data) != 1)
            return px_lower_error(d, n,
                                  "input 'training_mode' ('%s') is computed at run time; the code "
                                  "generator needs a constant (training-mode Dropout with ratio>0 "
                                  "needs a seeded generator, which only training programs have)",
                                  tm->name);
        training = px_tensor_get_i64(tm->data, 0) != 0;
    }
    if (training) {
        double ratio;
        if (dropout_ratio(n, &ratio, d)) return -1;
        if (ratio > 0)
            return px_lower_error(d, n,
                                  "training-mode Dropout with ratio>0 needs a seeded generator, "
                                  "which only training programs have (compile --infer runs "
                                  "Dropout as the identity, as model.eval() does)");
    }
    if (mask && px_shape_numel(&mask->shape) != px_shape_numel(&out->shape))
        return px_lower_error(d, n, "output 'mask' ('%s') does not match the output's size",
                              mask->name);
    px_kc_set_kernel(k, "px_k_dropout");
    px_kc_buf(k, in);
    px_kc_buf(k, out);
    px_kc_buf(k, mask);
    px_kc_tensor(k, in);
    px_kc_tensor(k, out);
    if (mask) {
        px_kc_tensor(k, mask);
    } else {
        px_kc_i64(k, 0);
        px_kc_i64(k, 0);
    }
    return 0;
}

/* Emits px_k_const writing nbytes from data into out.
 * px_k_const — buf: [out]; p: out tensor, nbytes, ceil(nbytes/8) words. */
static int emit_const(const px_node *n, const px_value *out, const void *data, size_t nbytes,
                      px_kcall *k, px_diag *d) {
    size_t want = (size_t)px_shape_numel(&out->shape) * px_dtype_size(out->dtype);
    if (nbytes != want)
        return px_lower_error(d, n, "the value has %zu bytes but output '%s' needs %zu", nbytes,
                              out->name, want);
    px_kc_set_kernel(k, "px_k_const");
    px_kc_buf(k, out);
    px_kc_tensor(k, out);
    px_kc_i64(k, (int64_t)nbytes);
    const unsigned char *b = data;
    for (size_t i = 0; i < nbytes; i += 8) {
        uint64_t w = 0;
        for (size_t j = 0; j < 8 && i + j < nbytes; j++) w |= (uint64_t)b[i + j] << (8 * j);
        px_kc_i64(k, (int64_t)w);
    }
    return 0;
}

/* Shape (start/end attributes from opset 15): the static dims of the input. */
int px_lower_shape(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *in = px_lower_in(n, 0), *out = px_lower_out(n, 0);
    if (!in || !px_shape_is_static(&in->shape))
        return px_lower_error(d, n, "the input's shape is not static");
    if (px_ltn_check(n, out, "output", d)) return -1;
    if (out->dtype != PX_I64) return px_lower_error(d, n, "output '%s' must be int64", out->name);
    int64_t r = in->shape.rank;
    int64_t start = px_attr_int(n, "start", 0), end = px_attr_int(n, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    if (end < start) end = start;
    return emit_const(n, out, in->shape.dims + start, (size_t)(end - start) * sizeof(int64_t), k,
                      d);
}

/* Size: the static element count of the input. */
int px_lower_size(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *in = px_lower_in(n, 0), *out = px_lower_out(n, 0);
    if (!in || !px_shape_is_static(&in->shape))
        return px_lower_error(d, n, "the input's shape is not static");
    if (px_ltn_check(n, out, "output", d)) return -1;
    if (out->dtype != PX_I64) return px_lower_error(d, n, "output '%s' must be int64", out->name);
    int64_t numel = px_shape_numel(&in->shape);
    return emit_const(n, out, &numel, sizeof numel, k, d);
}

/* Constant (usually folded away before lowering): the attribute's bytes. */
int px_lower_constant(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *out = px_lower_out(n, 0);
    if (px_ltn_check(n, out, "output", d)) return -1;
    const px_tensor *t = px_attr_tensor(n, "value");
    if (!t) t = px_attr_tensor(n, "sparse_value");
    if (t) {
        if (t->dtype != out->dtype)
            return px_lower_error(d, n, "attribute 'value' is %s but output '%s' is %s",
                                  px_dtype_name(t->dtype), out->name, px_dtype_name(out->dtype));
        return emit_const(n, out, t->data, t->nbytes, k, d);
    }
    const px_attr *a;
    if ((a = px_node_attr(n, "value_float")) && out->dtype == PX_F32)
        return emit_const(n, out, &a->f, sizeof a->f, k, d);
    if ((a = px_node_attr(n, "value_floats")) && out->dtype == PX_F32)
        return emit_const(n, out, a->floats, (size_t)a->n * sizeof(float), k, d);
    if ((a = px_node_attr(n, "value_int")) && out->dtype == PX_I64)
        return emit_const(n, out, &a->i, sizeof a->i, k, d);
    if ((a = px_node_attr(n, "value_ints")) && out->dtype == PX_I64)
        return emit_const(n, out, a->ints, (size_t)a->n * sizeof(int64_t), k, d);
    return px_lower_error(d, n,
                          "no value attribute the code generator supports (value, sparse_value, "
                          "value_float(s), value_int(s)) matching output dtype %s",
                          px_dtype_name(out->dtype));
}

/* ConstantOfShape: every element is the 'value' attribute's single element
 * (float 0 by default).
 * px_k_fill — buf: [out]; p: out tensor, element bytes in one int64. */
int px_lower_constant_of_shape(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *out = px_lower_out(n, 0);
    if (px_ltn_check(n, out, "output", d)) return -1;
    const px_tensor *t = px_attr_tensor(n, "value");
    int64_t bits = 0;
    if (t) {
        if (px_tensor_numel(t) != 1)
            return px_lower_error(d, n, "attribute 'value' must hold one element, it has %lld",
                                  (long long)px_tensor_numel(t));
        if (t->dtype != out->dtype)
            return px_lower_error(d, n, "attribute 'value' is %s but output '%s' is %s",
                                  px_dtype_name(t->dtype), out->name, px_dtype_name(out->dtype));
    } else if (out->dtype != PX_F32) {
        return px_lower_error(d, n, "without 'value' the output must be float, '%s' is %s",
                              out->name, px_dtype_name(out->dtype));
    }
    if (px_dtype_size(out->dtype) > 8)
        return px_lower_error(d, n, "dtype %s is not supported", px_dtype_name(out->dtype));
    if (t) bits = px_ltn_tensor_bits(t);
    px_kc_set_kernel(k, "px_k_fill");
    px_kc_buf(k, out);
    px_kc_tensor(k, out);
    px_kc_i64(k, bits);
    return 0;
}

/* EyeLike: ones on diagonal k of a 2-D output (dtype from the 'dtype'
 * attribute or the input, resolved by shape inference).
 * px_k_eyelike — buf: [out]; p: out tensor, k. */
int px_lower_eyelike(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *out = px_lower_out(n, 0);
    if (px_ltn_check(n, out, "output", d)) return -1;
    if (out->shape.rank != 2)
        return px_lower_error(d, n, "output '%s' must be 2-D, it has rank %d", out->name,
                              out->shape.rank);
    if (px_dtype_size(out->dtype) > 8)
        return px_lower_error(d, n, "dtype %s is not supported", px_dtype_name(out->dtype));
    px_kc_set_kernel(k, "px_k_eyelike");
    px_kc_buf(k, out);
    px_kc_tensor(k, out);
    px_kc_i64(k, px_attr_int(n, "k", 0));
    return 0;
}

/* Range: start + i*delta for the output's static length (which shape
 * inference derived from constant inputs).
 * px_k_range — buf: [start, delta, out]; p: start, delta, out tensors. */
int px_lower_range(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *start = px_lower_in(n, 0), *delta = px_lower_in(n, 2),
                   *out = px_lower_out(n, 0);
    if (px_ltn_check(n, start, "input 'start'", d) || px_ltn_check(n, delta, "input 'delta'", d) ||
        px_ltn_check(n, out, "output", d))
        return -1;
    if (px_dtype_size(out->dtype) > 8 || out->dtype == PX_BOOL || out->shape.rank != 1)
        return px_lower_error(d, n, "output '%s' must be a 1-D numeric tensor", out->name);
    if (start->dtype != out->dtype || delta->dtype != out->dtype)
        return px_lower_error(d, n, "start, delta and output must share a dtype");
    if (px_shape_numel(&start->shape) != 1 || px_shape_numel(&delta->shape) != 1)
        return px_lower_error(d, n, "start and delta must be scalars");
    px_kc_set_kernel(k, "px_k_range");
    px_kc_buf(k, start);
    px_kc_buf(k, delta);
    px_kc_buf(k, out);
    px_kc_tensor(k, start);
    px_kc_tensor(k, delta);
    px_kc_tensor(k, out);
    return 0;
}

/* Expand: numpy broadcast of the input to the output's static shape.
 * px_k_expand — buf: [in, out]; p: in tensor, out tensor. */
int px_lower_expand(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *in = px_lower_in(n, 0), *out = px_lower_out(n, 0);
    if (px_ltn_check(n, in, "input", d) || px_ltn_check(n, out, "output", d) ||
        px_ltn_same_dtype(n, in, out, d))
        return -1;
    int shift = out->shape.rank - in->shape.rank;
    for (int i = 0; i < in->shape.rank && shift >= 0; i++)
        if (in->shape.dims[i] != 1 && in->shape.dims[i] != out->shape.dims[i + shift]) shift = -1;
    if (shift < 0) {
        char a[128], b[128];
        return px_lower_error(d, n, "input '%s' of shape %s does not broadcast to output shape %s",
                              in->name, px_shape_str(&in->shape, a, sizeof a),
                              px_shape_str(&out->shape, b, sizeof b));
    }
    px_kc_set_kernel(k, "px_k_expand");
    px_kc_buf(k, in);
    px_kc_buf(k, out);
    px_kc_tensor(k, in);
    px_kc_tensor(k, out);
    return 0;
}

/* Tile: the repeats are the output dims over the input dims.
 * px_k_tile — buf: [in, out]; p: in tensor, out tensor. */
int px_lower_tile(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *in = px_lower_in(n, 0), *out = px_lower_out(n, 0);
    if (px_ltn_check(n, in, "input", d) || px_ltn_check(n, out, "output", d) ||
        px_ltn_same_dtype(n, in, out, d))
        return -1;
    int ok = in->shape.rank == out->shape.rank;
    for (int i = 0; ok && i < in->shape.rank; i++) {
        int64_t a = in->shape.dims[i], b = out->shape.dims[i];
        if (a == 0 ? b != 0 : b % a != 0) ok = 0;
    }
    if (!ok) {
        char a[128], b[128];
        return px_lower_error(d, n, "output shape %s is not a tiling of input '%s' of shape %s",
                              px_shape_str(&out->shape, b, sizeof b), in->name,
                              px_shape_str(&in->shape, a, sizeof a));
    }
    px_kc_set_kernel(k, "px_k_tile");
    px_kc_buf(k, in);
    px_kc_buf(k, out);
    px_kc_tensor(k, in);
    px_kc_tensor(k, out);
    return 0;
}
