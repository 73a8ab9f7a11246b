/* The step of a graph with very many kernel calls, emitted as data: a
 * table of calls (kernel, buffers, parameters) that the runtime's
 * px_step_table_run makes in order (runtime/px_step_table.h).
 *
 * Why: the ordinary step emits every call as code, and LLVM's optimization
 * and instruction selection then cost about 0.4 ms a call (100k nodes
 * trained: 200k calls, over a minute). As data the calls cost a few bytes
 * each, and code is emitted once per kernel and per fused loop. The calls,
 * their order, buffers and parameters are those of the ordinary step, so
 * the numbers are bit-identical; each call costs an indirect call and a
 * loop over its buffer references more at run time, which is why smaller
 * graphs keep the ordinary step. */
#include "emit_internal.h"

#include "fuse.h"
#include "px_step_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(PX_STEP_TABLE_MAX_BUFS == PX_KCALL_MAX_BUFS,
               "the runtime's argument array holds every buffer of a call");

/* Calls at which the step becomes a table: the ordinary step of 8192
 * calls takes LLVM about 3 s here, and a graph that large spends far more
 * in its kernels than the table's few nanoseconds a call. */
#define STEP_TABLE_MIN_CALLS 8192

int px_step_table_threshold(void) {
    /* PX_STEP_TABLE_MIN_CALLS=N (a positive integer): tests force the table
     * on small graphs, to compare its numbers with the ordinary step's. */
    const char *s = getenv("PX_STEP_TABLE_MIN_CALLS");
    if (s && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (!*end && v > 0 && v <= 1L << 30) return (int)v;
    }
    return STEP_TABLE_MIN_CALLS;
}

/* The kernels (and fused loops) the table calls, each once; runtime
 * kernels found by name through an open-addressing hash. */
typedef struct kernel_set {
    LLVMValueRef *fns;
    int n;
    int *slots; /* hash slot -> index into fns, -1 empty */
    size_t n_slots;
    const char **names; /* per fns entry; NULL for a fused loop */
} kernel_set;

static uint64_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int kernel_index(emitter *e, kernel_set *ks, const char *name) {
    size_t i = name_hash(name) & (ks->n_slots - 1);
    for (; ks->slots[i] >= 0; i = (i + 1) & (ks->n_slots - 1))
        if (!strcmp(ks->names[ks->slots[i]], name)) return ks->slots[i];
    LLVMValueRef fn = LLVMGetNamedFunction(e->m, name);
    if (!fn) {
        fn = LLVMAddFunction(e->m, name, e->kernel_ty);
        LLVMSetLinkage(fn, LLVMExternalLinkage);
    }
    ks->slots[i] = ks->n;
    ks->names[ks->n] = name;
    ks->fns[ks->n] = fn;
    return ks->n++;
}

/* A kernel-ABI function for fused call c: it passes the call's buffers to
 * the fused loop (which LLVM inlines into it). */
static int fused_index(emitter *e, kernel_set *ks, const px_kcall *k, int c) {
    LLVMValueRef loop = px_emit_fused_call_fn(e, k, c);
    char name[64];
    snprintf(name, sizeof name, "px_fused_call_%d", c);
    LLVMValueRef fn = LLVMAddFunction(e->m, name, e->kernel_ty);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(e->ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(e->ctx, fn, "entry"));
    LLVMValueRef args[PX_KCALL_MAX_BUFS];
    for (int i = 0; i < k->n_bufs; i++) {
        LLVMValueRef idx = LLVMConstInt(e->i64, (unsigned)i, 0);
        LLVMValueRef at = LLVMBuildInBoundsGEP2(b, e->ptr, LLVMGetParam(fn, 0), &idx, 1, "");
        args[i] = LLVMBuildLoad2(b, e->ptr, at, "");
    }
    LLVMBuildCall2(b, LLVMGlobalGetValueType(loop), loop, args, (unsigned)k->n_bufs, "");
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    ks->names[ks->n] = NULL;
    ks->fns[ks->n] = fn;
    return ks->n++;
}

/* The reference (base, offset) of one buffer of a call, as the ordinary
 * step reaches it: a loaded weight through its base slot, an embedded
 * constant at its global, a runtime buffer at its arena offset. */
static int buffer_ref(emitter *e, const px_value *v, int *global_of, LLVMValueRef *globals,
                      int *n_globals, px_i64_vec *refs, px_diag *d) {
    int64_t base = PX_STEP_REF_NULL, offset = 0;
    if (v && px_value_is_const(v)) {
        int w = e->wc.weight_of[v->id];
        if (w >= 0) {
            base = 1 + w;
        } else {
            if (global_of[v->id] < 0) {
                if (!(globals[*n_globals] = px_emit_embedded_global(e, v, d))) return -1;
                global_of[v->id] = (*n_globals)++;
            }
            base = PX_STEP_REF_GLOBAL - global_of[v->id];
        }
    } else if (v) {
        offset = e->mp->offset[v->id];
        if (offset < 0) return px_error(d, "internal error: value '%s' has no buffer", v->name);
        base = 0;
    }
    return px_i64_push(refs, base) || px_i64_push(refs, offset) ? px_error(d, "out of memory") : 0;
}

/* The calls' parameter lists, each stored once: a graph of many alike
 * nodes (a chain of 100k Adds and their gradients) repeats a few lists,
 * which the calls then share (a call only indexes its first parameter,
 * and kernels never write them). */
typedef struct param_lists {
    px_i64_vec all; /* the distinct lists, back to back */
    struct param_slot {
        uint64_t hash;
        int64_t at; /* start in all; -1: empty slot */
        int n;
    } * slots;
    size_t n_slots, n_lists;
} param_lists;

static uint64_t params_hash(const int64_t *p, int n) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++) h = (h ^ (uint64_t)p[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static void slot_put(struct param_slot *slots, size_t n_slots, struct param_slot s) {
    size_t j = s.hash & (n_slots - 1);
    while (slots[j].at >= 0) j = (j + 1) & (n_slots - 1);
    slots[j] = s;
}

/* The index in pl->all of a list equal to p[0..n), appended if new; -1
 * when out of memory. */
static int64_t params_index(param_lists *pl, const int64_t *p, int n) {
    if (2 * (pl->n_lists + 1) > pl->n_slots) {
        size_t n_slots = pl->n_slots ? 2 * pl->n_slots : 1024;
        struct param_slot *slots = malloc(n_slots * sizeof *slots);
        if (!slots) return -1;
        for (size_t j = 0; j < n_slots; j++) slots[j].at = -1;
        for (size_t j = 0; j < pl->n_slots; j++)
            if (pl->slots[j].at >= 0) slot_put(slots, n_slots, pl->slots[j]);
        free(pl->slots);
        pl->slots = slots;
        pl->n_slots = n_slots;
    }
    uint64_t h = params_hash(p, n);
    size_t j = h & (pl->n_slots - 1);
    for (; pl->slots[j].at >= 0; j = (j + 1) & (pl->n_slots - 1)) {
        const struct param_slot *s = &pl->slots[j];
        if (s->hash == h && s->n == n &&
            (!n || !memcmp(pl->all.v + s->at, p, (size_t)n * sizeof *p)))
            return s->at;
    }
    int64_t at = (int64_t)pl->all.n;
    for (int i = 0; i < n; i++)
        if (px_i64_push(&pl->all, p[i])) return -1;
    pl->slots[j] = (struct param_slot){h, at, n};
    pl->n_lists++;
    return at;
}

static LLVMValueRef data_global(emitter *e, const px_i64_vec *a, const char *name) {
    return px_emit_global_bytes(e, name, a->v, a->n * sizeof(int64_t), 1, 8);
}

int px_emit_step_table(emitter *e, const px_plan *plan, LLVMValueRef step, px_diag *d) {
    int n = plan->n_calls, rc = -1;
    px_i64_vec calls = {0}, refs = {0};
    param_lists params = {0};
    kernel_set ks = {0};
    for (ks.n_slots = 64; ks.n_slots < 2 * (size_t)n; ks.n_slots *= 2) continue;
    ks.fns = calloc((size_t)n + 1, sizeof *ks.fns);
    ks.names = calloc((size_t)n + 1, sizeof *ks.names);
    ks.slots = malloc(ks.n_slots * sizeof *ks.slots);
    int *global_of = malloc(((size_t)e->g->n_values + 1) * sizeof *global_of);
    LLVMValueRef *globals = calloc((size_t)e->g->n_values + 1, sizeof *globals);
    int n_globals = 0, staged = 0;
    if (!ks.fns || !ks.names || !ks.slots || !global_of || !globals) {
        px_error(d, "out of memory emitting the step table");
        goto cleanup;
    }
    memset(ks.slots, -1, ks.n_slots * sizeof *ks.slots);
    memset(global_of, -1, ((size_t)e->g->n_values + 1) * sizeof *global_of);
    for (int c = 0; c < n; c++) {
        const px_kcall *k = &plan->calls[c];
        int kernel = k->fusion ? fused_index(e, &ks, k, c) : kernel_index(e, &ks, k->kernel);
        /* --pp: as the ordinary step's guard (emit_llvm.c) */
        int64_t stage = k->node ? px_attr_int(k->node, "pp_stage", -1) : -1;
        staged |= stage >= 0;
        int64_t first_param = params_index(&params, k->params, k->n_params);
        if (first_param < 0 || px_i64_push(&calls, kernel) || px_i64_push(&calls, k->n_bufs) ||
            px_i64_push(&calls, first_param) || px_i64_push(&calls, (int64_t)refs.n) ||
            px_i64_push(&calls, stage < 0 ? -1 : stage)) {
            px_error(d, "out of memory emitting the step table");
            goto cleanup;
        }
        for (int i = 0; i < k->n_bufs; i++)
            if (buffer_ref(e, k->bufs[i], global_of, globals, &n_globals, &refs, d)) goto cleanup;
    }
    LLVMValueRef null = LLVMConstPointerNull(e->ptr), pp_stage = null;
    if (staged && !(pp_stage = LLVMGetNamedGlobal(e->m, "px_pp_stage"))) {
        pp_stage = LLVMAddGlobal(e->m, e->i64, "px_pp_stage");
        LLVMSetLinkage(pp_stage, LLVMExternalLinkage);
    }
    LLVMValueRef fields[8] = {
        LLVMConstInt(e->i64, (unsigned long long)n, 0),
        data_global(e, &calls, "px_step_calls"),
        data_global(e, &params.all, "px_step_params"),
        data_global(e, &refs, "px_step_refs"),
        ks.n ? px_emit_global_array(e, e->ptr, ks.fns, (unsigned)ks.n, "px_step_kernels") : null,
        n_globals ? px_emit_global_array(e, e->ptr, globals, (unsigned)n_globals, "px_step_globals")
                  : null,
        e->bases,
        pp_stage,
    };
    _Static_assert(sizeof(px_step_table) == 8 * 8, "px_step_table: 8 fields of 8 bytes");
    LLVMValueRef init = LLVMConstStructInContext(e->ctx, fields, 8, 0);
    LLVMValueRef table = LLVMAddGlobal(e->m, LLVMTypeOf(init), "px_step_table");
    LLVMSetInitializer(table, init);
    LLVMSetGlobalConstant(table, 1);
    LLVMSetLinkage(table, LLVMPrivateLinkage);

    LLVMTypeRef run_ty = LLVMFunctionType(e->voidt, &e->ptr, 1, 0);
    LLVMValueRef run = LLVMAddFunction(e->m, "px_step_table_run", run_ty);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(e->ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(e->ctx, step, "entry"));
    LLVMBuildCall2(b, run_ty, run, &table, 1, "");
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    rc = 0;
cleanup:
    free(calls.v);
    free(params.all.v);
    free(params.slots);
    free(refs.v);
    free(ks.fns);
    free(ks.names);
    free(ks.slots);
    free(global_of);
    free(globals);
    return rc;
}
