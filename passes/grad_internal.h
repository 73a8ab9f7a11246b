/* Shared state and helpers of the autodiff pass (autodiff.c) and its
 * gradient rules (grad_*.c). A rule reads the gradients of a node's outputs
 * and adds gradient contributions to the node's inputs with px_ad_accum; it
 * builds the backward nodes with px_ad_op, which names them
 * "grad/<forward node>/<op>" and infers their shapes at once so every new
 * value has a static shape. */
#ifndef PX_GRAD_INTERNAL_H
#define PX_GRAD_INTERNAL_H

#include "autodiff.h"
#include "graph.h"

/* One Gather use of a sparse variable: its output gradient and indices. */
typedef struct px_ad_gather {
    px_value *dy, *indices;
    const px_node *node;
} px_ad_gather;

typedef struct px_ad {
    px_graph *g;
    px_diag *d;
    int n_fwd_values;       /* values that existed before the pass: the arrays below */
    px_value **grad;        /* accumulated gradient per forward value id, or NULL */
    char *on_path;          /* 1: depends on a trainable variable and reaches the loss */
    char *sparse;           /* 1: a sparse variable (design.md §4) */
    px_ad_gather **gathers; /* per sparse variable id: its Gather uses */
    int *n_gathers;
    const px_node *cur;        /* node whose gradient is being built (names, messages) */
    const px_model_meta *meta; /* padding_idx rows (model_meta.h), or NULL */
    /* px_ad_ints' constants by contents (open addressing, NULL: empty):
     * one constant for each list of ints, however many nodes read it */
    px_value **ints;
    size_t ints_cap, ints_count;
} px_ad;

/* A gradient rule: dy[i] is the gradient of output i (NULL: none). */
typedef int px_grad_rule(px_ad *a, px_node *n, px_value *const *dy);
typedef px_grad_rule *px_grad_fn;

/* px_grad_<grad> for every rule ops.def's grad column names, defined in
 * passes/grad_*.c. */
#define OP(name, domain, flags, sig, shape, grad, lower, eval)                                     \
    PX_OP_RULE_DECLARE(px_grad_rule, px_grad_, grad)
#include "ops.def"
#undef OP

/* The gradient rule of op, or NULL when it has none (autodiff.c). */
px_grad_fn px_grad_rule_for(px_op op);

/* 1 when input i of n needs a gradient (on the path, float). */
int px_ad_wants(const px_ad *a, const px_node *n, int i);
/* Adds g to the gradient of input i of n (if it wants one), reducing a
 * broadcast g back to the input's shape first. Returns 0 or -1. */
int px_ad_accum(px_ad *a, const px_node *n, int i, px_value *g);
/* The same for a gradient that is not shaped like its input (a masked
 * weight's compact gradient): added as it is, never reduced or reshaped. */
int px_ad_accum_as_is(px_ad *a, const px_node *n, int i, px_value *g);

/* A backward node of op (domain "" unless given) with the given inputs and
 * n_out outputs, not yet shape-inferred: set attributes, then px_ad_done. */
px_node *px_ad_op(px_ad *a, const char *op, const char *domain, int n_in, px_value *const *in,
                  int n_out);
/* Infers n's output shapes; returns output 0, or NULL on error. */
px_value *px_ad_done(px_ad *a, px_node *n);
/* One-output node without attributes, inferred at once. */
px_value *px_ad_1(px_ad *a, const char *op, px_value *x);
px_value *px_ad_2(px_ad *a, const char *op, px_value *x, px_value *y);
/* A scalar constant of dtype dt, and a 1-D int64 constant. */
px_value *px_ad_scalar(px_ad *a, px_dtype dt, double v);
px_value *px_ad_ints(px_ad *a, int n, const int64_t *v);
/* x reshaped to shape s (static). */
px_value *px_ad_reshape(px_ad *a, px_value *x, const px_shape *s);
/* ReduceSum of x over axes, keepdims given (axes as attribute or input by opset). */
px_value *px_ad_reduce_sum(px_ad *a, px_value *x, int n_axes, const int64_t *axes, int keepdims);
/* v (dy or y of reduction n, shaped like n's output) reshaped to the
 * keepdims form, broadcastable to n's input; *count gets the number of
 * elements each output reduces (passes/grad_tensor.c). NULL on error. */
px_value *px_ad_keepdims(px_ad *a, px_node *n, px_value *v, int64_t *count);
/* The mean of x over axes (keepdims), count elements each: ReduceSum
 * times 1/count. */
px_value *px_ad_mean_keep(px_ad *a, px_value *x, int n_axes, const int64_t *axes, double count);
/* A normalization over axes (count elements each), recomputed from x:
 * xhat = (x - mean) * rstd with rstd = 1 / sqrt(var + eps) (biased
 * variance); and back, the gradient of x for g = dL/dxhat:
 * rstd * (g - mean(g) - xhat * mean(g * xhat)) (grad_normalize.c). */
typedef struct px_ad_norm {
    px_value *xhat, *rstd;
    int n_axes;
    int64_t axes[PX_MAX_RANK];
    double count;
} px_ad_norm;
px_ad_norm px_ad_normalize(px_ad *a, px_value *x, int n_axes, const int64_t *axes, double count,
                           double eps);
px_value *px_ad_normalize_grad(px_ad *a, const px_ad_norm *nm, px_value *g);
/* Transpose with perm. */
px_value *px_ad_transpose(px_ad *a, px_value *x, int rank, const int64_t *perm);
/* Records "gradient of node 'X' (Op): message" and returns -1. */
int px_ad_error(px_ad *a, const px_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
