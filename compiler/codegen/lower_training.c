/* Lowerings of the ai.onnx.preview.training optimizers Adagrad, Momentum and
 * Adam to px_k_adagrad, px_k_momentum, px_k_adam (runtime/kernels/training.c,
 * whose header comment documents buf and p). Attribute defaults are the
 * ONNX schema's (opset 1 of the domain); Momentum's attributes are required. */
#include "lower.h"
#include "px_enums.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int is_scalar(const px_value *v) {
    return px_shape_is_static(&v->shape) && px_shape_numel(&v->shape) == 1;
}

/* A float attribute, or its default; required ones must be present. */
static int float_attr(const px_node *n, const char *name, int required, float dflt, double *out,
                      px_diag *d) {
    const px_attr *a = px_node_attr(n, name);
    if (!a) {
        if (required) return px_lower_error(d, n, "missing required attribute '%s'", name);
        *out = dflt;
        return 0;
    }
    if (a->kind != PX_ATTR_FLOAT)
        return px_lower_error(d, n, "attribute '%s' must be a float", name);
    *out = a->f;
    return 0;
}

/* v (an input or output of tensor i) matches X_i's dtype and shape. */
static int check_like(const px_node *n, const px_value *v, const px_value *x, const char *what,
                      px_diag *d) {
    char a[256], b[256];
    if (v->dtype != x->dtype)
        return px_lower_error(d, n, "%s '%s' has dtype %s but X '%s' has %s", what, v->name,
                              px_dtype_name(v->dtype), x->name, px_dtype_name(x->dtype));
    if (!px_shape_is_static(&v->shape) || !px_shape_equal(&v->shape, &x->shape))
        return px_lower_error(d, n, "%s '%s' has shape %s but X '%s' has %s", what, v->name,
                              px_shape_str(&v->shape, a, sizeof a), x->name,
                              px_shape_str(&x->shape, b, sizeof b));
    return 0;
}

static int lower_optimizer(const px_node *n, px_kcall *k, px_optim_kind op, px_diag *d) {
    static const char *const kernels[PX_OPTIM_COUNT] = {[PX_OPTIM_ADAGRAD] = "px_k_adagrad",
                                                        [PX_OPTIM_MOMENTUM] = "px_k_momentum",
                                                        [PX_OPTIM_ADAM] = "px_k_adam"};
    int n_states = op == PX_OPTIM_ADAM ? 2 : 1, groups = 2 + n_states;
    if (n->n_inputs < 2 + groups || (n->n_inputs - 2) % groups != 0)
        return px_lower_error(
            d, n, "expects R, T and %d groups of equal size (X, G, state), got %d inputs", groups,
            n->n_inputs);
    int count = (n->n_inputs - 2) / groups;
    if (n->n_outputs != (1 + n_states) * count)
        return px_lower_error(d, n, "updates %d tensors, so it needs %d outputs, has %d", count,
                              (1 + n_states) * count, n->n_outputs);
    int n_bufs = n->n_inputs + n->n_outputs;
    if (n_bufs > PX_KCALL_MAX_BUFS)
        return px_lower_error(
            d, n,
            "updates %d tensors in one node (%d buffers); the kernel call takes at most %d "
            "buffers, so at most %d tensors per %s node",
            count, n_bufs, PX_KCALL_MAX_BUFS, (PX_KCALL_MAX_BUFS - 2) / (groups + 1 + n_states),
            n->op_type);
    const px_value *r = n->inputs[0], *t = n->inputs[1];
    if (!r || !t) return px_lower_error(d, n, "missing input %s", !r ? "R" : "T");
    if ((r->dtype != PX_F32 && r->dtype != PX_F64) || !is_scalar(r))
        return px_lower_error(d, n, "R '%s' must be a float or double scalar (has dtype %s)",
                              r->name, px_dtype_name(r->dtype));
    if (t->dtype != PX_I64 || !is_scalar(t))
        return px_lower_error(d, n, "T '%s' must be an int64 scalar (has dtype %s)", t->name,
                              px_dtype_name(t->dtype));
    for (int i = 0; i < count; i++) {
        const px_value *x = n->inputs[2 + i];
        if (!x) return px_lower_error(d, n, "missing input X%d", i + 1);
        if (x->dtype != PX_F32 && x->dtype != PX_F64)
            return px_lower_error(d, n,
                                  "X '%s' has dtype %s; the %s kernel supports float and double",
                                  x->name, px_dtype_name(x->dtype), n->op_type);
        for (int gi = 1; gi < groups; gi++) {
            const px_value *v = n->inputs[2 + gi * count + i];
            if (!v) return px_lower_error(d, n, "missing input %d", 2 + gi * count + i);
            if (check_like(n, v, x, gi == 1 ? "G" : "state", d)) return -1;
        }
        for (int o = 0; o <= n_states; o++) {
            const px_value *v = n->outputs[o * count + i];
            if (v && check_like(n, v, x, "output", d)) return -1;
        }
    }
    double attrs[5];
    int n_attrs = 0;
    int64_t mode = 0;
    switch (op) {
    case PX_OPTIM_ADAGRAD:
        if (float_attr(n, "decay_factor", 0, 0.0f, &attrs[0], d) ||
            float_attr(n, "epsilon", 0, 1e-6f, &attrs[1], d) ||
            float_attr(n, "norm_coefficient", 0, 0.0f, &attrs[2], d))
            return -1;
        n_attrs = 3;
        break;
    case PX_OPTIM_MOMENTUM: {
        if (float_attr(n, "alpha", 1, 0, &attrs[0], d) ||
            float_attr(n, "beta", 1, 0, &attrs[1], d) ||
            float_attr(n, "norm_coefficient", 1, 0, &attrs[2], d))
            return -1;
        n_attrs = 3;
        const char *m = px_attr_string(n, "mode", NULL);
        if (!m) return px_lower_error(d, n, "missing required string attribute 'mode'");
        if (!strcmp(m, "standard"))
            mode = 0;
        else if (!strcmp(m, "nesterov"))
            mode = 1;
        else
            return px_lower_error(d, n, "attribute 'mode' is '%s'; expected standard or nesterov",
                                  m);
        break;
    }
    case PX_OPTIM_ADAM:
        if (float_attr(n, "alpha", 0, 0.9f, &attrs[0], d) ||
            float_attr(n, "beta", 0, 0.999f, &attrs[1], d) ||
            float_attr(n, "epsilon", 0, 1e-6f, &attrs[2], d) ||
            float_attr(n, "norm_coefficient", 0, 0.0f, &attrs[3], d) ||
            float_attr(n, "norm_coefficient_post", 0, 0.0f, &attrs[4], d))
            return -1;
        n_attrs = 5;
        break;
    case PX_OPTIM_SGD:
    case PX_OPTIM_ADAMW:
    case PX_OPTIM_RMSPROP:
    case PX_OPTIM_COUNT: return px_lower_error(d, n, "internal error: not an ONNX optimizer");
    }
    px_kc_set_kernel(k, kernels[op]);
    for (int i = 0; i < n->n_inputs; i++) px_kc_buf(k, n->inputs[i]);
    for (int i = 0; i < n->n_outputs; i++) px_kc_buf(k, n->outputs[i]);
    px_kc_tensor(k, r);
    px_kc_tensor(k, t);
    for (int i = 0; i < n_attrs; i++) px_kc_f64(k, attrs[i]);
    if (op == PX_OPTIM_MOMENTUM) px_kc_i64(k, mode);
    px_kc_i64(k, count);
    for (int i = 0; i < count; i++) px_kc_tensor(k, n->inputs[2 + i]);
    return 0;
}

int px_lower_adagrad(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    return lower_optimizer(n, k, PX_OPTIM_ADAGRAD, d);
}

int px_lower_momentum(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    return lower_optimizer(n, k, PX_OPTIM_MOMENTUM, d);
}

int px_lower_adam(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    return lower_optimizer(n, k, PX_OPTIM_ADAM, d);
}
