/* LLVM IR for a fused elementwise group: nested loops over the output's
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
    LLVMTypeRef f32, i64;
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

static LLVMValueRef emit_op(fctx *c, const px_fexpr *e, LLVMValueRef a, LLVMValueRef b) {
    LLVMBuilderRef B = c->b;
    switch (e->op) {
    case PX_OP_Add: return LLVMBuildFAdd(B, a, b, "");
    case PX_OP_Sub: return LLVMBuildFSub(B, a, b, "");
    case PX_OP_Mul: return LLVMBuildFMul(B, a, b, "");
    case PX_OP_Div: return LLVMBuildFDiv(B, a, b, "");
    case PX_OP_Pow: return call_f32_2(c, "powf", a, b);
    case PX_OP_Max: return nan_max(c, a, b, 0);
    case PX_OP_Min: return nan_max(c, a, b, 1);
    case PX_OP_Neg: return LLVMBuildFNeg(B, a, "");
    case PX_OP_Abs: return call_f32(c, "llvm.fabs.f32", a);
    case PX_OP_Relu: { /* x < 0 ? 0 : x keeps NaN */
        LLVMValueRef neg = LLVMBuildFCmp(B, LLVMRealOLT, a, fconst(c, 0), "");
        return LLVMBuildSelect(B, neg, fconst(c, 0), a, "");
    }
    case PX_OP_Sqrt: return call_f32(c, "llvm.sqrt.f32", a);
    case PX_OP_Exp: return call_f32(c, "llvm.exp.f32", a);
    case PX_OP_Log: return call_f32(c, "llvm.log.f32", a);
    case PX_OP_Floor: return call_f32(c, "llvm.floor.f32", a);
    case PX_OP_Ceil: return call_f32(c, "llvm.ceil.f32", a);
    case PX_OP_Tanh: return call_f32(c, "tanhf", a);
    case PX_OP_Erf: return call_f32(c, "erff", a);
    case PX_OP_Sigmoid: {
        LLVMValueRef ex = call_f32(c, "llvm.exp.f32", LLVMBuildFNeg(B, a, ""));
        return LLVMBuildFDiv(B, fconst(c, 1), LLVMBuildFAdd(B, fconst(c, 1), ex, ""), "");
    }
    case PX_OP_Reciprocal: return LLVMBuildFDiv(B, fconst(c, 1), a, "");
    case PX_OP_Identity: return a;
    case PX_OP_LeakyRelu: {
        LLVMValueRef neg = LLVMBuildFCmp(B, LLVMRealOLT, a, fconst(c, 0), "");
        return LLVMBuildSelect(B, neg, LLVMBuildFMul(B, a, fconst(c, e->alpha), ""), a, "");
    }
    case PX_OP_Elu: {
        LLVMValueRef neg = LLVMBuildFCmp(B, LLVMRealOLT, a, fconst(c, 0), "");
        LLVMValueRef em1 = LLVMBuildFSub(B, call_f32(c, "llvm.exp.f32", a), fconst(c, 1), "");
        return LLVMBuildSelect(B, neg, LLVMBuildFMul(B, em1, fconst(c, e->alpha), ""), a, "");
    }
    case PX_OP_Softplus: { /* log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)) */
        LLVMValueRef e =
            call_f32(c, "llvm.exp.f32", LLVMBuildFNeg(B, call_f32(c, "llvm.fabs.f32", a), ""));
        LLVMValueRef pos = LLVMBuildFCmp(B, LLVMRealOGT, a, fconst(c, 0), "");
        return LLVMBuildFAdd(B, LLVMBuildSelect(B, pos, a, fconst(c, 0), ""),
                             call_f32(c, "log1pf", e), "");
    }
    case PX_OP_Clip: {
        LLVMValueRef r = a;
        if (e->alpha != -INFINITY) {
            LLVMValueRef lo = LLVMBuildFCmp(B, LLVMRealOLT, r, fconst(c, e->alpha), "");
            r = LLVMBuildSelect(B, lo, fconst(c, e->alpha), r, "");
        }
        if (e->beta != INFINITY) {
            LLVMValueRef hi = LLVMBuildFCmp(B, LLVMRealOGT, r, fconst(c, e->beta), "");
            r = LLVMBuildSelect(B, hi, fconst(c, e->beta), r, "");
        }
        return r;
    }
    default: return NULL;
    }
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
                LLVMValueRef p =
                    LLVMBuildInBoundsGEP2(B, c->f32, c->ptrs[e->input], &inner[e->input], 1, "");
                vals[x] = LLVMBuildLoad2(B, c->f32, p, "");
            } else
                vals[x] = emit_op(c, e, vals[e->a], e->b >= 0 ? vals[e->b] : NULL);
        }
        LLVMValueRef p =
            LLVMBuildInBoundsGEP2(B, c->f32, c->ptrs[n_ops - 1], &inner[n_ops - 1], 1, "");
        LLVMBuildStore(B, vals[c->f->n_exprs - 1], p);
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
