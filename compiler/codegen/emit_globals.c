/* The globals the LLVM emitter's files make: byte arrays, constant
 * arrays, embedded constants, fused loops, and the pooled constants of the
 * program descriptor.
 *
 * Pools: the names and dims of the descriptor's tables (inputs, outputs,
 * variables, weights) are slices of two byte arrays, not one global each.
 * A model of 100k weights otherwise makes 400k small globals, and LLVM's
 * global passes and its object writer spend seconds on them. The pool's
 * size is known only at the end, so slices point into a placeholder global
 * that px_emit_pools_finish replaces with the pool. */
#include "emit_internal.h"

#include "emit_fused.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

LLVMValueRef px_emit_global_bytes(emitter *e, const char *name, const void *data, size_t n,
                                  int is_const, unsigned align) {
    LLVMValueRef init = LLVMConstStringInContext2(e->ctx, data ? data : "", n, 1);
    LLVMValueRef gv = LLVMAddGlobal(e->m, LLVMTypeOf(init), name);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, is_const);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetAlignment(gv, align);
    return gv;
}

LLVMValueRef px_emit_global_array(emitter *e, LLVMTypeRef elem, LLVMValueRef *vals, unsigned n,
                                  const char *name) {
    LLVMValueRef init = LLVMConstArray2(elem, vals, n);
    LLVMValueRef gv = LLVMAddGlobal(e->m, LLVMTypeOf(init), name);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, 1);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    return gv;
}

/* An embedded constant: its own global (writable for a trained variable
 * that is not loaded from the model). */
LLVMValueRef px_emit_embedded_global(emitter *e, const px_value *v, px_diag *d) {
    if (!e->const_globals[v->id]) {
        char name[64];
        snprintf(name, sizeof name, "px_const_%d", v->id);
        if (v->dtype == PX_STRING) {
            px_error(d, "constant '%s' is a string tensor: not supported by the code generator",
                     v->name);
            return NULL;
        }
        /* Trained variables are written by the update kernels. */
        if (v->is_variable) snprintf(name, sizeof name, "px_var_%d", v->id);
        e->const_globals[v->id] = px_emit_global_bytes(e, name, v->data->data, v->data->nbytes,
                                                       !v->is_variable, PX_ARENA_ALIGN);
    }
    return e->const_globals[v->id];
}

LLVMValueRef px_emit_fused_call_fn(emitter *e, const px_kcall *k, int c) {
    unsigned char shares[PX_KCALL_MAX_BUFS] = {0};
    const px_value *out = k->bufs[k->n_bufs - 1];
    for (int i = 0; i + 1 < k->n_bufs; i++)
        shares[i] = !px_value_is_const(k->bufs[i]) && !px_value_is_const(out) &&
                    e->mp->offset[k->bufs[i]->id] == e->mp->offset[out->id];
    return px_emit_fused_fn(e->ctx, e->m, k->fusion, c, shares);
}

/* Appends n bytes at a multiple of align: their offset in the pool, or
 * (size_t)-1 when out of memory. */
static size_t pool_put(px_emit_pool *p, const void *data, size_t n, size_t align) {
    size_t at = (p->n + align - 1) & ~(align - 1);
    if (at + n > p->cap) {
        size_t cap = p->cap ? p->cap : 4096;
        while (cap < at + n) cap *= 2;
        char *b = realloc(p->bytes, cap);
        if (!b) return (size_t)-1;
        p->bytes = b;
        p->cap = cap;
    }
    memset(p->bytes + p->n, 0, at - p->n);
    if (n) memcpy(p->bytes + at, data, n);
    p->n = at + n;
    return at;
}

static LLVMValueRef pool_at(emitter *e, px_emit_pool *p, size_t at) {
    if (at == (size_t)-1) return NULL;
    if (!p->placeholder) p->placeholder = LLVMAddGlobal(e->m, e->i8, "px_pool_placeholder");
    LLVMValueRef idx = LLVMConstInt(e->i64, (unsigned long long)at, 0);
    return LLVMConstGEP2(e->i8, p->placeholder, &idx, 1);
}

LLVMValueRef px_emit_cstring(emitter *e, const char *s) {
    return pool_at(e, &e->strings, px_emit_cstring_offset(e, s));
}

LLVMValueRef px_emit_dims(emitter *e, const int64_t *dims, int n) {
    size_t at = px_emit_dims_index(e, dims, n);
    return pool_at(e, &e->ints, at == (size_t)-1 ? at : at * sizeof *dims);
}

size_t px_emit_cstring_offset(emitter *e, const char *s) {
    return pool_put(&e->strings, s, strlen(s) + 1, 1);
}

size_t px_emit_dims_index(emitter *e, const int64_t *dims, int n) {
    size_t at = pool_put(&e->ints, dims, (size_t)n * sizeof *dims, sizeof *dims);
    return at == (size_t)-1 ? at : at / sizeof *dims;
}

LLVMValueRef px_emit_strings_base(emitter *e) {
    return pool_at(e, &e->strings, 0);
}

LLVMValueRef px_emit_ints_base(emitter *e) {
    return pool_at(e, &e->ints, 0);
}

static void pool_finish(emitter *e, px_emit_pool *p, const char *name) {
    if (p->placeholder) {
        LLVMValueRef g = px_emit_global_bytes(e, name, p->bytes, p->n, 1, 8);
        LLVMReplaceAllUsesWith(p->placeholder, g);
        LLVMDeleteGlobal(p->placeholder);
        p->placeholder = NULL;
    }
    free(p->bytes);
    memset(p, 0, sizeof *p);
}

void px_emit_pools_finish(emitter *e) {
    pool_finish(e, &e->strings, "px_strings");
    pool_finish(e, &e->ints, "px_ints");
}

int px_i64_push(px_i64_vec *a, int64_t x) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 1024;
        int64_t *v = realloc(a->v, cap * sizeof *v);
        if (!v) return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}
