/* Lowerings of the ai.parallax segment reductions (ir/shape_segment.c):
 * SegmentReduce -> px_k_segment_reduce, SegmentReduceGrad ->
 * px_k_segment_reduce_grad (runtime/kernels/embedding_bag.c documents buf
 * and p). */
#include "lower.h"
#include "segment_reduce.h"

int px_lower_segment_reduce(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    int grad = n->op == PX_OP_SegmentReduceGrad, base = grad ? 1 : 0;
    const px_value *dy = grad ? px_lower_in(n, 0) : NULL, *x = px_lower_in(n, base),
                   *starts = px_lower_in(n, base + 1), *ends = px_lower_in(n, base + 2),
                   *y = px_lower_out(n, 0);
    if (!x || !starts || !ends || !y || (grad && !dy))
        return px_lower_error(d, n, "needs its %d inputs and output 0", 3 + base);
    if (x->dtype != PX_F32 && x->dtype != PX_F64)
        return px_lower_error(d, n, "data '%s' has dtype %s; the kernel supports float and double",
                              x->name, px_dtype_name(x->dtype));
    if (starts->dtype != ends->dtype || (starts->dtype != PX_I64 && starts->dtype != PX_I32))
        return px_lower_error(d, n, "starts '%s' and ends '%s' must both be int32 or int64",
                              starts->name, ends->name);
    if (!px_shape_is_static(&x->shape) || x->shape.rank < 1 || !px_shape_is_static(&y->shape) ||
        !px_shape_is_static(&ends->shape) || !px_shape_is_static(&starts->shape))
        return px_lower_error(d, n, "needs static shapes");
    int mode = px_segment_mode(n);
    if (mode < 0) return px_lower_error(d, n, "unknown mode '%s'", px_attr_string(n, "mode", ""));
    int64_t rows = x->shape.dims[0], segments = px_shape_numel(&ends->shape), row = 1;
    for (int i = 1; i < x->shape.rank; i++) row *= x->shape.dims[i];
    if (px_shape_numel(&starts->shape) < segments)
        return px_lower_error(d, n, "starts '%s' is shorter than ends '%s'", starts->name,
                              ends->name);
    px_kc_set_kernel(k, grad ? "px_k_segment_reduce_grad" : "px_k_segment_reduce");
    if (grad) px_kc_buf(k, dy);
    px_kc_buf(k, x);
    px_kc_buf(k, starts);
    px_kc_buf(k, ends);
    px_kc_buf(k, y);
    px_kc_i64(k, x->dtype);
    px_kc_i64(k, mode);
    px_kc_i64(k, starts->dtype);
    px_kc_i64(k, rows);
    px_kc_i64(k, segments);
    px_kc_i64(k, row);
    /* Bounds made from EmbeddingBag offsets are checked by the forward
     * kernel (the gradient runs after it, on the same bounds). */
    px_kc_i64(k, !grad && px_attr_int(n, "offsets", 0));
    return 0;
}
