/* Lowerings of the elementwise op family to runtime kernels
 * (runtime/kernels/elementwise.c documents each kernel's buffers and
 * parameters; the order here is the same). */
#include "lower.h"
#include "lower_matmul_fold.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The value must exist, have a static shape and a dtype in the classes
 * `accept` (dtype.h) that a kernel holds. */
static int check_value(px_diag *d, const px_node *n, const px_value *v, const char *what,
                       unsigned accept) {
    char s[128];
    if (!v) return px_lower_error(d, n, "missing %s", what);
    if (!px_shape_is_static(&v->shape))
        return px_lower_error(d, n, "%s '%s' has no static shape (%s)", what, v->name,
                              px_shape_str(&v->shape, s, sizeof s));
    if (!(px_dtype_class(v->dtype) & accept & PX_DTC_KERNEL))
        return px_lower_error(d, n, "the code generator does not support %s '%s' of dtype %s", what,
                              v->name, px_dtype_name(v->dtype));
    return 0;
}

/* The first input and the output against the op's dtype signature. */
static int check_io(px_diag *d, const px_node *n) {
    if (n->n_outputs < 1) return px_lower_error(d, n, "has no output");
    if (check_value(d, n, px_lower_in(n, 0), "input", px_op_operand_class(n->op, 0))) return -1;
    return check_value(d, n, n->outputs[0], "output", px_sig_class(px_op_result_letter(n->op)));
}

/* ---- unary ---- */

/* The dtypes each op admits are its signature's in ops.def (ir/op.h). */
typedef struct unary_spec {
    const char *kernel; /* NULL: not a unary op */
    const char *a_name; /* attribute passed as alpha, or NULL */
    double a_dflt;
    const char *b_name; /* attribute passed as beta, or NULL */
    double b_dflt;
} unary_spec;

static const unary_spec unary_specs[PX_OP_COUNT] = {
    [PX_OP_Abs] = {"px_k_abs", NULL, 0, NULL, 0},
    [PX_OP_Acos] = {"px_k_acos", NULL, 0, NULL, 0},
    [PX_OP_Acosh] = {"px_k_acosh", NULL, 0, NULL, 0},
    [PX_OP_Asin] = {"px_k_asin", NULL, 0, NULL, 0},
    [PX_OP_Asinh] = {"px_k_asinh", NULL, 0, NULL, 0},
    [PX_OP_Atan] = {"px_k_atan", NULL, 0, NULL, 0},
    [PX_OP_Atanh] = {"px_k_atanh", NULL, 0, NULL, 0},
    [PX_OP_Ceil] = {"px_k_ceil", NULL, 0, NULL, 0},
    [PX_OP_Celu] = {"px_k_celu", "alpha", 1.0, NULL, 0},
    [PX_OP_Cos] = {"px_k_cos", NULL, 0, NULL, 0},
    [PX_OP_Cosh] = {"px_k_cosh", NULL, 0, NULL, 0},
    [PX_OP_Elu] = {"px_k_elu", "alpha", 1.0, NULL, 0},
    [PX_OP_Erf] = {"px_k_erf", NULL, 0, NULL, 0},
    [PX_OP_Exp] = {"px_k_exp", NULL, 0, NULL, 0},
    [PX_OP_Floor] = {"px_k_floor", NULL, 0, NULL, 0},
    [PX_OP_HardSigmoid] = {"px_k_hard_sigmoid", "alpha", 0.2, "beta", 0.5},
    [PX_OP_HardSwish] = {"px_k_hard_swish", NULL, 0, NULL, 0},
    [PX_OP_LeakyRelu] = {"px_k_leaky_relu", "alpha", 0.01, NULL, 0},
    [PX_OP_Log] = {"px_k_log", NULL, 0, NULL, 0},
    [PX_OP_Mish] = {"px_k_mish", NULL, 0, NULL, 0},
    [PX_OP_Neg] = {"px_k_neg", NULL, 0, NULL, 0},
    [PX_OP_Reciprocal] = {"px_k_reciprocal", NULL, 0, NULL, 0},
    [PX_OP_Relu] = {"px_k_relu", NULL, 0, NULL, 0},
    [PX_OP_Round] = {"px_k_round", NULL, 0, NULL, 0},
    [PX_OP_Selu] = {"px_k_selu", "alpha", 1.67326319217681884765625, "gamma",
                    1.05070102214813232421875},
    [PX_OP_Shrink] = {"px_k_shrink", "lambd", 0.5, "bias", 0.0},
    [PX_OP_Sigmoid] = {"px_k_sigmoid", NULL, 0, NULL, 0},
    [PX_OP_Sign] = {"px_k_sign", NULL, 0, NULL, 0},
    [PX_OP_Sin] = {"px_k_sin", NULL, 0, NULL, 0},
    [PX_OP_Sinh] = {"px_k_sinh", NULL, 0, NULL, 0},
    [PX_OP_Softplus] = {"px_k_softplus", NULL, 0, NULL, 0},
    [PX_OP_Softsign] = {"px_k_softsign", NULL, 0, NULL, 0},
    [PX_OP_Sqrt] = {"px_k_sqrt", NULL, 0, NULL, 0},
    [PX_OP_Tan] = {"px_k_tan", NULL, 0, NULL, 0},
    [PX_OP_Tanh] = {"px_k_tanh", NULL, 0, NULL, 0},
    [PX_OP_ThresholdedRelu] = {"px_k_thresholded_relu", "alpha", 1.0, NULL, 0},
    [PX_OP_Not] = {"px_k_not", NULL, 0, NULL, 0},
    [PX_OP_IsNaN] = {"px_k_isnan", NULL, 0, NULL, 0},
    [PX_OP_IsInf] = {"px_k_isinf", NULL, 0, NULL, 0},
};

/* Writes [X, Y] and X, Y, alpha, beta. */
static void emit_unary(px_kcall *k, const char *kernel, const px_node *n, double a, double b) {
    px_kc_set_kernel(k, kernel);
    px_kc_buf(k, n->inputs[0]);
    px_kc_buf(k, n->outputs[0]);
    px_kc_tensor(k, n->inputs[0]);
    px_kc_tensor(k, n->outputs[0]);
    px_kc_f64(k, a);
    px_kc_f64(k, b);
}

int px_lower_unary(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const unary_spec *s = &unary_specs[n->op];
    if (!s->kernel)
        return px_lower_error(d, n, "internal error: no unary kernel for %s", n->op_type);
    if (check_io(d, n)) return -1;
    double a = s->a_name ? px_attr_float(n, s->a_name, (float)s->a_dflt) : 0;
    double b = s->b_name ? px_attr_float(n, s->b_name, (float)s->b_dflt) : 0;
    if (n->op == PX_OP_IsInf) {
        a = (double)px_attr_int(n, "detect_negative", 1);
        b = (double)px_attr_int(n, "detect_positive", 1);
    }
    if (n->op == PX_OP_Celu && a == 0) return px_lower_error(d, n, "attribute alpha must not be 0");
    emit_unary(k, s->kernel, n, a, b);
    return 0;
}

int px_lower_gelu(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (check_io(d, n)) return -1;
    const char *approx = px_attr_string(n, "approximate", "none");
    if (strcmp(approx, "none") == 0)
        emit_unary(k, "px_k_gelu", n, 0, 0);
    else if (strcmp(approx, "tanh") == 0)
        emit_unary(k, "px_k_gelu_tanh", n, 0, 0);
    else
        return px_lower_error(d, n, "attribute approximate='%s' is not 'none' or 'tanh'", approx);
    return 0;
}

/* ---- Cast, CastLike ---- */

static int emit_cast(const px_node *n, px_kcall *k, px_diag *d) {
    if (check_io(d, n)) return -1;
    px_kc_set_kernel(k, "px_k_cast");
    px_kc_buf(k, n->inputs[0]);
    px_kc_buf(k, n->outputs[0]);
    px_kc_tensor(k, n->inputs[0]);
    px_kc_tensor(k, n->outputs[0]);
    return 0;
}

int px_lower_cast(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *x = px_lower_in(n, 0), *y = n->n_outputs ? n->outputs[0] : NULL;
    int64_t to = px_attr_int(n, "to", -1);
    if (n->op == PX_OP_CastLike && px_lower_in(n, 1)) to = px_lower_in(n, 1)->dtype;
    if (to == PX_STRING || (x && x->dtype == PX_STRING) || (y && y->dtype == PX_STRING))
        return px_lower_error(d, n, "the code generator does not support casts to or from string");
    if (y && to >= 0 && (int64_t)y->dtype != to)
        return px_lower_error(d, n, "output '%s' has dtype %s but the cast targets %s", y->name,
                              px_dtype_name(y->dtype), px_dtype_name((px_dtype)to));
    return emit_cast(n, k, d);
}

/* ---- Clip ---- */

/* The bound (min if lower, else max) a missing Clip bound stands for. */
static void clip_default(px_dtype t, int lower, double *f, int64_t *i) {
    *f = lower ? -INFINITY : INFINITY;
    switch (t) {
    case PX_I8: *i = lower ? INT8_MIN : INT8_MAX; break;
    case PX_I16: *i = lower ? INT16_MIN : INT16_MAX; break;
    case PX_I32: *i = lower ? INT32_MIN : INT32_MAX; break;
    case PX_I64: *i = lower ? INT64_MIN : INT64_MAX; break;
    case PX_U8: *i = lower ? 0 : UINT8_MAX; break;
    case PX_U16: *i = lower ? 0 : UINT16_MAX; break;
    case PX_U32: *i = lower ? 0 : UINT32_MAX; break;
    case PX_U64:
        *i = lower ? 0 : -1; /* UINT64_MAX as the kernel reads it */
        break;
    default: *i = 0; break;
    }
}

int px_lower_clip(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    if (check_io(d, n)) return -1;
    const px_value *x = n->inputs[0];
    int is_float = px_dtype_class(x->dtype) == PX_DTC_FLOAT;
    double f[2];
    int64_t iv[2];
    const px_value *bound[2] = {NULL, NULL};
    clip_default(x->dtype, 1, &f[0], &iv[0]);
    clip_default(x->dtype, 0, &f[1], &iv[1]);
    if (px_graph_opset(g, "") < 11) {
        const char *names[2] = {"min", "max"};
        for (int j = 0; j < 2; j++)
            if (px_node_attr(n, names[j])) {
                f[j] = px_attr_float(n, names[j], 0);
                iv[j] = (int64_t)f[j];
            }
    } else {
        const char *names[2] = {"min", "max"};
        for (int j = 0; j < 2; j++) {
            const px_value *b = px_lower_in(n, 1 + j);
            if (!b) continue;
            if (b->dtype != x->dtype)
                return px_lower_error(d, n, "%s '%s' has dtype %s, input has %s", names[j], b->name,
                                      px_dtype_name(b->dtype), px_dtype_name(x->dtype));
            int64_t numel = px_shape_numel(&b->shape);
            if (numel == 0) continue; /* an empty tensor means "no bound" */
            if (numel != 1)
                return px_lower_error(d, n, "%s '%s' must hold one element, it has %lld", names[j],
                                      b->name, (long long)numel);
            if (px_value_is_const(b) && b->data) {
                f[j] = px_tensor_get_f64(b->data, 0);
                iv[j] = px_tensor_get_i64(b->data, 0);
            } else {
                bound[j] = b;
            }
        }
    }
    px_kc_set_kernel(k, "px_k_clip");
    px_kc_buf(k, x);
    px_kc_buf(k, bound[0]);
    px_kc_buf(k, bound[1]);
    px_kc_buf(k, n->outputs[0]);
    px_kc_tensor(k, x);
    px_kc_tensor(k, n->outputs[0]);
    for (int j = 0; j < 2; j++) {
        if (is_float)
            px_kc_f64(k, f[j]);
        else
            px_kc_i64(k, iv[j]);
    }
    return 0;
}

/* ---- broadcasting binary ---- */

/* The shape the kernel sees for input i of a binary node. Before opset 7,
 * `broadcast=1` aligned B to A starting at `axis` (default: trailing), and
 * PRelu's 1-D slope was per channel; both become numpy shapes with 1s. */
static px_shape kernel_shape(const px_graph *g, const px_node *n, int i) {
    const px_value *v = n->inputs[i];
    px_shape s = v->shape;
    if (i != 1 || px_graph_opset(g, "") >= 7) return s;
    const px_value *a = n->inputs[0];
    int ar = a->shape.rank, axis = -1;
    if (n->op == PX_OP_PRelu) {
        if (s.rank == 1 && ar >= 2 && s.dims[0] == a->shape.dims[1] && s.dims[0] != 1) axis = 1;
    } else if (px_attr_int(n, "broadcast", 0) && px_node_attr(n, "axis")) {
        axis = (int)px_attr_int(n, "axis", 0);
        if (axis < 0) axis += ar;
    }
    if (axis < 0 || axis + s.rank > ar) return s;
    px_shape out = s;
    out.rank = ar;
    for (int j = 0; j < ar; j++) {
        out.dims[j] = (j >= axis && j < axis + s.rank) ? s.dims[j - axis] : 1;
        out.sym_id[j] = 0;
    }
    return out;
}

/* The kernel of each binary op (NULL: not a binary op). */
static const char *const binary_kernels[PX_OP_COUNT] = {
    [PX_OP_Add] = "px_k_add",
    [PX_OP_Sub] = "px_k_sub",
    [PX_OP_Mul] = "px_k_mul",
    [PX_OP_Div] = "px_k_div",
    [PX_OP_Mod] = "px_k_mod", /* px_k_fmod when fmod=1 */
    [PX_OP_PRelu] = "px_k_prelu",
    [PX_OP_Pow] = "px_k_pow",
    [PX_OP_Equal] = "px_k_equal",
    [PX_OP_Greater] = "px_k_greater",
    [PX_OP_GreaterOrEqual] = "px_k_greater_equal",
    [PX_OP_Less] = "px_k_less",
    [PX_OP_LessOrEqual] = "px_k_less_equal",
    [PX_OP_And] = "px_k_and",
    [PX_OP_Or] = "px_k_or",
    [PX_OP_Xor] = "px_k_xor",
};

/* Writes [A, B, C] and A, B, C descriptors. */
static void emit_binary(const px_graph *g, const px_node *n, px_kcall *k, const char *kernel) {
    px_kc_set_kernel(k, kernel);
    px_kc_buf(k, n->inputs[0]);
    px_kc_buf(k, n->inputs[1]);
    px_kc_buf(k, n->outputs[0]);
    for (int i = 0; i < 2; i++) {
        px_shape s = kernel_shape(g, n, i);
        px_kc_shape(k, (int)n->inputs[i]->dtype, &s);
    }
    px_kc_tensor(k, n->outputs[0]);
}

int px_lower_binary(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    px_gemm_fold f;
    if (px_lmm_fold_bias(n, &f)) { /* bias + MatMul: the GEMM starts from the bias rows */
        px_lmm_emit(&f, n->outputs[0], k);
        return 0;
    }
    const char *kernel = binary_kernels[n->op];
    if (!kernel) return px_lower_error(d, n, "internal error: no binary kernel for %s", n->op_type);
    if (n->n_inputs != 2) return px_lower_error(d, n, "expects 2 inputs, has %d", n->n_inputs);
    if (check_io(d, n) ||
        check_value(d, n, px_lower_in(n, 1), "second input", px_op_operand_class(n->op, 1)))
        return -1;
    const px_value *a = n->inputs[0], *b = n->inputs[1], *c = n->outputs[0];
    if (n->op != PX_OP_Pow && a->dtype != b->dtype)
        return px_lower_error(d, n, "inputs '%s' (%s) and '%s' (%s) differ in dtype", a->name,
                              px_dtype_name(a->dtype), b->name, px_dtype_name(b->dtype));
    if (px_op_result_letter(n->op) != 'b' && c->dtype != a->dtype)
        return px_lower_error(d, n, "output '%s' has dtype %s, expected %s", c->name,
                              px_dtype_name(c->dtype), px_dtype_name(a->dtype));
    if (n->op == PX_OP_Mod) {
        int64_t fmod_attr = px_attr_int(n, "fmod", 0);
        if (fmod_attr != 0 && fmod_attr != 1)
            return px_lower_error(d, n, "attribute fmod=%lld is not 0 or 1", (long long)fmod_attr);
        /* fmod=0 on floats is numpy.mod (the divisor's sign), as ONNX's reference */
        if (fmod_attr) kernel = "px_k_fmod";
    }
    emit_binary(g, n, k, kernel);
    return 0;
}

/* ---- variadic Max Min Sum Mean ---- */

int px_lower_variadic(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    const char *pair = n->op == PX_OP_Max   ? "px_k_max"
                       : n->op == PX_OP_Min ? "px_k_min"
                       : n->op == PX_OP_Sum ? "px_k_add"
                                            : NULL;
    const char *many = n->op == PX_OP_Max   ? "px_k_max_n"
                       : n->op == PX_OP_Min ? "px_k_min_n"
                       : n->op == PX_OP_Sum ? "px_k_sum_n"
                                            : "px_k_mean_n";
    if (n->n_inputs < 1) return px_lower_error(d, n, "needs at least one input");
    if (n->n_inputs > PX_KCALL_MAX_BUFS - 1)
        return px_lower_error(d, n, "has %d inputs; the code generator supports at most %d",
                              n->n_inputs, PX_KCALL_MAX_BUFS - 1);
    if (check_io(d, n)) return -1;
    for (int i = 0; i < n->n_inputs; i++) {
        if (check_value(d, n, n->inputs[i], "input", px_op_operand_class(n->op, i))) return -1;
        if (n->inputs[i]->dtype != n->outputs[0]->dtype)
            return px_lower_error(d, n, "input '%s' has dtype %s, output has %s",
                                  n->inputs[i]->name, px_dtype_name(n->inputs[i]->dtype),
                                  px_dtype_name(n->outputs[0]->dtype));
    }
    if (n->n_inputs == 2 && pair) {
        emit_binary(g, n, k, pair);
        return 0;
    }
    px_kc_set_kernel(k, many);
    for (int i = 0; i < n->n_inputs; i++) px_kc_buf(k, n->inputs[i]);
    px_kc_buf(k, n->outputs[0]);
    px_kc_i64(k, n->n_inputs);
    for (int i = 0; i < n->n_inputs; i++) px_kc_tensor(k, n->inputs[i]);
    px_kc_tensor(k, n->outputs[0]);
    return 0;
}

/* ---- Where ---- */

int px_lower_where(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    if (n->n_inputs != 3) return px_lower_error(d, n, "expects 3 inputs, has %d", n->n_inputs);
    if (check_io(d, n) || check_value(d, n, n->inputs[1], "X", px_op_operand_class(n->op, 1)) ||
        check_value(d, n, n->inputs[2], "Y", px_op_operand_class(n->op, 2)))
        return -1;
    if (n->inputs[1]->dtype != n->inputs[2]->dtype || n->outputs[0]->dtype != n->inputs[1]->dtype)
        return px_lower_error(d, n, "X, Y and the output must share a dtype");
    px_kc_set_kernel(k, "px_k_where");
    for (int i = 0; i < 3; i++) px_kc_buf(k, n->inputs[i]);
    px_kc_buf(k, n->outputs[0]);
    for (int i = 0; i < 3; i++) px_kc_tensor(k, n->inputs[i]);
    px_kc_tensor(k, n->outputs[0]);
    return 0;
}
