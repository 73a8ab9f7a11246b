/* Lowering of TopK to px_k_topk (runtime/kernels/topk.c documents its
 * buffers and parameters; the order here is the same). K must have folded
 * to a constant: shape inference then gave Values its static size along
 * axis, which the kernel reads as K. */
#include "lower.h"

int px_lower_topk(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *x = px_lower_in(n, 0), *kv = px_lower_in(n, 1), *v = px_lower_out(n, 0),
                   *ix = px_lower_out(n, 1);
    if (kv && !(px_value_is_const(kv) && kv->data))
        return px_lower_error(d, n,
                              "the code generator does not support a run-time K ('%s'): K sets "
                              "the output shape, so it must fold to a constant",
                              kv->name);
    if (!x || !v || !ix) return px_lower_error(d, n, "needs input X and outputs Values, Indices");
    char s[128];
    const px_value *io[3] = {x, v, ix};
    for (int i = 0; i < 3; i++)
        if (!px_shape_is_static(&io[i]->shape))
            return px_lower_error(d, n, "'%s' has no static shape (%s)", io[i]->name,
                                  px_shape_str(&io[i]->shape, s, sizeof s));
    if (!px_dtype_is_float(x->dtype) && !px_dtype_is_int(x->dtype))
        return px_lower_error(d, n, "the code generator does not support input '%s' of dtype %s",
                              x->name, px_dtype_name(x->dtype));
    if (ix->dtype != PX_I64 || v->dtype != x->dtype)
        return px_lower_error(d, n, "outputs must be Values of X's dtype and int64 Indices");
    int rank = x->shape.rank;
    int64_t axis = px_attr_int(n, "axis", -1);
    if (rank < 1 || axis < -rank || axis >= rank)
        return px_lower_error(d, n, "axis %lld is out of range for rank %d", (long long)axis, rank);
    px_kc_set_kernel(k, "px_k_topk");
    px_kc_buf(k, x);
    px_kc_buf(k, v);
    px_kc_buf(k, ix);
    px_kc_tensor(k, x);
    px_kc_tensor(k, v);
    px_kc_i64(k, axis < 0 ? axis + rank : axis);
    px_kc_i64(k, px_attr_int(n, "largest", 1) != 0);
    return 0;
}
