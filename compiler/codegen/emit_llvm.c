/* Emits the program as an LLVM module: a step function calling the kernels
 * in order, and the px_program descriptor. Buffers are reached through a
 * table of base pointers the runtime fills at start (px_bases: [0] the
 * arena, [1 + w] weight w, read from the model), so the executable holds
 * neither the weights nor the arena; only small compiler-made constants are
 * embedded as globals. Kernel parameters are constant tables. */
#include "emit_internal.h"
#include "file_atomic.h"
#include "emit_fused.h"
#include "weights_source.h"

#include "px_program.h"
#include "train.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The descriptor structs as LLVM structs of 8-byte fields: the count, and
 * the index of a named field, come from px_program.h's C structs. */
#define PROGRAM_FIELD(field) PX_DESC_FIELD(px_program_desc, field)
enum {
    PROGRAM_FIELDS = PX_DESC_FIELDS(px_program_desc),
    IO_FIELDS = PX_DESC_FIELDS(px_io_desc),
    OPTIM_FIELDS = PX_DESC_FIELDS(px_optim_desc),
    INDEX_CHECK_FIELDS = PX_DESC_FIELDS(px_index_check),
    MASKED_FIELDS = PX_DESC_FIELDS(px_masked_desc),
    TIED_FIELDS = PX_DESC_FIELDS(px_tied_desc),
};
/* Each group of fields below is written by one function; a field added to
 * a struct must be written there (these fail until it is). */
_Static_assert(PROGRAM_FIELD(kind) == 8 && PROGRAM_FIELD(onnx_base_bytes) == 18 &&
                   PROGRAM_FIELD(index_checks) == 20 && PROGRAM_FIELD(weights_path) == 21 &&
                   PROGRAM_FIELD(arena) == 26 && PROGRAM_FIELD(compile_info) == 27 &&
                   PROGRAM_FIELD(infer_base_bytes) == 29 && PROGRAM_FIELD(n_masked) == 30 &&
                   PROGRAM_FIELD(n_tied) == 32 && PROGRAM_FIELD(tp) == 34 &&
                   PROGRAM_FIELD(pp) == 36 && PROGRAM_FIELD(bucket_slab) == 37 &&
                   PROGRAM_FIELD(var_tp_sections) == 38 && PROGRAM_FIELD(packed_vars) == 39 &&
                   PROGRAM_FIELD(var_pp_stage) == 44 && PROGRAM_FIELDS == 47,
               "emit_module, training_fields, weight_fields, model_fields, masked_fields, "
               "tied_fields, tp_fields, packed_fields and pp_fields write every px_program_desc "
               "field");
_Static_assert(IO_FIELDS == 8 && OPTIM_FIELDS == 9 && INDEX_CHECK_FIELDS == 6 &&
                   MASKED_FIELDS == 12 && TIED_FIELDS == 5,
               "io_desc, training_fields, index_checks, masked_entry and tied_entry write every "
               "field");

/* Where a value's buffer is: at *slot + offset (slot: the base pointer it is
 * reached through), or at a fixed global (an embedded constant). */
typedef struct buf_ref {
    LLVMValueRef slot; /* NULL: global */
    int64_t offset;
    LLVMValueRef global;
} buf_ref;

static LLVMValueRef base_slot(emitter *e, int base) {
    LLVMValueRef idx[2] = {LLVMConstInt(e->i64, 0, 0), LLVMConstInt(e->i64, (unsigned)base, 0)};
    return LLVMConstInBoundsGEP2(e->bases_ty, e->bases, idx, 2);
}

static int value_ref(emitter *e, const px_value *v, buf_ref *r, px_diag *d) {
    memset(r, 0, sizeof *r);
    if (px_value_is_const(v)) {
        int w = e->wc.weight_of[v->id];
        if (w >= 0) {
            r->slot = base_slot(e, 1 + w);
            return 0;
        }
        r->global = px_emit_embedded_global(e, v, d);
        return r->global ? 0 : -1;
    }
    int64_t off = e->mp->offset[v->id];
    if (off < 0) return px_error(d, "internal error: value '%s' has no buffer", v->name);
    r->slot = base_slot(e, 0);
    r->offset = off;
    return 0;
}

/* The buffer's address computed in the step: the base pointer is loaded
 * at every use, so the runtime may move a buffer between steps. */
static LLVMValueRef step_address(emitter *e, LLVMBuilderRef b, const px_value *v, px_diag *d) {
    buf_ref r;
    if (value_ref(e, v, &r, d)) return NULL;
    if (!r.slot) return r.global;
    LLVMValueRef base = LLVMBuildLoad2(b, e->ptr, r.slot, "");
    if (!r.offset) return base;
    LLVMValueRef idx = LLVMConstInt(e->i64, (unsigned long long)r.offset, 0);
    return LLVMBuildInBoundsGEP2(b, e->i8, base, &idx, 1, "");
}

static LLVMValueRef io_desc(emitter *e, const px_value *v, px_diag *d) {
    LLVMValueRef dims_g = px_emit_dims(e, v->shape.dims, v->shape.rank);
    buf_ref r;
    if (value_ref(e, v, &r, d)) return NULL;
    LLVMValueRef null = LLVMConstPointerNull(e->ptr);
    int64_t numel = px_shape_numel(&v->shape);
    LLVMValueRef fields[IO_FIELDS] = {
        px_emit_cstring(e, v->name),
        LLVMConstInt(e->i64, (unsigned long long)v->dtype, 0),
        LLVMConstInt(e->i64, (unsigned long long)v->shape.rank, 0),
        dims_g,
        r.slot ? null : r.global,
        LLVMConstInt(e->i64, (unsigned long long)(numel * (int64_t)px_dtype_size(v->dtype)), 0),
        r.slot ? r.slot : null,
        LLVMConstInt(e->i64, (unsigned long long)r.offset, 0),
    };
    return LLVMConstNamedStruct(e->io_ty, fields, IO_FIELDS);
}

static LLVMValueRef io_table(emitter *e, px_value *const *vals, int n, const char *name,
                             px_diag *d) {
    LLVMValueRef *descs = calloc((size_t)n + 1, sizeof *descs);
    for (int i = 0; i < n; i++)
        if (!(descs[i] = io_desc(e, vals[i], d))) {
            free(descs);
            return NULL;
        }
    LLVMValueRef gv = px_emit_global_array(e, e->io_ty, descs, (unsigned)n, name);
    LLVMSetGlobalConstant(gv, 0); /* the loader sets each data pointer */
    free(descs);
    return gv;
}

/* Calls per part of the step. LLVM's passes answer "which instruction
 * comes first" within a basic block by renumbering the block, which a
 * graph of n nodes in one block makes O(n^2) over the optimization:
 * 25,000 calls took minutes. The step is split into parts of this many
 * calls each, its own function (kept apart: noinline), called in order. */
#define CALLS_PER_PART 256

static LLVMValueRef i64c(emitter *e, int64_t v) {
    return LLVMConstInt(e->i64, (unsigned long long)v, 1);
}

/* --pp: a call of a node with pp_stage runs only on that stage's ranks
 * (px_pp_stage, set by the runtime). Returns the block after the call, or
 * NULL when the call is not guarded. */
static LLVMBasicBlockRef pp_guard(emitter *e, LLVMBuilderRef b, LLVMValueRef fn,
                                  const px_kcall *k) {
    int64_t stage = k->node ? px_attr_int(k->node, "pp_stage", -1) : -1;
    if (stage < 0) return NULL;
    LLVMValueRef cur = LLVMGetNamedGlobal(e->m, "px_pp_stage");
    if (!cur) {
        cur = LLVMAddGlobal(e->m, e->i64, "px_pp_stage");
        LLVMSetLinkage(cur, LLVMExternalLinkage);
    }
    LLVMValueRef here = LLVMBuildLoad2(b, e->i64, cur, "");
    LLVMValueRef mine = LLVMBuildICmp(b, LLVMIntEQ, here, i64c(e, stage), "");
    LLVMBasicBlockRef run = LLVMAppendBasicBlockInContext(e->ctx, fn, "pp_run");
    LLVMBasicBlockRef after = LLVMAppendBasicBlockInContext(e->ctx, fn, "pp_after");
    LLVMBuildCondBr(b, mine, run, after);
    LLVMPositionBuilderAtEnd(b, run);
    return after;
}

/* Kernel call k (call number c of the plan) at b. */
static int emit_call(emitter *e, LLVMBuilderRef b, const px_kcall *k, int c, LLVMTypeRef args_ty,
                     LLVMValueRef args_arr, px_diag *d) {
    LLVMValueRef bufs[PX_KCALL_MAX_BUFS];
    for (int i = 0; i < k->n_bufs; i++) {
        bufs[i] = k->bufs[i] ? step_address(e, b, k->bufs[i], d) : LLVMConstPointerNull(e->ptr);
        if (!bufs[i]) return -1;
    }
    if (k->fusion) {
        LLVMValueRef ffn = px_emit_fused_call_fn(e, k, c);
        LLVMBuildCall2(b, LLVMGlobalGetValueType(ffn), ffn, bufs, (unsigned)k->n_bufs, "");
        return 0;
    }
    LLVMValueRef *params = malloc(sizeof *params * ((size_t)k->n_params + 1));
    for (int i = 0; i < k->n_params; i++)
        params[i] = LLVMConstInt(e->i64, (unsigned long long)k->params[i], 1);
    for (int i = 0; i < k->n_bufs; i++) {
        LLVMValueRef idx[2] = {LLVMConstInt(e->i64, 0, 0), LLVMConstInt(e->i64, (unsigned)i, 0)};
        LLVMBuildStore(b, bufs[i], LLVMBuildInBoundsGEP2(b, args_ty, args_arr, idx, 2, ""));
    }
    LLVMValueRef params_g =
        px_emit_global_array(e, e->i64, params, (unsigned)k->n_params, "px_params");
    free(params);
    LLVMValueRef kfn = LLVMGetNamedFunction(e->m, k->kernel);
    if (!kfn) {
        kfn = LLVMAddFunction(e->m, k->kernel, e->kernel_ty);
        LLVMSetLinkage(kfn, LLVMExternalLinkage);
    }
    LLVMValueRef args[2] = {args_arr, params_g};
    LLVMBuildCall2(b, e->kernel_ty, kfn, args, 2, "");
    return 0;
}

/* The calls [c0, c1) of the plan as the body of fn. */
static int emit_step_part(emitter *e, const px_plan *plan, int c0, int c1, LLVMValueRef fn,
                          px_diag *d) {
    LLVMBuilderRef b = LLVMCreateBuilderInContext(e->ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(e->ctx, fn, "entry"));
    /* One argument array for every kernel call: kernels read their buffer
     * pointers during the call and keep none of them. */
    LLVMTypeRef args_ty = LLVMArrayType2(e->ptr, PX_KCALL_MAX_BUFS);
    LLVMValueRef args_arr = LLVMBuildAlloca(b, args_ty, "bufs");
    int rc = -1;
    for (int c = c0; c < c1; c++) {
        const px_kcall *k = &plan->calls[c];
        LLVMBasicBlockRef after = pp_guard(e, b, fn, k);
        rc = emit_call(e, b, k, c, args_ty, args_arr, d);
        if (after) {
            LLVMBuildBr(b, after);
            LLVMPositionBuilderAtEnd(b, after);
        }
        if (rc) goto cleanup;
    }
    LLVMBuildRetVoid(b);
    rc = 0;
cleanup:
    LLVMDisposeBuilder(b);
    return rc;
}

static int emit_step(emitter *e, const px_plan *plan, LLVMValueRef step, px_diag *d) {
    if (plan->n_calls >= px_step_table_threshold()) return px_emit_step_table(e, plan, step, d);
    if (plan->n_calls <= CALLS_PER_PART) return emit_step_part(e, plan, 0, plan->n_calls, step, d);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(e->ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(e->ctx, step, "entry"));
    LLVMTypeRef part_ty = LLVMFunctionType(e->voidt, NULL, 0, 0);
    LLVMAttributeRef noinline =
        LLVMCreateEnumAttribute(e->ctx, LLVMGetEnumAttributeKindForName("noinline", 8), 0);
    int rc = 0;
    for (int c0 = 0; c0 < plan->n_calls && !rc; c0 += CALLS_PER_PART) {
        int c1 = c0 + CALLS_PER_PART < plan->n_calls ? c0 + CALLS_PER_PART : plan->n_calls;
        char name[64];
        snprintf(name, sizeof name, "px_step_part_%d", c0 / CALLS_PER_PART);
        LLVMValueRef part = LLVMAddFunction(e->m, name, part_ty);
        LLVMSetLinkage(part, LLVMInternalLinkage);
        LLVMAddAttributeAtIndex(part, LLVMAttributeFunctionIndex, noinline);
        rc = emit_step_part(e, plan, c0, c1, part, d);
        LLVMBuildCall2(b, part_ty, part, NULL, 0, "");
    }
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    return rc;
}

static LLVMValueRef f64c(emitter *e, double v) {
    return LLVMConstReal(LLVMDoubleTypeInContext(e->ctx), v);
}

/* The graph input that is v, or -1. */
static int graph_input_of(const px_graph *g, const px_value *v) {
    if (!v || v->kind != PX_VALUE_INPUT) return -1;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == v) return i;
    return -1;
}

/* The graph input holding the user's offsets of an EmbeddingBag's
 * SegmentReduce (ir/control_flow_embedding_bag.c): its starts are the
 * offsets themselves (include_last_offset) or Concat(offsets, [count]). */
static int bag_offsets_input(const px_graph *g, const px_node *nd) {
    if (nd->op != PX_OP_SegmentReduce || !px_attr_int(nd, "offsets", 0) || nd->n_inputs < 3 ||
        !nd->inputs[0] || !nd->inputs[1])
        return -1;
    const px_value *starts = nd->inputs[1];
    const px_node *cat = starts->producer;
    if (cat && cat->op == PX_OP_Concat && cat->n_inputs >= 1 && px_attr_int(cat, "axis", 0) == 0)
        starts = cat->inputs[0];
    return graph_input_of(g, starts);
}

/* The inputs the loader checks (px_index_check): graph inputs that are the
 * indices of a Gather on axis 0 of an initializer, and those that are an
 * EmbeddingBag's offsets. Sparse tables (parameter-server rows) take
 * [0, rows); other tables ONNX's [-rows, rows); offsets [0, count of the
 * bag's indices]. */
static int index_checks(emitter *e, const px_codegen_opts *o, LLVMValueRef *table, int64_t *count) {
    const px_graph *g = e->g;
    LLVMValueRef *rows = calloc((size_t)g->n_nodes + 1, sizeof *rows);
    if (!rows) return -1;
    int n = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        const px_node *nd = g->nodes[k];
        if (nd->dead) continue;
        int bag = bag_offsets_input(g, nd);
        if (bag >= 0) {
            /* the bag's rows: Gather(table, indices), one per index */
            const px_value *bag_rows = nd->inputs[0];
            const px_node *gather = bag_rows->producer;
            const char *tbl = gather && gather->n_inputs > 0 && gather->inputs[0]
                                  ? gather->inputs[0]->name
                                  : bag_rows->name;
            int64_t indices = bag_rows->shape.rank >= 1 ? bag_rows->shape.dims[0] : 0;
            LLVMValueRef f[INDEX_CHECK_FIELDS] = {i64c(e, bag),
                                                  i64c(e, 0),
                                                  i64c(e, indices + 1),
                                                  px_emit_cstring(e, nd->name ? nd->name : ""),
                                                  px_emit_cstring(e, tbl),
                                                  i64c(e, PX_CHECK_BAG_OFFSETS)};
            rows[n++] = LLVMConstStructInContext(e->ctx, f, INDEX_CHECK_FIELDS, 0);
            continue;
        }
        /* A sparse PS variable's Gather reads its pull's row cache: the pull
         * has the variable and the batch's indices. */
        int pull = nd->op == PX_OP_PSPull && nd->n_outputs == 2;
        if ((nd->op != PX_OP_Gather && !pull) || nd->n_inputs < 2) continue;
        const px_value *data = nd->inputs[0], *idx = nd->inputs[1];
        if (!data || !idx || idx->kind != PX_VALUE_INPUT || px_attr_int(nd, "axis", 0) != 0 ||
            !px_value_is_const(data) || data->shape.rank < 1)
            continue;
        int input = graph_input_of(g, idx);
        int var = o->train ? px_plan_var_of(o->train, data) : -1;
        int sparse = var >= 0 && o->train->vars[var].sync == PX_SYNC_PS;
        int64_t r = data->shape.dims[0];
        const px_node *gather = pull && nd->outputs[1]->n_uses ? nd->outputs[1]->uses[0].node : nd;
        LLVMValueRef f[INDEX_CHECK_FIELDS] = {i64c(e, input),
                                              i64c(e, sparse ? 0 : -r),
                                              i64c(e, r),
                                              px_emit_cstring(e, gather->name ? gather->name : ""),
                                              px_emit_cstring(e, data->name),
                                              i64c(e, PX_CHECK_GATHER_INDICES)};
        rows[n++] = LLVMConstStructInContext(e->ctx, f, INDEX_CHECK_FIELDS, 0);
    }
    *count = n;
    *table = n ? px_emit_global_array(e, LLVMTypeOf(rows[0]), rows, (unsigned)n, "px_index_checks")
               : LLVMConstPointerNull(e->ptr);
    free(rows);
    return 0;
}

/* Fields kind.. of px_program_desc (ABI 2), f[0] being kind; zeros for an
 * inference program. */
static int training_fields(emitter *e, const px_codegen_opts *o, LLVMValueRef *f, px_diag *d) {
    const px_train_plan *tp = o->train;
    const px_graph *g = e->g;
    int64_t batch = g->batch; /* bound with the input shapes (passes/bind_shapes.c) */
    LLVMValueRef null = LLVMConstPointerNull(e->ptr);
    LLVMValueRef checks;
    int64_t n_checks = 0;
    if (index_checks(e, o, &checks, &n_checks)) return px_error(d, "out of memory");
    f[PROGRAM_FIELD(n_index_checks) - PROGRAM_FIELD(kind)] = i64c(e, n_checks);
    f[PROGRAM_FIELD(index_checks) - PROGRAM_FIELD(kind)] = checks;
    if (!tp) {
        LLVMValueRef z[11] = {i64c(e, PX_PROGRAM_INFER),
                              i64c(e, -1),
                              i64c(e, batch),
                              i64c(e, 0),
                              null,
                              null,
                              i64c(e, 0),
                              i64c(e, 0),
                              null,
                              null,
                              i64c(e, 0)};
        memcpy(f, z, sizeof z);
        return 0;
    }
    const px_train_config *c = o->train_cfg;
    int loss_output = -1;
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == tp->loss) loss_output = i;
    if (loss_output < 0)
        return px_error(d, "internal error: the loss '%s' is not a graph output", tp->loss->name);
    px_emit_table vars;
    if (px_emit_var_table(e, tp, &vars, d)) return -1;
    e->packed_vars = vars.packed;
    e->var_data = vars.data;
    LLVMValueRef of[OPTIM_FIELDS] = {
        i64c(e, c->optimizer), f64c(e, c->lr),           f64c(e, c->momentum),
        i64c(e, c->nesterov),  f64c(e, c->beta1),        f64c(e, c->beta2),
        f64c(e, c->epsilon),   f64c(e, c->weight_decay), f64c(e, c->alpha)};
    LLVMValueRef optim_init = LLVMConstStructInContext(e->ctx, of, OPTIM_FIELDS, 0);
    LLVMValueRef optim = LLVMAddGlobal(e->m, LLVMTypeOf(optim_init), "px_optim");
    LLVMSetInitializer(optim, optim_init);
    LLVMSetGlobalConstant(optim, 1);
    LLVMSetLinkage(optim, LLVMPrivateLinkage);
    LLVMValueRef *bb = calloc((size_t)tp->n_buckets + 1, sizeof *bb);
    for (int i = 0; i < tp->n_buckets; i++) bb[i] = i64c(e, tp->bucket_bytes[i]);
    LLVMValueRef buckets =
        tp->n_buckets ? px_emit_global_array(e, e->i64, bb, (unsigned)tp->n_buckets, "px_buckets")
                      : null;
    free(bb);
    LLVMValueRef base =
        px_emit_global_bytes(e, "px_onnx_base", o->onnx_base, o->onnx_base_bytes, 1, 8);
    LLVMValueRef t[11] = {i64c(e, PX_PROGRAM_TRAIN),
                          i64c(e, loss_output),
                          i64c(e, batch),
                          i64c(e, tp->n_vars),
                          vars.table,
                          optim,
                          i64c(e, c->comm == PX_COMM_MODE_AUTO ? PX_COMM_MODE_HYBRID : c->comm),
                          i64c(e, tp->n_buckets),
                          buckets,
                          base,
                          i64c(e, (int64_t)o->onnx_base_bytes)};
    memcpy(f, t, sizeof t);
    return 0;
}

/* Builds the constant struct for entry i of a table of items. */
typedef LLVMValueRef (*table_entry_fn)(emitter *e, const void *items, int i);

/* A private constant array of the n structs entry() builds, or a null
 * pointer when n is 0; NULL when out of memory. */
static LLVMValueRef struct_table(emitter *e, const void *items, int n, table_entry_fn entry,
                                 const char *name) {
    if (!n) return LLVMConstPointerNull(e->ptr);
    LLVMValueRef *descs = calloc((size_t)n, sizeof *descs);
    if (!descs) return NULL;
    for (int i = 0; i < n; i++) descs[i] = entry(e, items, i);
    LLVMValueRef table = px_emit_global_array(e, LLVMTypeOf(descs[0]), descs, (unsigned)n, name);
    free(descs);
    return table;
}

/* Two program fields: a count and its table (null when the count is 0). */
static int counted_table(emitter *e, const void *items, int n, table_entry_fn entry,
                         const char *name, LLVMValueRef *f, px_diag *d) {
    f[0] = i64c(e, n);
    f[1] = struct_table(e, items, n, entry, name);
    return f[1] ? 0 : px_error(d, "out of memory");
}

/* Fields weights_path.. of px_program_desc (ABI 3): where the weights come
 * from. */
static int weight_fields(emitter *e, const px_codegen_opts *o, LLVMValueRef *f, px_diag *d) {
    LLVMValueRef null = LLVMConstPointerNull(e->ptr);
    const px_wsrc *src = o->weights_src;
    int64_t n_nodes = src ? src->m.n_nodes : 0;
    LLVMValueRef hashes = null;
    if (n_nodes) {
        int64_t *h = calloc((size_t)n_nodes, sizeof *h);
        if (!h) return px_error(d, "out of memory");
        for (int64_t i = 0; i < n_nodes; i++) h[i] = (int64_t)src->m.nodes[i].hash;
        hashes = px_emit_global_bytes(e, "px_node_hashes", h, (size_t)n_nodes * sizeof *h, 1, 8);
        free(h);
    }
    px_emit_table weights;
    if (px_emit_weight_table(e, &weights, d)) return -1;
    e->packed_weights = weights.packed;
    f[0] = o->weights_path ? px_emit_cstring(e, o->weights_path) : null;
    f[1] = i64c(e, n_nodes);
    f[2] = hashes;
    f[3] = i64c(e, e->wc.n_weights);
    f[4] = weights.table ? weights.table : null;
    f[5] = base_slot(e, 0);
    return 0;
}

/* Fields compile_info.. of px_program_desc (ABI 4): what the compiler knew
 * (training programs) and the eval-mode model --save-infer completes. */
static void model_fields(emitter *e, const px_codegen_opts *o, LLVMValueRef *f) {
    LLVMValueRef null = LLVMConstPointerNull(e->ptr);
    f[0] = o->compile_info ? px_emit_cstring(e, o->compile_info) : null;
    f[1] = o->infer_base
               ? px_emit_global_bytes(e, "px_infer_base", o->infer_base, o->infer_base_bytes, 1, 8)
               : null;
    f[2] = i64c(e, o->infer_base ? (int64_t)o->infer_base_bytes : 0);
}

/* px_masked_desc of an entry of the plan's masked table. */
static LLVMValueRef masked_entry(emitter *e, const void *items, int i) {
    const px_masked_plan *m = (const px_masked_plan *)items + i;
    LLVMValueRef mf[MASKED_FIELDS] = {
        i64c(e, m->var),
        i64c(e, m->out),
        i64c(e, m->in),
        i64c(e, m->w_in_major),
        i64c(e, m->nnz),
        f64c(e, m->sparsity),
        i64c(e, m->pattern),
        i64c(e, m->pa),
        i64c(e, m->pb),
        i64c(e, m->init),
        i64c(e, (int64_t)m->seed),
        i64c(e, m->dense_path),
    };
    return LLVMConstStructInContext(e->ctx, mf, MASKED_FIELDS, 0);
}

/* px_tied_desc of a tied copy --save writes from its variable. */
static LLVMValueRef tied_entry(emitter *e, const void *items, int i) {
    const px_train_tie *t = (const px_train_tie *)items + i;
    const px_shape *s = &t->copy->shape;
    LLVMValueRef perm[PX_MAX_RANK + 1];
    for (int k = 0; k < t->n_perm; k++) perm[k] = i64c(e, t->perm[k]);
    LLVMValueRef tf[TIED_FIELDS] = {
        px_emit_cstring(e, t->copy->name),
        i64c(e, t->var),
        i64c(e, s->rank),
        px_emit_dims(e, s->dims, s->rank),
        t->n_perm ? px_emit_global_array(e, e->i64, perm, (unsigned)t->n_perm, "px_tied_perm")
                  : LLVMConstPointerNull(e->ptr),
    };
    return LLVMConstStructInContext(e->ctx, tf, TIED_FIELDS, 0);
}

/* Fields n_masked, masked (ABI 5) and n_tied, tied (ABI 6) of
 * px_program_desc: the masked weights and the tied copies (training
 * programs; empty tables otherwise). */
static int masked_fields(emitter *e, const px_codegen_opts *o, LLVMValueRef *f, px_diag *d) {
    const px_train_plan *tp = o->train;
    return counted_table(e, tp ? tp->masked : NULL, tp ? tp->n_masked : 0, masked_entry,
                         "px_masked", f, d);
}

static int tied_fields(emitter *e, const px_codegen_opts *o, LLVMValueRef *f, px_diag *d) {
    const px_train_plan *tp = o->train;
    return counted_table(e, tp ? tp->tied : NULL, tp ? tp->n_tied : 0, tied_entry, "px_tied", f, d);
}

/* Fields tp, var_tp_axis, pp, bucket_slab, var_tp_sections of
 * px_program_desc (ABI 8 to 11): --tp, the axis each variable stored split
 * is split on (-1: whole; NULL: none split), --pp, which buckets hold slabs
 * (NULL: none) and the sections of each variable stored split (NULL: none
 * has more than one). */
static int tp_fields(emitter *e, const px_codegen_opts *o, LLVMValueRef *f, px_diag *d) {
    const px_train_plan *tp = o->train;
    f[0] = i64c(e, tp && tp->tp > 1 ? tp->tp : 1);
    f[1] = f[3] = f[4] = LLVMConstPointerNull(e->ptr);
    f[2] = i64c(e, tp && tp->pp > 1 ? tp->pp : 1);
    int any = 0, sections = 0;
    for (int i = 0; tp && i < tp->n_vars; i++) {
        any |= px_tp_stored(&tp->vars[i]);
        sections |= px_tp_stored(&tp->vars[i]) && tp->vars[i].tp_sections > 1;
    }
    if (!any) return 0;
    int n = tp->n_vars > tp->n_buckets ? tp->n_vars : tp->n_buckets;
    LLVMValueRef *row = calloc((size_t)n + 1, sizeof *row);
    if (!row) return px_error(d, "out of memory");
    for (int i = 0; i < tp->n_vars; i++)
        row[i] = i64c(e, px_tp_stored(&tp->vars[i]) ? tp->vars[i].tp_axis : -1);
    f[1] = px_emit_global_array(e, e->i64, row, (unsigned)tp->n_vars, "px_var_tp_axis");
    for (int i = 0; sections && i < tp->n_vars; i++)
        row[i] = i64c(e, tp->vars[i].tp_sections > 1 ? tp->vars[i].tp_sections : 1);
    if (sections)
        f[4] = px_emit_global_array(e, e->i64, row, (unsigned)tp->n_vars, "px_var_tp_sections");
    for (int b = 0; b < tp->n_buckets; b++) row[b] = i64c(e, tp->bucket_slab[b]);
    if (tp->n_buckets)
        f[3] = px_emit_global_array(e, e->i64, row, (unsigned)tp->n_buckets, "px_bucket_slab");
    free(row);
    return 0;
}

/* Fields var_pp_stage, bucket_pp_stage (ABI 13) and pp_arena_bytes (ABI
 * 14) of px_program_desc: under --pp, the stage holding each variable and
 * reducing each bucket, and each stage's arena (NULL without --pp). */
static int pp_fields(emitter *e, const px_codegen_opts *o, LLVMValueRef *f, px_diag *d) {
    const px_train_plan *tp = o->train;
    f[0] = f[1] = f[2] = LLVMConstPointerNull(e->ptr);
    if (!tp || tp->pp <= 1) return 0;
    int n = tp->n_vars > tp->n_buckets ? tp->n_vars : tp->n_buckets;
    if (tp->pp > n) n = tp->pp;
    LLVMValueRef *row = calloc((size_t)n + 1, sizeof *row);
    if (!row) return px_error(d, "out of memory");
    for (int i = 0; i < tp->n_vars; i++) row[i] = i64c(e, tp->vars[i].pp_stage);
    if (tp->n_vars)
        f[0] = px_emit_global_array(e, e->i64, row, (unsigned)tp->n_vars, "px_var_pp_stage");
    for (int b = 0; tp->bucket_stage && b < tp->n_buckets; b++)
        row[b] = i64c(e, tp->bucket_stage[b]);
    if (tp->bucket_stage && tp->n_buckets)
        f[1] = px_emit_global_array(e, e->i64, row, (unsigned)tp->n_buckets, "px_bucket_pp_stage");
    /* the buffer plan as inspect's report sees it: one rule for a stage's arena */
    const px_memory_report arena = {.arena_bytes = e->mp->arena_bytes,
                                    .n_stages = e->mp->n_stages,
                                    .stage_arena_bytes = e->mp->stage_bytes};
    for (int s = 0; s < tp->pp; s++) row[s] = i64c(e, px_memory_report_arena(&arena, s));
    f[2] = px_emit_global_array(e, e->i64, row, (unsigned)tp->pp, "px_pp_arena_bytes");
    free(row);
    return 0;
}

/* Fields packed_vars.. of px_program_desc (ABI 12): the packed tables'
 * rows (emit_tables.c) and the pools their numbers index. */
static void packed_fields(emitter *e, LLVMValueRef *f) {
    LLVMValueRef null = LLVMConstPointerNull(e->ptr);
    int packed = e->packed_vars || e->packed_weights;
    f[0] = e->packed_vars ? e->packed_vars : null;
    f[1] = e->packed_weights ? e->packed_weights : null;
    f[2] = packed ? px_emit_strings_base(e) : null;
    f[3] = packed ? px_emit_ints_base(e) : null;
    f[4] = e->var_data ? e->var_data : null;
}

static int emit_module(emitter *e, const px_plan *plan, const px_codegen_opts *o, px_diag *d) {
    const px_graph *g = e->g;
    e->train = o->train;
    if (px_choose_weights(g, plan, o, &e->wc, d)) return -1;
    e->bases_ty = LLVMArrayType2(e->ptr, (uint64_t)e->wc.n_weights + 1);
    e->bases = LLVMAddGlobal(e->m, e->bases_ty, "px_bases");
    LLVMSetInitializer(e->bases, LLVMConstNull(e->bases_ty));
    LLVMSetLinkage(e->bases, LLVMInternalLinkage);
    LLVMSetAlignment(e->bases, PX_ARENA_ALIGN);

    LLVMTypeRef step_ty = LLVMFunctionType(e->voidt, NULL, 0, 0);
    LLVMValueRef step = LLVMAddFunction(e->m, "px_step", step_ty);
    LLVMSetLinkage(step, LLVMInternalLinkage);
    if (emit_step(e, plan, step, d)) return -1;

    LLVMValueRef ins = io_table(e, g->inputs, g->n_inputs, "px_inputs", d);
    LLVMValueRef outs = ins ? io_table(e, g->outputs, g->n_outputs, "px_outputs", d) : NULL;
    if (!outs) return -1;
    LLVMValueRef fields[PROGRAM_FIELDS] = {
        LLVMConstInt(e->i64, PX_PROGRAM_ABI, 0),
        px_emit_cstring(e, o->model_path ? o->model_path : g->name),
        LLVMConstInt(e->i64, (unsigned long long)g->n_inputs, 0),
        ins,
        LLVMConstInt(e->i64, (unsigned long long)g->n_outputs, 0),
        outs,
        step,
        LLVMConstInt(e->i64, (unsigned long long)e->mp->arena_bytes, 0),
    };
    if (training_fields(e, o, fields + PROGRAM_FIELD(kind), d) ||
        weight_fields(e, o, fields + PROGRAM_FIELD(weights_path), d) ||
        masked_fields(e, o, fields + PROGRAM_FIELD(n_masked), d) ||
        tied_fields(e, o, fields + PROGRAM_FIELD(n_tied), d) ||
        tp_fields(e, o, fields + PROGRAM_FIELD(tp), d) ||
        pp_fields(e, o, fields + PROGRAM_FIELD(var_pp_stage), d))
        return -1;
    model_fields(e, o, fields + PROGRAM_FIELD(compile_info));
    packed_fields(e, fields + PROGRAM_FIELD(packed_vars));
    LLVMTypeRef prog_fields[PROGRAM_FIELDS];
    for (int i = 0; i < PROGRAM_FIELDS; i++) prog_fields[i] = LLVMTypeOf(fields[i]);
    LLVMTypeRef prog_ty = LLVMStructTypeInContext(e->ctx, prog_fields, PROGRAM_FIELDS, 0);
    LLVMValueRef prog = LLVMAddGlobal(e->m, prog_ty, "px_program");
    LLVMSetInitializer(prog, LLVMConstStructInContext(e->ctx, fields, PROGRAM_FIELDS, 0));
    LLVMSetGlobalConstant(prog, 1);
    return 0;
}

static LLVMTargetMachineRef host_machine(int opt_level, px_diag *d) {
    static int initialized;
    if (!initialized) {
        LLVMInitializeNativeTarget();
        LLVMInitializeNativeAsmPrinter();
        initialized = 1;
    }
    char *triple = LLVMGetDefaultTargetTriple(), *err = NULL;
    LLVMTargetRef target;
    LLVMTargetMachineRef tm = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &err)) {
        px_error(d, "LLVM has no target for '%s': %s", triple, err);
        LLVMDisposeMessage(err);
    } else {
        char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
        LLVMCodeGenOptLevel lvl = opt_level <= 0   ? LLVMCodeGenLevelNone
                                  : opt_level == 1 ? LLVMCodeGenLevelLess
                                  : opt_level == 2 ? LLVMCodeGenLevelDefault
                                                   : LLVMCodeGenLevelAggressive;
        /* PIC: Debian's toolchain links position-independent executables. */
        tm = LLVMCreateTargetMachine(target, triple, cpu, features, lvl, LLVMRelocPIC,
                                     LLVMCodeModelDefault);
        LLVMDisposeMessage(cpu);
        LLVMDisposeMessage(features);
        if (!tm) px_error(d, "LLVM could not create a target machine for '%s'", triple);
    }
    LLVMDisposeMessage(triple);
    return tm;
}

/* PX_EMIT_LLVM=FILE: the module as text, written as every output is
 * (common/file_atomic.h). */
static int write_llvm_text(LLVMModuleRef m, const char *path, px_diag *d) {
    char *text = LLVMPrintModuleToString(m), err[4400];
    px_atomic_file a;
    int rc = px_atomic_open(&a, path, err, sizeof err);
    if (!rc && fputs(text, a.f) == EOF) {
        px_atomic_abort(&a);
        snprintf(err, sizeof err, "cannot write %s: %s", path, strerror(errno));
        rc = -1;
    } else if (!rc) {
        rc = px_atomic_commit(&a, err, sizeof err);
    }
    LLVMDisposeMessage(text);
    return rc ? px_error(d, "PX_EMIT_LLVM: %s", err) : 0;
}

int px_emit_object(const px_graph *g, const px_plan *plan, const px_memplan *mp,
                   const px_codegen_opts *o, const char *obj_path, px_diag *d) {
    int rc = -1;
    emitter e = {0};
    e.g = g;
    e.mp = mp;
    e.ctx = LLVMContextCreate();
    e.m = LLVMModuleCreateWithNameInContext("parallax", e.ctx);
    e.i8 = LLVMInt8TypeInContext(e.ctx);
    e.i64 = LLVMInt64TypeInContext(e.ctx);
    e.ptr = LLVMPointerTypeInContext(e.ctx, 0);
    e.voidt = LLVMVoidTypeInContext(e.ctx);
    LLVMTypeRef kargs[2] = {e.ptr, e.ptr};
    e.kernel_ty = LLVMFunctionType(e.voidt, kargs, 2, 0);
    LLVMTypeRef io_fields[IO_FIELDS] = {e.ptr, e.i64, e.i64, e.ptr, e.ptr, e.i64, e.ptr, e.i64};
    e.io_ty = LLVMStructCreateNamed(e.ctx, "px_io_desc");
    LLVMStructSetBody(e.io_ty, io_fields, IO_FIELDS, 0);
    e.const_globals = calloc((size_t)g->n_values + 1, sizeof *e.const_globals);
    LLVMTargetMachineRef tm = host_machine(o->opt_level, d);
    LLVMPassBuilderOptionsRef pbo = LLVMCreatePassBuilderOptions();
    char *err = NULL;
    if (!tm || !e.const_globals) goto cleanup;
    char *triple = LLVMGetTargetMachineTriple(tm);
    LLVMSetTarget(e.m, triple);
    LLVMDisposeMessage(triple);
    LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
    char *layout_str = LLVMCopyStringRepOfTargetData(layout);
    LLVMSetDataLayout(e.m, layout_str);
    LLVMDisposeMessage(layout_str);
    LLVMDisposeTargetData(layout);

    if (emit_module(&e, plan, o, d)) goto cleanup;
    px_emit_pools_finish(&e);
    if (LLVMVerifyModule(e.m, LLVMReturnStatusAction, &err)) {
        px_error(d, "internal error: generated LLVM module is invalid: %s", err);
        goto cleanup;
    }
    LLVMDisposeMessage(err);
    err = NULL;
    char passes[32];
    snprintf(passes, sizeof passes, "default<O%d>",
             o->opt_level < 0   ? 0
             : o->opt_level > 3 ? 3
                                : o->opt_level);
    LLVMErrorRef perr = LLVMRunPasses(e.m, passes, tm, pbo);
    if (perr) {
        char *msg = LLVMGetErrorMessage(perr);
        px_error(d, "LLVM optimization failed: %s", msg);
        LLVMDisposeErrorMessage(msg);
        goto cleanup;
    }
    if (o->emit_llvm && write_llvm_text(e.m, o->emit_llvm, d)) goto cleanup;
    if (LLVMTargetMachineEmitToFile(tm, e.m, obj_path, LLVMObjectFile, &err)) {
        px_error(d, "LLVM could not write object file '%s': %s", obj_path, err);
        goto cleanup;
    }
    rc = 0;
cleanup:
    if (err) LLVMDisposeMessage(err);
    LLVMDisposePassBuilderOptions(pbo);
    if (tm) LLVMDisposeTargetMachine(tm);
    free(e.const_globals);
    free(e.strings.bytes);
    free(e.ints.bytes);
    px_weight_choice_free(&e.wc);
    LLVMDisposeModule(e.m);
    LLVMContextDispose(e.ctx);
    return rc;
}
