/* Lowerings of the reduce family to runtime kernels: Reduce*, ArgMax/ArgMin,
 * and the ops acting along one axis (Softmax, LogSoftmax, Hardmax, CumSum).
 * runtime/kernels/reduce.c documents each kernel's buffers and parameters;
 * the order here is the same. */
#include "lower.h"
#include "lower_matmul_fold.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int is_numeric(px_dtype t) {
    return px_dtype_is_float(t) || px_dtype_is_int(t);
}

/* Input 0 and output 0 exist with static shapes; input 0 is numeric. */
static int check_io(px_diag *d, const px_node *n) {
    char s[128];
    const px_value *x = px_lower_in(n, 0), *y = n->n_outputs ? n->outputs[0] : NULL;
    if (!x || !y) return px_lower_error(d, n, "missing input or output");
    if (!px_shape_is_static(&x->shape))
        return px_lower_error(d, n, "input '%s' has no static shape (%s)", x->name,
                              px_shape_str(&x->shape, s, sizeof s));
    if (!px_shape_is_static(&y->shape))
        return px_lower_error(d, n, "output '%s' has no static shape (%s)", y->name,
                              px_shape_str(&y->shape, s, sizeof s));
    if (!is_numeric(x->dtype))
        return px_lower_error(d, n, "the code generator does not support input '%s' of dtype %s",
                              x->name, px_dtype_name(x->dtype));
    return 0;
}

/* Normalizes axis into [0, rank) (or [0, rank] when allow_end). */
static int norm_axis(px_diag *d, const px_node *n, int64_t axis, int rank, int allow_end,
                     const char *what, int *out) {
    int hi = allow_end ? rank : rank - 1;
    if (axis < -rank || axis > hi)
        return px_lower_error(d, n, "%s %lld is out of range for rank %d", what, (long long)axis,
                              rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return 0;
}

/* ---- Reduce* ---- */

/* The runtime kernel of each Reduce* op. */
static const char *const reduce_kernels[PX_OP_COUNT] = {
    [PX_OP_ReduceL1] = "px_k_reduce_l1",
    [PX_OP_ReduceL2] = "px_k_reduce_l2",
    [PX_OP_ReduceLogSum] = "px_k_reduce_log_sum",
    [PX_OP_ReduceLogSumExp] = "px_k_reduce_log_sum_exp",
    [PX_OP_ReduceMax] = "px_k_reduce_max",
    [PX_OP_ReduceMean] = "px_k_reduce_mean",
    [PX_OP_ReduceMin] = "px_k_reduce_min",
    [PX_OP_ReduceProd] = "px_k_reduce_prod",
    [PX_OP_ReduceSum] = "px_k_reduce_sum",
    [PX_OP_ReduceSumSquare] = "px_k_reduce_sum_square",
};

int px_lower_reduce(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    const char *kernel = reduce_kernels[n->op];
    if (!kernel) return px_lower_error(d, n, "internal error: no reduce kernel for %s", n->op_type);
    if (check_io(d, n)) return -1;
    const px_value *x = n->inputs[0], *y = n->outputs[0];
    int rank = x->shape.rank;

    /* axes: an attribute until the opset that made it an input (13 for
     * ReduceSum, 18 for the others); the node has one or the other */
    const int64_t *axes = NULL;
    int n_axes = 0;
    int64_t buf[PX_MAX_RANK];
    const px_value *av = px_lower_in(n, 1), *runtime_axes = NULL;
    if (av) {
        int64_t count = px_shape_numel(&av->shape);
        if (av->dtype != PX_I64 && av->dtype != PX_I32)
            return px_lower_error(d, n, "axes '%s' must be int32 or int64, it is %s", av->name,
                                  px_dtype_name(av->dtype));
        if (count < 0 || count > PX_MAX_RANK)
            return px_lower_error(d, n, "axes '%s' has %lld entries for a rank-%d input", av->name,
                                  (long long)count, rank);
        if (count == 0) {
            n_axes = 0; /* statically empty, whatever the data */
        } else if (!px_value_is_const(av) || !av->data) {
            /* read at run time; the kernel checks them against the static
             * output shape, which shape inference took from the model */
            runtime_axes = av;
            n_axes = (int)count;
        } else {
            for (int64_t i = 0; i < count; i++) buf[i] = px_tensor_get_i64(av->data, i);
            axes = buf;
            n_axes = (int)count;
        }
    } else {
        axes = px_attr_ints(n, "axes", &n_axes);
    }
    int64_t keepdims = px_attr_int(n, "keepdims", 1);
    int64_t noop = px_attr_int(n, "noop_with_empty_axes", 0);
    (void)g;

    int reduced[PX_MAX_RANK] = {0};
    if (runtime_axes) {
        /* flags come from the data */
    } else if (n_axes == 0) {
        if (!noop)
            for (int i = 0; i < rank; i++) reduced[i] = 1;
    } else {
        for (int i = 0; i < n_axes; i++) {
            int a = 0;
            if (norm_axis(d, n, axes[i], rank, 0, "axis", &a)) return -1;
            if (reduced[a])
                return px_lower_error(d, n, "axis %lld is listed twice", (long long)axes[i]);
            reduced[a] = 1;
        }
    }
    /* the output must be the reduced shape (with or without kept 1s) */
    int64_t expect = 1;
    int out_rank = 0;
    for (int i = 0; i < rank; i++) {
        if (!reduced[i]) expect *= x->shape.dims[i];
        if (!reduced[i] || keepdims) out_rank++;
    }
    if (y->dtype != x->dtype ||
        (!runtime_axes && (px_shape_numel(&y->shape) != expect || y->shape.rank != out_rank)))
        return px_lower_error(d, n, "output '%s' does not match the reduction of input '%s'",
                              y->name, x->name);

    px_gemm_fold f;
    if (px_lmm_fold_reduce(n, &f)) { /* the batch sum of a MatMul: one GEMM */
        px_lmm_emit(&f, y, k);
        return 0;
    }
    px_kc_set_kernel(k, kernel);
    px_kc_buf(k, x);
    px_kc_buf(k, runtime_axes);
    px_kc_buf(k, y);
    px_kc_tensor(k, x);
    px_kc_tensor(k, y);
    for (int i = 0; i < rank; i++) px_kc_i64(k, reduced[i]);
    px_kc_i64(k, keepdims != 0);
    px_kc_i64(k, noop != 0);
    px_kc_i64(k, runtime_axes ? runtime_axes->dtype : 0);
    px_kc_i64(k, runtime_axes ? n_axes : 0);
    return 0;
}

/* ---- ArgMax / ArgMin ---- */

int px_lower_arg(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (check_io(d, n)) return -1;
    const px_value *x = n->inputs[0], *y = n->outputs[0];
    int axis = 0;
    if (norm_axis(d, n, px_attr_int(n, "axis", 0), x->shape.rank, 0, "axis", &axis)) return -1;
    if (y->dtype != PX_I64)
        return px_lower_error(d, n, "output '%s' must be int64, it is %s", y->name,
                              px_dtype_name(y->dtype));
    px_kc_set_kernel(k, n->op == PX_OP_ArgMax ? "px_k_argmax" : "px_k_argmin");
    px_kc_buf(k, x);
    px_kc_buf(k, y);
    px_kc_tensor(k, x);
    px_kc_tensor(k, y);
    px_kc_i64(k, axis);
    px_kc_i64(k, px_attr_int(n, "select_last_index", 0) != 0);
    return 0;
}

/* ---- Softmax / LogSoftmax / Hardmax ---- */

int px_lower_softmax(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    if (check_io(d, n)) return -1;
    const px_value *x = n->inputs[0];
    if (!px_dtype_is_float(x->dtype))
        return px_lower_error(d, n, "input '%s' must be a float tensor, it is %s", x->name,
                              px_dtype_name(x->dtype));
    int rank = x->shape.rank;
    int coerce_2d = px_graph_opset(g, "") < 13; /* "coerce to 2-D at axis" before opset 13 */
    int64_t outer = 1, len = 1, inner = 1;
    if (rank > 0) {
        int axis = 0;
        if (norm_axis(d, n, px_attr_int(n, "axis", coerce_2d ? 1 : -1), rank, coerce_2d, "axis",
                      &axis))
            return -1;
        for (int i = 0; i < rank; i++) {
            int64_t dim = x->shape.dims[i];
            if (i < axis)
                outer *= dim;
            else if (i == axis || coerce_2d)
                len *= dim;
            else
                inner *= dim;
        }
    }
    const char *kernel = n->op == PX_OP_Softmax      ? "px_k_softmax"
                         : n->op == PX_OP_LogSoftmax ? "px_k_log_softmax"
                                                     : "px_k_hardmax";
    px_kc_set_kernel(k, kernel);
    px_kc_buf(k, x);
    px_kc_buf(k, n->outputs[0]);
    px_kc_tensor(k, x);
    px_kc_tensor(k, n->outputs[0]);
    px_kc_i64(k, outer);
    px_kc_i64(k, len);
    px_kc_i64(k, inner);
    return 0;
}

/* ---- CumSum ---- */

int px_lower_cumsum(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (check_io(d, n)) return -1;
    const px_value *x = n->inputs[0], *av = px_lower_in(n, 1);
    switch (x->dtype) {
    case PX_F32:
    case PX_F64:
    case PX_F16:
    case PX_BF16:
    case PX_I32:
    case PX_I64:
    case PX_U32:
    case PX_U64: break;
    default:
        return px_lower_error(d, n, "the code generator does not support input '%s' of dtype %s",
                              x->name, px_dtype_name(x->dtype));
    }
    if (!av) return px_lower_error(d, n, "missing the axis input");
    if ((av->dtype != PX_I32 && av->dtype != PX_I64) || px_shape_numel(&av->shape) != 1)
        return px_lower_error(d, n, "axis '%s' must be an int32 or int64 scalar", av->name);
    if (x->shape.rank == 0) return px_lower_error(d, n, "input '%s' must have rank >= 1", x->name);
    int64_t axis_param;
    const px_value *axis_buf = NULL;
    if (px_value_is_const(av) && av->data) {
        int a = 0;
        if (norm_axis(d, n, px_tensor_get_i64(av->data, 0), x->shape.rank, 0, "axis", &a))
            return -1;
        axis_param = a;
    } else {
        axis_buf = av; /* read at run time; the parameter says its dtype */
        axis_param = av->dtype;
    }
    px_kc_set_kernel(k, "px_k_cumsum");
    px_kc_buf(k, x);
    px_kc_buf(k, axis_buf);
    px_kc_buf(k, n->outputs[0]);
    px_kc_tensor(k, x);
    px_kc_tensor(k, n->outputs[0]);
    px_kc_i64(k, axis_param);
    px_kc_i64(k, px_attr_int(n, "exclusive", 0) != 0);
    px_kc_i64(k, px_attr_int(n, "reverse", 0) != 0);
    return 0;
}
