/* LLVM IR for a fused elementwise group (float32 and bool values, bool as
 * one byte in memory and i1 in registers): nested loops over the output's
 * (collapsed) shape, each input read through its broadcast strides, the
 * expression tree evaluated per element. Inner strides are compile-time
 * constants 0 or 1 in the common cases, so the innermost loop vectorizes. */
#include "emit_fused.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct loop_nest {
    int rank;
    int64_t dims[PX_MAX_RANK];
    int64_t stride[PX_FUSE_MAX_INPUTS + 1][PX_MAX_RANK]; /* last row: the output */
} loop_nest;

/* Broadcast strides of every input over the output shape, then merge
 * neighbouring dims that every operand walks contiguously (or not at all). */
static void make_nest(const px_fusion *f, loop_nest *ln) {
    const px_shape *out = &f->output->shape;
    int n_ops = f->n_inputs + 1;
    memset(ln, 0, sizeof *ln);
    ln->rank = out->rank;
    for (int i = 0; i < out->rank; i++) ln->dims[i] = out->dims[i];
    for (int k = 0; k < n_ops; k++) {
        const px_shape *s = k < f->n_inputs ? &f->inputs[k]->shape : out;
        int64_t st = 1;
        for (int i = out->rank - 1; i >= 0; i--) {
            int j = i - (out->rank - s->rank);
            int64_t dim = j >= 0 ? s->dims[j] : 1;
            ln->stride[k][i] = (dim == 1) ? 0 : st;
            st *= dim;
        }
    }
    /* Drop size-1 dims, then merge mergeable neighbours. */
    int r = 0;
    for (int i = 0; i < ln->rank; i++) {
        if (ln->dims[i] == 1 && ln->rank > 1) continue;
        ln->dims[r] = ln->dims[i];
        for (int k = 0; k < n_ops; k++) ln->stride[k][r] = ln->stride[k][i];
        r++;
    }
    ln->rank = r;
    int m = 0;
    for (int i = 0; i < ln->rank; i++) {
        if (m > 0) {
            int ok = 1;
            for (int k = 0; k < n_ops && ok; k++)
                ok = ln->stride[k][m - 1] == ln->stride[k][i] * ln->dims[i];
            if (ok) {
                ln->dims[m - 1] *= ln->dims[i];
                for (int k = 0; k < n_ops; k++) ln->stride[k][m - 1] = ln->stride[k][i];
                continue;
            }
        }
        ln->dims[m] = ln->dims[i];
        for (int k = 0; k < n_ops; k++) ln->stride[k][m] = ln->stride[k][i];
        m++;
    }
    ln->rank = m;
}

typedef struct fctx {
    LLVMContextRef ctx;
    LLVMModuleRef m;
    LLVMBuilderRef b;
    LLVMValueRef fn;
    LLVMTypeRef f32, i1, i8, i64;
    const px_fusion *f;
    loop_nest ln;
    LLVMValueRef ptrs[PX_FUSE_MAX_INPUTS + 1];
    LLVMValueRef lo, hi; /* the range of the outermost loop's index */
} fctx;

static LLVMValueRef call_f32(fctx *c, const char *name, LLVMValueRef x) {
    LLVMTypeRef ty = LLVMFunctionType(c->f32, &c->f32, 1, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(c->m, name);
    if (!fn) fn = LLVMAddFunction(c->m, name, ty);
    return LLVMBuildCall2(c->b, ty, fn, &x, 1, "");
}

static LLVMValueRef call_f32_2(fctx *c, const char *name, LLVMValueRef x, LLVMValueRef y) {
    LLVMTypeRef args[2] = {c->f32, c->f32};
    LLVMTypeRef ty = LLVMFunctionType(c->f32, args, 2, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(c->m, name);
    if (!fn) fn = LLVMAddFunction(c->m, name, ty);
    LLVMValueRef xs[2] = {x, y};
    return LLVMBuildCall2(c->b, ty, fn, xs, 2, "");
}

static LLVMValueRef fconst(fctx *c, double v) {
    return LLVMConstReal(c->f32, v);
}

/* NaN-propagating max/min as ONNX's reference (numpy.maximum) computes them. */
static LLVMValueRef nan_max(fctx *c, LLVMValueRef a, LLVMValueRef b, int is_min) {
    LLVMValueRef pick_a = LLVMBuildFCmp(c->b, is_min ? LLVMRealOLT : LLVMRealOGT, a, b, "");
    LLVMValueRef a_nan = LLVMBuildFCmp(c->b, LLVMRealUNO, a, a, "");
    LLVMValueRef r = LLVMBuildSelect(c->b, pick_a, a, b, "");
    return LLVMBuildSelect(c->b, a_nan, a, r, "");
}

static LLVMValueRef fcmp(fctx *c, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFCmp(c->b, p, a, b, "");
}

static LLVMValueRef sel(fctx *c, LLVMValueRef cond, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildSelect(c->b, cond, a, b, "");
}

/* log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)), as the kernel. */
static LLVMValueRef softplus(fctx *c, LLVMValueRef a) {
    LLVMValueRef e =
        call_f32(c, "llvm.exp.f32", LLVMBuildFNeg(c->b, call_f32(c, "llvm.fabs.f32", a), ""));
    LLVMValueRef pos = fcmp(c, LLVMRealOGT, a, fconst(c, 0));
    return LLVMBuildFAdd(c->b, sel(c, pos, a, fconst(c, 0)), call_f32(c, "log1pf", e), "");
}

/* v < 0 ? 0 : (v > 1 ? 1 : v), NaN kept (HardSigmoid, HardSwish). */
static LLVMValueRef clamp01(fctx *c, LLVMValueRef v) {
    LLVMValueRef hi = sel(c, fcmp(c, LLVMRealOGT, v, fconst(c, 1)), fconst(c, 1), v);
    return sel(c, fcmp(c, LLVMRealOLT, v, fconst(c, 0)), fconst(c, 0), hi);
}

/* Cast between float32 and bool (the signature allows no other dtype). */
static LLVMValueRef cast(fctx *c, const px_fexpr *e, LLVMValueRef a) {
    px_dtype from = c->f->exprs[e->a].dtype;
    if (from == e->dtype) return a;
    if (e->dtype == PX_BOOL) return fcmp(c, LLVMRealUNE, a, fconst(c, 0)); /* NaN -> true */
    return LLVMBuildUIToFP(c->b, a, c->f32, "");
}

/* The scalar formulas follow the runtime kernels (runtime/kernels/elementwise.c). */
static LLVMValueRef emit_float_unary(fctx *c, const px_fexpr *e, LLVMValueRef a) {
    LLVMBuilderRef B = c->b;
    LLVMValueRef zero = fconst(c, 0), one = fconst(c, 1);
    switch (e->op) {
    case PX_OP_Neg: return LLVMBuildFNeg(B, a, "");
    case PX_OP_Abs: return call_f32(c, "llvm.fabs.f32", a);
    case PX_OP_Relu: /* x < 0 ? 0 : x keeps NaN */
        return sel(c, fcmp(c, LLVMRealOLT, a, zero), zero, a);
    case PX_OP_Sqrt: return call_f32(c, "llvm.sqrt.f32", a);
    case PX_OP_Exp: return call_f32(c, "llvm.exp.f32", a);
    case PX_OP_Log: return call_f32(c, "llvm.log.f32", a);
    case PX_OP_Floor: return call_f32(c, "llvm.floor.f32", a);
    case PX_OP_Ceil: return call_f32(c, "llvm.ceil.f32", a);
    case PX_OP_Round: return call_f32(c, "nearbyintf", a); /* halves to even */
    case PX_OP_Tanh: return call_f32(c, "tanhf", a);
    case PX_OP_Erf: return call_f32(c, "erff", a);
    case PX_OP_Acos: return call_f32(c, "acosf", a);
    case PX_OP_Acosh: return call_f32(c, "acoshf", a);
    case PX_OP_Asin: return call_f32(c, "asinf", a);
    case PX_OP_Asinh: return call_f32(c, "asinhf", a);
    case PX_OP_Atan: return call_f32(c, "atanf", a);
    case PX_OP_Atanh: return call_f32(c, "atanhf", a);
    case PX_OP_Cos: return call_f32(c, "cosf", a);
    case PX_OP_Cosh: return call_f32(c, "coshf", a);
    case PX_OP_Sin: return call_f32(c, "sinf", a);
    case PX_OP_Sinh: return call_f32(c, "sinhf", a);
    case PX_OP_Tan: return call_f32(c, "tanf", a);
    case PX_OP_Sigmoid: {
        LLVMValueRef ex = call_f32(c, "llvm.exp.f32", LLVMBuildFNeg(B, a, ""));
        return LLVMBuildFDiv(B, one, LLVMBuildFAdd(B, one, ex, ""), "");
    }
    case PX_OP_Reciprocal: return LLVMBuildFDiv(B, one, a, "");
    case PX_OP_Identity: return a;
    case PX_OP_LeakyRelu:
        return sel(c, fcmp(c, LLVMRealOLT, a, zero), LLVMBuildFMul(B, a, fconst(c, e->alpha), ""),
                   a);
    case PX_OP_Elu: {
        LLVMValueRef em1 = LLVMBuildFSub(B, call_f32(c, "llvm.exp.f32", a), one, "");
        return sel(c, fcmp(c, LLVMRealOLT, a, zero), LLVMBuildFMul(B, em1, fconst(c, e->alpha), ""),
                   a);
    }
    case PX_OP_Celu: { /* max(x, 0) + (x < 0 ? a * expm1(x / a) : 0) */
        LLVMValueRef al = fconst(c, e->alpha);
        LLVMValueRef neg =
            LLVMBuildFMul(B, al, call_f32(c, "expm1f", LLVMBuildFDiv(B, a, al, "")), "");
        return LLVMBuildFAdd(B, sel(c, fcmp(c, LLVMRealOGT, a, zero), a, zero),
                             sel(c, fcmp(c, LLVMRealOLT, a, zero), neg, zero), "");
    }
    case PX_OP_Selu: { /* gamma * (x > 0 ? x : alpha * expm1(x)) */
        LLVMValueRef neg = LLVMBuildFMul(B, fconst(c, e->alpha), call_f32(c, "expm1f", a), "");
        return LLVMBuildFMul(B, fconst(c, e->beta), sel(c, fcmp(c, LLVMRealOGT, a, zero), a, neg),
                             "");
    }
    case PX_OP_ThresholdedRelu:
        return sel(c, fcmp(c, LLVMRealOGT, a, fconst(c, e->alpha)), a, zero);
    case PX_OP_HardSigmoid:
        return clamp01(c, LLVMBuildFAdd(B, LLVMBuildFMul(B, fconst(c, e->alpha), a, ""),
                                        fconst(c, e->beta), ""));
    case PX_OP_HardSwish: {
        LLVMValueRef v =
            LLVMBuildFAdd(B, LLVMBuildFDiv(B, a, fconst(c, 6), ""), fconst(c, 0.5), "");
        return LLVMBuildFMul(B, a, clamp01(c, v), "");
    }
    case PX_OP_Softplus: return softplus(c, a);
    case PX_OP_Softsign:
        return LLVMBuildFDiv(B, a, LLVMBuildFAdd(B, one, call_f32(c, "llvm.fabs.f32", a), ""), "");
    case PX_OP_Mish: return LLVMBuildFMul(B, a, call_f32(c, "tanhf", softplus(c, a)), "");
    case PX_OP_Gelu: {
        LLVMValueRef inner;
        if (e->mode) { /* tanh(sqrt(2/pi) * (x + 0.044715 x^3)) */
            LLVMValueRef x3 = LLVMBuildFMul(B, LLVMBuildFMul(B, a, a, ""), a, "");
            LLVMValueRef s = LLVMBuildFAdd(B, a, LLVMBuildFMul(B, fconst(c, 0.044715), x3, ""), "");
            inner =
                call_f32(c, "tanhf", LLVMBuildFMul(B, fconst(c, 0.79788456080286535588), s, ""));
        } else
            inner = call_f32(c, "erff", LLVMBuildFMul(B, a, fconst(c, 0.70710678118654752440), ""));
        LLVMValueRef half_x = LLVMBuildFMul(B, fconst(c, 0.5), a, "");
        return LLVMBuildFMul(B, half_x, LLVMBuildFAdd(B, one, inner, ""), "");
    }
    case PX_OP_Sign: { /* -1, 0 or 1; NaN stays NaN */
        LLVMValueRef r = sel(c, fcmp(c, LLVMRealOLT, a, zero), fconst(c, -1), zero);
        r = sel(c, fcmp(c, LLVMRealOGT, a, zero), one, r);
        return sel(c, fcmp(c, LLVMRealUNO, a, a), a, r);
    }
    case PX_OP_Shrink: { /* x < -l ? x + bias : (x > l ? x - bias : 0) */
        LLVMValueRef l = fconst(c, e->alpha), bias = fconst(c, e->beta);
        LLVMValueRef r = sel(c, fcmp(c, LLVMRealOGT, a, l), LLVMBuildFSub(B, a, bias, ""), zero);
        return sel(c, fcmp(c, LLVMRealOLT, a, LLVMBuildFNeg(B, l, "")),
                   LLVMBuildFAdd(B, a, bias, ""), r);
    }
    case PX_OP_Clip: {
        LLVMValueRef r = a;
        if (e->alpha != -INFINITY)
            r = sel(c, fcmp(c, LLVMRealOLT, r, fconst(c, e->alpha)), fconst(c, e->alpha), r);
        if (e->beta != INFINITY)
            r = sel(c, fcmp(c, LLVMRealOGT, r, fconst(c, e->beta)), fconst(c, e->beta), r);
        return r;
    }
    default: return NULL;
    }
}

static LLVMValueRef emit_op(fctx *c, const px_fexpr *e, LLVMValueRef a, LLVMValueRef b,
                            LLVMValueRef w) {
    LLVMBuilderRef B = c->b;
    switch (e->op) {
    case PX_OP_Add: return LLVMBuildFAdd(B, a, b, "");
    case PX_OP_Sub: return LLVMBuildFSub(B, a, b, "");
    case PX_OP_Mul: return LLVMBuildFMul(B, a, b, "");
    case PX_OP_Div: return LLVMBuildFDiv(B, a, b, "");
    case PX_OP_Pow: return call_f32_2(c, "powf", a, b);
    case PX_OP_Max: return nan_max(c, a, b, 0);
    case PX_OP_Min: return nan_max(c, a, b, 1);
    case PX_OP_Sum: return LLVMBuildFAdd(B, a, b, "");
    case PX_OP_Mean: return LLVMBuildFMul(B, LLVMBuildFAdd(B, a, b, ""), fconst(c, 0.5), "");
    case PX_OP_PRelu:
        return sel(c, fcmp(c, LLVMRealOLT, a, fconst(c, 0)), LLVMBuildFMul(B, a, b, ""), a);
    case PX_OP_Mod: {
        LLVMValueRef r = LLVMBuildFRem(B, a, b, ""); /* C fmod */
        if (e->mode) return r;
        /* fmod=0: the result takes the divisor's sign (numpy.mod) */
        LLVMValueRef zero = fconst(c, 0);
        LLVMValueRef differ =
            LLVMBuildXor(B, fcmp(c, LLVMRealOLT, r, zero), fcmp(c, LLVMRealOLT, b, zero), "");
        LLVMValueRef fix = LLVMBuildAnd(B, fcmp(c, LLVMRealUNE, r, zero), differ, "");
        return sel(c, fix, LLVMBuildFAdd(B, r, b, ""), r);
    }
    case PX_OP_Equal: return fcmp(c, LLVMRealOEQ, a, b);
    case PX_OP_Greater: return fcmp(c, LLVMRealOGT, a, b);
    case PX_OP_GreaterOrEqual: return fcmp(c, LLVMRealOGE, a, b);
    case PX_OP_Less: return fcmp(c, LLVMRealOLT, a, b);
    case PX_OP_LessOrEqual: return fcmp(c, LLVMRealOLE, a, b);
    case PX_OP_And: return LLVMBuildAnd(B, a, b, "");
    case PX_OP_Or: return LLVMBuildOr(B, a, b, "");
    case PX_OP_Xor: return LLVMBuildXor(B, a, b, "");
    case PX_OP_Not: return LLVMBuildNot(B, a, "");
    case PX_OP_IsNaN: return fcmp(c, LLVMRealUNO, a, a);
    case PX_OP_IsInf: {
        LLVMValueRef no = LLVMConstInt(c->i1, 0, 0);
        LLVMValueRef neg = e->alpha != 0 ? fcmp(c, LLVMRealOEQ, a, fconst(c, -INFINITY)) : no;
        LLVMValueRef pos = e->beta != 0 ? fcmp(c, LLVMRealOEQ, a, fconst(c, INFINITY)) : no;
        return LLVMBuildOr(B, neg, pos, "");
    }
    case PX_OP_Where: return sel(c, a, b, w);
    case PX_OP_Cast:
    case PX_OP_CastLike: return cast(c, e, a);
    default: return emit_float_unary(c, e, a);
    }
}

/* The LLVM type of an element of a fused buffer: float, or i8 for bool. */
static LLVMTypeRef elem_type(fctx *c, px_dtype dt) {
    return dt == PX_BOOL ? c->i8 : c->f32;
}

/* Emits the loop at `level`; offs[k] are the operands' element offsets so far. */
static void emit_level(fctx *c, int level, LLVMValueRef *offs) {
    LLVMBuilderRef B = c->b;
    int n_ops = c->f->n_inputs + 1;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "loop");
    LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "done");
    LLVMBuildBr(B, body);
    LLVMPositionBuilderAtEnd(B, body);
    LLVMValueRef i = LLVMBuildPhi(B, c->i64, "i");
    LLVMValueRef start = level == 0 ? c->lo : LLVMConstInt(c->i64, 0, 0);
    LLVMAddIncoming(i, &start, &pre, 1);
    LLVMValueRef inner[PX_FUSE_MAX_INPUTS + 1];
    for (int k = 0; k < n_ops; k++) {
        LLVMValueRef st = LLVMConstInt(c->i64, (unsigned long long)c->ln.stride[k][level], 0);
        inner[k] = LLVMBuildAdd(B, offs[k], LLVMBuildMul(B, i, st, ""), "");
    }
    if (level + 1 < c->ln.rank)
        emit_level(c, level + 1, inner);
    else {
        LLVMValueRef vals[PX_FUSE_MAX_EXPRS];
        for (int x = 0; x < c->f->n_exprs; x++) {
            const px_fexpr *e = &c->f->exprs[x];
            if (e->kind == PX_FE_INPUT) {
                LLVMTypeRef ty = elem_type(c, e->dtype);
                LLVMValueRef p =
                    LLVMBuildInBoundsGEP2(B, ty, c->ptrs[e->input], &inner[e->input], 1, "");
                vals[x] = LLVMBuildLoad2(B, ty, p, "");
                if (e->dtype == PX_BOOL) /* bytes 0/1 as i1 */
                    vals[x] = LLVMBuildICmp(B, LLVMIntNE, vals[x], LLVMConstInt(c->i8, 0, 0), "");
            } else
                vals[x] = emit_op(c, e, vals[e->a], e->b >= 0 ? vals[e->b] : NULL,
                                  e->c >= 0 ? vals[e->c] : NULL);
        }
        const px_fexpr *last = &c->f->exprs[c->f->n_exprs - 1];
        LLVMValueRef result = vals[c->f->n_exprs - 1];
        if (last->dtype == PX_BOOL) result = LLVMBuildZExt(B, result, c->i8, "");
        LLVMTypeRef ty = elem_type(c, last->dtype);
        LLVMValueRef p = LLVMBuildInBoundsGEP2(B, ty, c->ptrs[n_ops - 1], &inner[n_ops - 1], 1, "");
        LLVMBuildStore(B, result, p);
    }
    LLVMValueRef next = LLVMBuildAdd(B, i, LLVMConstInt(c->i64, 1, 0), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(B);
    LLVMAddIncoming(i, &next, &latch, 1);
    LLVMValueRef end =
        level == 0 ? c->hi : LLVMConstInt(c->i64, (unsigned long long)c->ln.dims[level], 0);
    LLVMValueRef more = LLVMBuildICmp(B, LLVMIntULT, next, end, "");
    LLVMBuildCondBr(B, more, body, after);
    LLVMPositionBuilderAtEnd(B, after);
}

/* px_fused_<index>_body(ptr in0, ..., ptr out, i64 lo, i64 hi): the loop
 * nest with the outermost index running over [lo, hi) (lo < hi). */
static LLVMValueRef emit_body(fctx *c, int index, const unsigned char *shares_output) {
    LLVMContextRef ctx = c->ctx;
    LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0);
    int n_ops = c->f->n_inputs + 1;
    LLVMTypeRef params[PX_FUSE_MAX_INPUTS + 3];
    for (int k = 0; k < n_ops; k++) params[k] = ptr;
    params[n_ops] = params[n_ops + 1] = c->i64;
    char name[64];
    snprintf(name, sizeof name, "px_fused_%d_body", index);
    c->fn = LLVMAddFunction(
        c->m, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, (unsigned)n_ops + 2, 0));
    LLVMSetLinkage(c->fn, LLVMInternalLinkage);
    /* Buffers are distinct unless the buffer plan put the output in place of
     * an input (shares_output[k]): every other pointer is noalias. */
    unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
    int in_place = 0;
    for (int k = 0; k + 1 < n_ops; k++) in_place |= shares_output[k];
    for (int k = 0; k < n_ops; k++) {
        c->ptrs[k] = LLVMGetParam(c->fn, (unsigned)k);
        int aliased = k + 1 < n_ops ? shares_output[k] : in_place;
        if (!aliased)
            LLVMAddAttributeAtIndex(c->fn, (unsigned)k + 1,
                                    LLVMCreateEnumAttribute(ctx, noalias, 0));
    }
    c->lo = LLVMGetParam(c->fn, (unsigned)n_ops);
    c->hi = LLVMGetParam(c->fn, (unsigned)n_ops + 1);
    c->b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(c->b, LLVMAppendBasicBlockInContext(ctx, c->fn, "entry"));
    LLVMValueRef offs[PX_FUSE_MAX_INPUTS + 1];
    for (int k = 0; k < n_ops; k++) offs[k] = LLVMConstInt(c->i64, 0, 0);
    emit_level(c, 0, offs);
    LLVMBuildRetVoid(c->b);
    LLVMDisposeBuilder(c->b);
    return c->fn;
}

/* px_fused_<index>_range(ptr ctx, i64 lo, i64 hi): the body over [lo, hi)
 * with the buffers read from ctx[0..n_ops), for px_parallel_for. */
static LLVMValueRef emit_range(fctx *c, int index, LLVMValueRef body) {
    LLVMContextRef ctx = c->ctx;
    LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0);
    int n_ops = c->f->n_inputs + 1;
    LLVMTypeRef params[3] = {ptr, c->i64, c->i64};
    char name[64];
    snprintf(name, sizeof name, "px_fused_%d_range", index);
    LLVMValueRef fn =
        LLVMAddFunction(c->m, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 3, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef B = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
    LLVMValueRef args[PX_FUSE_MAX_INPUTS + 3];
    for (int k = 0; k < n_ops; k++) {
        LLVMValueRef idx = LLVMConstInt(c->i64, (unsigned long long)k, 0);
        LLVMValueRef slot = LLVMBuildInBoundsGEP2(B, ptr, LLVMGetParam(fn, 0), &idx, 1, "");
        args[k] = LLVMBuildLoad2(B, ptr, slot, "");
    }
    args[n_ops] = LLVMGetParam(fn, 1);
    args[n_ops + 1] = LLVMGetParam(fn, 2);
    LLVMBuildCall2(B, LLVMGlobalGetValueType(body), body, args, (unsigned)n_ops + 2, "");
    LLVMBuildRetVoid(B);
    LLVMDisposeBuilder(B);
    return fn;
}

/* Loops this big are split over the rank's threads (px_parallel_for: each
 * element is computed by one thread with the same code, so the bits do not
 * depend on the thread count); smaller ones cost less than handing out. */
enum { PAR_MIN_ELEMENTS = 1 << 15 };

LLVMValueRef px_emit_fused_fn(LLVMContextRef ctx, LLVMModuleRef m, const px_fusion *f, int index,
                              const unsigned char *shares_output) {
    fctx c;
    memset(&c, 0, sizeof c);
    c.ctx = ctx;
    c.m = m;
    c.f = f;
    c.f32 = LLVMFloatTypeInContext(ctx);
    c.i1 = LLVMInt1TypeInContext(ctx);
    c.i8 = LLVMInt8TypeInContext(ctx);
    c.i64 = LLVMInt64TypeInContext(ctx);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0);
    int n_ops = f->n_inputs + 1;
    LLVMTypeRef params[PX_FUSE_MAX_INPUTS + 1];
    for (int k = 0; k < n_ops; k++) params[k] = ptr;
    char name[64];
    snprintf(name, sizeof name, "px_fused_%d", index);
    LLVMValueRef fn = LLVMAddFunction(
        m, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, (unsigned)n_ops, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef B = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
    make_nest(f, &c.ln);
    int64_t numel = px_shape_numel(&f->output->shape);
    if (numel > 0) {
        if (c.ln.rank == 0) { /* scalar: one iteration */
            c.ln.rank = 1;
            c.ln.dims[0] = 1;
        }
        LLVMValueRef body = emit_body(&c, index, shares_output);
        int64_t outer = c.ln.dims[0], inner = numel / outer;
        if (numel >= PAR_MIN_ELEMENTS && outer >= 2) {
            /* ctx: the buffers, for the range function */
            LLVMValueRef arr =
                LLVMBuildAlloca(B, LLVMArrayType(ptr, (unsigned)n_ops), "px_fused_ctx");
            for (int k = 0; k < n_ops; k++) {
                LLVMValueRef idx = LLVMConstInt(c.i64, (unsigned long long)k, 0);
                LLVMBuildStore(B, LLVMGetParam(fn, (unsigned)k),
                               LLVMBuildInBoundsGEP2(B, ptr, arr, &idx, 1, ""));
            }
            /* ~32k elements a piece; a flat loop's pieces start at multiples
             * of 64 so every piece's vector body covers the same elements */
            int64_t grain = ((int64_t)1 << 15) / inner;
            if (grain < 1) grain = 1;
            if (c.ln.rank == 1) grain = (grain + 63) / 64 * 64;
            LLVMTypeRef pf_params[4] = {c.i64, c.i64, ptr, ptr};
            LLVMTypeRef pf_ty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), pf_params, 4, 0);
            LLVMValueRef pf = LLVMGetNamedFunction(m, "px_parallel_for");
            if (!pf) pf = LLVMAddFunction(m, "px_parallel_for", pf_ty);
            LLVMValueRef args[4] = {LLVMConstInt(c.i64, (unsigned long long)outer, 0),
                                    LLVMConstInt(c.i64, (unsigned long long)grain, 0),
                                    emit_range(&c, index, body), arr};
            LLVMBuildCall2(B, pf_ty, pf, args, 4, "");
        } else {
            LLVMValueRef args[PX_FUSE_MAX_INPUTS + 3];
            for (int k = 0; k < n_ops; k++) args[k] = LLVMGetParam(fn, (unsigned)k);
            args[n_ops] = LLVMConstInt(c.i64, 0, 0);
            args[n_ops + 1] = LLVMConstInt(c.i64, (unsigned long long)outer, 0);
            LLVMBuildCall2(B, LLVMGlobalGetValueType(body), body, args, (unsigned)n_ops + 2, "");
        }
    }
    LLVMBuildRetVoid(B);
    LLVMDisposeBuilder(B);
    return fn;
}
