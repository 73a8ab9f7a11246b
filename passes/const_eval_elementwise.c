/* Constant evaluation of elementwise ops: unary math, broadcasting
 * arithmetic and comparisons, Where, Cast/CastLike. Integers are computed in
 * int64 (wrapping through uint64, then narrowed like a C cast), floats in
 * double and rounded once to the output type. */
#include "const_eval_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- unary ---- */

static int unary_int(px_op op, int64_t x, int64_t *r) {
    switch (op) {
    case PX_OP_Neg: *r = (int64_t)(0 - (uint64_t)x); return 1;
    case PX_OP_Abs: *r = x < 0 ? (int64_t)(0 - (uint64_t)x) : x; return 1;
    case PX_OP_Sign: *r = (x > 0) - (x < 0); return 1;
    case PX_OP_Relu: *r = x > 0 ? x : 0; return 1;
    case PX_OP_Identity: *r = x; return 1;
    default: return 0; /* Sqrt, Floor, ... are float-only in ONNX */
    }
}

static double unary_float(px_op op, double x) {
    switch (op) {
    case PX_OP_Neg: return -x;
    case PX_OP_Abs: return fabs(x);
    case PX_OP_Sign: return isnan(x) ? x : (double)((x > 0) - (x < 0));
    case PX_OP_Relu: return x > 0 ? x : 0.0;
    case PX_OP_Sqrt: return sqrt(x);
    case PX_OP_Floor: return floor(x);
    case PX_OP_Ceil: return ceil(x);
    case PX_OP_Round: return nearbyint(x); /* ONNX rounds half to even (default FE mode) */
    case PX_OP_Reciprocal: return 1.0 / x;
    case PX_OP_Exp: return exp(x);
    case PX_OP_Log: return log(x);
    default: return x;
    }
}

int px_eval_unary(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    const px_tensor *x = in[0];
    if (n->n_inputs < 1 || !x || !ce_numeric(x->dtype)) return PX_EVAL_NOT_FOLDABLE;
    int is_not = n->op == PX_OP_Not;
    if (is_not != (x->dtype == PX_BOOL)) return PX_EVAL_NOT_FOLDABLE;
    int st = ce_alloc(x->dtype, &x->shape, out, d);
    if (st != PX_EVAL_OK) return st;
    int64_t numel = px_tensor_numel(x);
    for (int64_t i = 0; i < numel; i++) {
        if (is_not) {
            ce_store_i64(*out, i, !ce_load_i64(x, i));
        } else if (px_dtype_is_float(x->dtype)) {
            ce_store_f64(*out, i, unary_float(n->op, ce_load_f64(x, i)));
        } else {
            int64_t r;
            if (!unary_int(n->op, ce_load_i64(x, i), &r)) return PX_EVAL_NOT_FOLDABLE;
            ce_store_i64(*out, i, r);
        }
    }
    return PX_EVAL_OK;
}

/* ---- broadcasting binary / variadic ---- */

static int is_compare(px_op op) {
    return op == PX_OP_Equal || op == PX_OP_Less || op == PX_OP_Greater ||
           op == PX_OP_LessOrEqual || op == PX_OP_GreaterOrEqual;
}

static int is_logical(px_op op) {
    return op == PX_OP_And || op == PX_OP_Or || op == PX_OP_Xor;
}

static int compare(px_op op, int c) /* c = sign of a - b */ {
    switch (op) {
    case PX_OP_Equal: return c == 0;
    case PX_OP_Less: return c < 0;
    case PX_OP_Greater: return c > 0;
    case PX_OP_LessOrEqual: return c <= 0;
    default: return c >= 0;
    }
}

static int64_t ipow(int64_t base, int64_t e) {
    uint64_t r = 1, b = (uint64_t)base;
    while (e > 0) {
        if (e & 1) r *= b;
        b *= b;
        e >>= 1;
    }
    return (int64_t)r;
}

/* Integer binary op. Returns 0 when the result is undefined (division by
 * zero, overflow of INT64_MIN / -1): those are left to run time. */
static int binary_int(px_op op, int64_t fmod_attr, int64_t a, int64_t b, int64_t *r) {
    switch (op) {
    case PX_OP_Add: *r = (int64_t)((uint64_t)a + (uint64_t)b); return 1;
    case PX_OP_Sub: *r = (int64_t)((uint64_t)a - (uint64_t)b); return 1;
    case PX_OP_Mul: *r = (int64_t)((uint64_t)a * (uint64_t)b); return 1;
    case PX_OP_Div:
        if (b == 0 || (a == INT64_MIN && b == -1)) return 0;
        *r = a / b; /* truncates toward zero, as ONNX integer Div */
        return 1;
    case PX_OP_Mod:
        if (b == 0 || (a == INT64_MIN && b == -1)) return 0;
        *r = a % b;
        /* fmod=0: the result takes the divisor's sign (Python's %). */
        if (!fmod_attr && *r != 0 && ((*r < 0) != (b < 0))) *r += b;
        return 1;
    case PX_OP_Max: *r = a > b ? a : b; return 1;
    case PX_OP_Min: *r = a < b ? a : b; return 1;
    case PX_OP_Pow:
        if (b < 0) return 0;
        *r = ipow(a, b);
        return 1;
    default: return 0;
    }
}

static double binary_float(px_op op, double a, double b) {
    switch (op) {
    case PX_OP_Add: return a + b;
    case PX_OP_Sub: return a - b;
    case PX_OP_Mul: return a * b;
    case PX_OP_Div: return a / b;
    case PX_OP_Pow: return pow(a, b);
    case PX_OP_Max: return (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b);
    case PX_OP_Min: return (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b);
    default: return a; /* Mod handled by the caller */
    }
}

static double float_mod(double a, double b, int64_t fmod_attr) {
    double r = fmod(a, b);
    if (!fmod_attr && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

#define CE_MAX_VARIADIC 64

int px_eval_broadcast(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    int k = n->n_inputs;
    px_op op = n->op;
    if (k < 1 || k > CE_MAX_VARIADIC) return PX_EVAL_NOT_FOLDABLE;
    if (k != 2 && op != PX_OP_Max && op != PX_OP_Min) return PX_EVAL_NOT_FOLDABLE;
    const px_shape *shapes[CE_MAX_VARIADIC];
    for (int i = 0; i < k; i++) {
        if (!in[i] || !ce_numeric(in[i]->dtype)) return PX_EVAL_NOT_FOLDABLE;
        shapes[i] = &in[i]->shape;
    }
    px_dtype t = in[0]->dtype;
    int logical = is_logical(op), cmp = is_compare(op);
    /* Pow (opset 12+) may mix base and exponent types; every other op here
     * requires one type. Bool is only for logical ops (and Equal). */
    for (int i = 1; i < k; i++)
        if (in[i]->dtype != t && op != PX_OP_Pow) return PX_EVAL_NOT_FOLDABLE;
    if (logical != (t == PX_BOOL) && !(op == PX_OP_Equal && t == PX_BOOL))
        return PX_EVAL_NOT_FOLDABLE;
    if (op == PX_OP_Pow && (in[1]->dtype == PX_BOOL)) return PX_EVAL_NOT_FOLDABLE;

    px_shape oshape;
    if (ce_broadcast_shape(n, k, shapes, &oshape, d) != 0) return PX_EVAL_ERROR;
    int st = ce_alloc((cmp || logical) ? PX_BOOL : t, &oshape, out, d);
    if (st != PX_EVAL_OK) return st;
    int64_t fmod_attr = px_attr_int(n, "fmod", 0);
    int is_float = px_dtype_is_float(t);
    int64_t numel = px_shape_numel(&oshape);
    for (int64_t e = 0; e < numel; e++) {
        int64_t ia = ce_broadcast_index(&oshape, shapes[0], e);
        if (logical) {
            int64_t a = ce_load_i64(in[0], ia);
            int64_t b = ce_load_i64(in[1], ce_broadcast_index(&oshape, shapes[1], e));
            int64_t r = op == PX_OP_And ? (a && b) : op == PX_OP_Or ? (a || b) : (!a != !b);
            ce_store_i64(*out, e, r);
        } else if (cmp) {
            int64_t ib = ce_broadcast_index(&oshape, shapes[1], e);
            int c;
            if (is_float) {
                double a = ce_load_f64(in[0], ia), b = ce_load_f64(in[1], ib);
                if (isnan(a) || isnan(b)) {
                    ce_store_i64(*out, e, 0); /* every comparison with NaN is false */
                    continue;
                }
                c = (a > b) - (a < b);
            } else {
                int64_t a = ce_load_i64(in[0], ia), b = ce_load_i64(in[1], ib);
                c = (a > b) - (a < b);
            }
            ce_store_i64(*out, e, compare(op, c));
        } else if (is_float) {
            double acc = ce_load_f64(in[0], ia);
            for (int i = 1; i < k; i++) {
                double b = ce_load_f64(in[i], ce_broadcast_index(&oshape, shapes[i], e));
                acc = op == PX_OP_Mod ? float_mod(acc, b, fmod_attr) : binary_float(op, acc, b);
            }
            ce_store_f64(*out, e, acc);
        } else if (op == PX_OP_Pow && px_dtype_is_float(in[1]->dtype)) {
            /* Integer base, float exponent: computed in double, truncated. */
            double r = pow((double)ce_load_i64(in[0], ia),
                           ce_load_f64(in[1], ce_broadcast_index(&oshape, shapes[1], e)));
            if (!(r > -9.2e18 && r < 9.2e18)) return PX_EVAL_NOT_FOLDABLE;
            ce_store_i64(*out, e, (int64_t)r);
        } else {
            int64_t acc = ce_load_i64(in[0], ia);
            for (int i = 1; i < k; i++) {
                int64_t b = ce_load_i64(in[i], ce_broadcast_index(&oshape, shapes[i], e));
                if (!binary_int(op, fmod_attr, acc, b, &acc)) return PX_EVAL_NOT_FOLDABLE;
            }
            ce_store_i64(*out, e, acc);
        }
    }
    return PX_EVAL_OK;
}

/* ---- Where ---- */

int px_eval_where(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    if (n->n_inputs != 3 || !in[0] || !in[1] || !in[2]) return PX_EVAL_NOT_FOLDABLE;
    if (in[0]->dtype != PX_BOOL || in[1]->dtype != in[2]->dtype || in[1]->dtype == PX_STRING)
        return PX_EVAL_NOT_FOLDABLE;
    const px_shape *shapes[3] = {&in[0]->shape, &in[1]->shape, &in[2]->shape};
    px_shape oshape;
    if (ce_broadcast_shape(n, 3, shapes, &oshape, d) != 0) return PX_EVAL_ERROR;
    int st = ce_alloc(in[1]->dtype, &oshape, out, d);
    if (st != PX_EVAL_OK) return st;
    size_t es = px_dtype_size(in[1]->dtype);
    int64_t numel = px_shape_numel(&oshape);
    for (int64_t e = 0; e < numel; e++) {
        int cond = ce_load_i64(in[0], ce_broadcast_index(&oshape, shapes[0], e)) != 0;
        const px_tensor *src = cond ? in[1] : in[2];
        int64_t idx = ce_broadcast_index(&oshape, &src->shape, e);
        memcpy((char *)(*out)->data + (size_t)e * es, (const char *)src->data + (size_t)idx * es,
               es);
    }
    return PX_EVAL_OK;
}

/* ---- Cast / CastLike ---- */

static int cast_to(const px_tensor *x, px_dtype to, px_tensor **out, px_diag *d) {
    if (!ce_numeric(x->dtype) || !(ce_numeric(to) || to == PX_U64)) return PX_EVAL_NOT_FOLDABLE;
    int st = ce_alloc(to, &x->shape, out, d);
    if (st != PX_EVAL_OK) return st;
    int64_t numel = px_tensor_numel(x);
    int from_float = px_dtype_is_float(x->dtype);
    int to_float = px_dtype_is_float(to);
    for (int64_t i = 0; i < numel; i++) {
        if (from_float && to_float) {
            ce_store_f64(*out, i, ce_load_f64(x, i));
        } else if (from_float && to == PX_BOOL) {
            ce_store_f64(*out, i, ce_load_f64(x, i)); /* NaN and non-zero are true */
        } else if (from_float) {
            double v = ce_load_f64(x, i);
            /* Out-of-range float->int conversion is undefined: leave it to run time. */
            if (!(v > -9.2e18 && v < 9.2e18)) return PX_EVAL_NOT_FOLDABLE;
            ce_store_i64(*out, i, (int64_t)v);
        } else {
            ce_store_i64(*out, i, ce_load_i64(x, i));
        }
    }
    return PX_EVAL_OK;
}

int px_eval_cast(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    if (n->n_inputs < 1 || !in[0]) return PX_EVAL_NOT_FOLDABLE;
    const px_attr *to = px_node_attr(n, "to");
    if (!to || !px_dtype_valid((int)to->i)) return PX_EVAL_NOT_FOLDABLE;
    return cast_to(in[0], (px_dtype)to->i, out, d);
}

int px_eval_castlike(const px_node *n, const px_tensor *const *in, px_tensor **out, px_diag *d) {
    if (n->n_inputs < 2 || !in[0] || !in[1]) return PX_EVAL_NOT_FOLDABLE;
    return cast_to(in[0], in[1]->dtype, out, d);
}
