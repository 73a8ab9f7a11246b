/* Shape functions of the ai.parallax backward ops made by autodiff.
 *
 * GatherGrad(dY, indices) attr rows -> (unique int64 [K], values [K, row...],
 *   count int64 []) with K = numel(indices) and row = dY's dims after the
 *   first rank(indices): the row set of a Gather(table, indices) on axis 0.
 * SoftmaxCrossEntropyLossGrad / NegativeLogLikelihoodLossGrad
 *   (dLoss, X, labels[, weights[, denominator]]) attrs reduction, ignore_index
 *   -> dX like X.
 * GatherGradDense(dY, indices) attrs axis, shape -> dX of the given shape
 *   (the data's): the dense gradient of Gather(data, indices, axis). */
#include "shape_util.h"

#include <string.h>

int px_shape_gather_grad(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *dy, *idx;
    if (px_su_arity(n, 2, 2, d) || px_su_need(n, 0, "dY", d, &dy) ||
        px_su_need(n, 1, "indices", d, &idx))
        return -1;
    if (px_su_want_float(n, d, dy, "dY") || px_su_want_int(n, d, idx, "indices")) return -1;
    if (px_attr_int(n, "rows", -1) < 0)
        return px_su_error(d, n, "needs the attribute 'rows' (rows of the table)");
    if (n->n_outputs != 3)
        return px_su_error(d, n, "has 3 outputs (indices, values, count), not %d", n->n_outputs);
    if (dy->shape.rank < 0 || idx->shape.rank < 0) return 0;
    if (dy->shape.rank < idx->shape.rank)
        return px_su_error(d, n, "dY has rank %d, below the indices' rank %d", dy->shape.rank,
                           idx->shape.rank);
    int64_t k = px_shape_numel(&idx->shape);
    px_shape ks = px_su_unknown_rank(1),
             vs = px_su_unknown_rank(1 + dy->shape.rank - idx->shape.rank);
    if (k >= 0) {
        px_su_set_dim(&ks, 0, k);
        px_su_set_dim(&vs, 0, k);
    }
    for (int i = idx->shape.rank; i < dy->shape.rank; i++)
        px_su_copy_dim(&vs, 1 + i - idx->shape.rank, &dy->shape, i);
    px_shape sc = px_shape_scalar();
    return px_su_set(n, 0, PX_I64, &ks, d) || px_su_set(n, 1, dy->dtype, &vs, d) ||
           px_su_set(n, 2, PX_I64, &sc, d);
}

int px_shape_loss_grad(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *dl, *x, *lab;
    if (px_su_arity(n, 3, 5, d) || px_su_need(n, 0, "dLoss", d, &dl) ||
        px_su_need(n, 1, "X", d, &x) || px_su_need(n, 2, "labels", d, &lab) ||
        px_su_check_denominator(n, 4, d))
        return -1;
    if (px_su_want_float(n, d, x, "X") || px_su_want_int(n, d, lab, "labels") ||
        px_su_same_dtype(n, d, dl, x))
        return -1;
    const char *red = px_attr_string(n, "reduction", "mean");
    if (strcmp(red, "mean") && strcmp(red, "sum") && strcmp(red, "none"))
        return px_su_error(d, n, "reduction '%s' is not mean, sum or none", red);
    return px_su_set(n, 0, x->dtype, &x->shape, d);
}

/* The inputs (dY, indices) and attributes (shape, axis) of the gradients
 * that scatter dY into zeros shaped like the gathered data (GatherGradDense,
 * GatherElementsGrad), checked. */
int px_su_scatter_grad_args(px_node *n, px_diag *d, px_value **dy_out, px_value **idx_out,
                            const int64_t **dims_out, int *rank_out, int64_t *axis_out) {
    px_value *dy, *idx;
    if (px_su_arity(n, 2, 2, d) || px_su_need(n, 0, "dY", d, &dy) ||
        px_su_need(n, 1, "indices", d, &idx))
        return -1;
    if (px_su_want_float(n, d, dy, "dY") || px_su_want_int(n, d, idx, "indices")) return -1;
    int rank = 0;
    const int64_t *dims = px_attr_ints(n, "shape", &rank);
    int64_t axis = px_attr_int(n, "axis", 0);
    if (!dims || rank < 1 || rank > PX_MAX_RANK)
        return px_su_error(d, n, "needs the attribute 'shape' (the gathered data's shape)");
    if (axis < 0 || axis >= rank)
        return px_su_error(d, n, "axis %lld out of range for rank %d", (long long)axis, rank);
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0) return px_su_error(d, n, "shape has a negative dim");
    *dy_out = dy;
    *idx_out = idx;
    *dims_out = dims;
    *rank_out = rank;
    *axis_out = axis;
    return 0;
}

int px_shape_gather_grad_dense(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *dy, *idx;
    const int64_t *dims;
    int rank;
    int64_t axis;
    if (px_su_scatter_grad_args(n, d, &dy, &idx, &dims, &rank, &axis)) return -1;
    if (dy->shape.rank >= 0 && idx->shape.rank >= 0 && dy->shape.rank != rank - 1 + idx->shape.rank)
        return px_su_error(d, n, "dY has rank %d, expected %d", dy->shape.rank,
                           rank - 1 + idx->shape.rank);
    px_shape s = px_shape_make(rank, dims);
    return px_su_set(n, 0, dy->dtype, &s, d);
}

/* ConvGradInput(dY, W), ConvGradWeight(dY, X), MaxPoolGrad(dY, X),
 * AveragePoolGrad(dY): attrs kernel_shape, strides, dilations, pads (explicit
 * begin and end), group (conv), count_include_pad (AveragePool) and shape
 * (the output's shape; absent for MaxPoolGrad, whose dX is like X). */
int px_shape_window_grad(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *dy, *other = NULL;
    int two = n->op != PX_OP_AveragePoolGrad;
    if (px_su_arity(n, two ? 2 : 1, two ? 2 : 1, d) || px_su_need(n, 0, "dY", d, &dy) ||
        (two && px_su_need(n, 1, n->op == PX_OP_ConvGradInput ? "W" : "X", d, &other)))
        return -1;
    if (px_su_want_float(n, d, dy, "dY") || (other && px_su_same_dtype(n, d, dy, other))) return -1;
    if (n->op == PX_OP_MaxPoolGrad) return px_su_set(n, 0, dy->dtype, &other->shape, d);
    int rank = 0;
    const int64_t *dims = px_attr_ints(n, "shape", &rank);
    if (!dims || rank < 3 || rank > PX_MAX_RANK)
        return px_su_error(d, n, "needs the attribute 'shape' (the output's shape, rank >= 3)");
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0) return px_su_error(d, n, "shape has a negative dim");
    if (dy->shape.rank >= 0 && dy->shape.rank != rank)
        return px_su_error(d, n, "dY has rank %d, the output %d", dy->shape.rank, rank);
    px_shape s = px_shape_make(rank, dims);
    return px_su_set(n, 0, dy->dtype, &s, d);
}

/* BatchNormalizationGrad(dY, X, scale) attr epsilon -> (dX like X, dScale
 * and dB like scale): the gradient of a training-mode BatchNormalization
 * over N and the spatial dims (passes/grad_conv.c). */
int px_shape_batchnorm_grad(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *dy, *x, *scale;
    if (px_su_arity(n, 3, 3, d) || px_su_need(n, 0, "dY", d, &dy) || px_su_need(n, 1, "X", d, &x) ||
        px_su_need(n, 2, "scale", d, &scale))
        return -1;
    if (px_su_want_float(n, d, dy, "dY") || px_su_same_dtype(n, d, dy, x) ||
        px_su_same_dtype(n, d, dy, scale))
        return -1;
    if (n->n_outputs > 3)
        return px_su_error(d, n, "has at most 3 outputs (dX, dScale, dB), not %d", n->n_outputs);
    if (x->shape.rank >= 0 && x->shape.rank < 2)
        return px_su_error(d, n, "X must have rank >= 2, has %d", x->shape.rank);
    return px_su_set(n, 0, x->dtype, &x->shape, d) || px_su_set(n, 1, x->dtype, &scale->shape, d) ||
                   px_su_set(n, 2, x->dtype, &scale->shape, d)
               ? -1
               : 0;
}
