/* The op table (ir/ops.def) against the per-op tables generated from it
 * (ir/op.c asserts at compile time that flags and rule columns agree;
 * tests/cli/op_table_asserts.sh shows those assertions firing):
 *   - every op has a lowering or is marked PX_F_COMPILE_TIME, never both, and
 *     the folded stage really removes every compile-time op;
 *   - PX_F_ELEMWISE <=> the op can be fused into an elementwise loop, and
 *     every such op emits valid LLVM IR in a fused loop. */
#include "const_eval_internal.h"
#include "emit_fused.h"
#include "gradcheck.h"
#include "grad_internal.h"
#include "interp.h"
#include "lower.h"
#include "memplan.h"
#include "passes.h"
#include "shape_infer.h"

#include <criterion/criterion.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/ExecutionEngine.h>
#include <llvm-c/Target.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned flags_of(int op) {
    return px_op_table[op].flags;
}

Test(op_table, every_op_is_lowered_or_compile_time_only) {
    int lowered = 0, compile_time = 0;
    for (int op = 1; op < PX_OP_COUNT; op++) {
        int has = px_lowering_for((px_op)op) != NULL;
        int ct = (flags_of(op) & PX_F_COMPILE_TIME) != 0;
        cr_expect(has || ct, "op %s has no lowering and is not marked PX_F_COMPILE_TIME",
                  px_op_name((px_op)op));
        cr_expect(!(has && ct), "op %s is marked PX_F_COMPILE_TIME but has a lowering",
                  px_op_name((px_op)op));
        lowered += has;
        compile_time += ct;
    }
    cr_expect_eq(lowered + compile_time, PX_OP_COUNT - 1);
    cr_expect_geq(compile_time, 2, "If and Einsum are compile-time only");
}

/* ---- the folded stage removes every compile-time op ---- */

static int count_op(const px_graph *g, px_op op) {
    int k = 0;
    for (int i = 0; i < g->n_nodes; i++) k += !g->nodes[i]->dead && g->nodes[i]->op == op;
    return k;
}

static px_value *input(tg *t, const char *name, px_dtype dt, int rank, const int64_t *dims) {
    px_shape s = px_shape_make(rank, dims);
    px_value *v = px_graph_add_value(t->g, name, dt, &s, &t->d);
    px_graph_add_input(t->g, v);
    return v;
}

/* A supported Einsum becomes MatMul-like ops before code generation. */
static void einsum_is_rewritten(void) {
    tg *t = tg_new();
    int64_t ab[2] = {2, 3}, bc[2] = {3, 4};
    px_value *in[2] = {input(t, "a", PX_F32, 2, ab), input(t, "b", PX_F32, 2, bc)};
    px_node *n = tg_node(t, "Einsum", 2, in, 1);
    px_node_set_attr_string(n, "equation", "ij,jk->ik");
    px_graph_add_output(t->g, tg_out(t, n));
    cr_assert_eq(count_op(t->g, PX_OP_Einsum), 1);
    px_bindings b = {0};
    cr_assert_eq(px_pipeline_fold(t->g, &b, &t->d), 0, "%s", t->d.text);
    cr_expect_eq(count_op(t->g, PX_OP_Einsum), 0, "an Einsum reached code generation");
    tg_free(t);
}

/* An If whose condition is not a compile-time constant is refused by name
 * (one whose condition is constant is inlined: test_onnx_import.c). */
static void runtime_if_is_refused(void) {
    tg *t = tg_new();
    int64_t one[1] = {1}, two[1] = {2};
    px_value *cond = input(t, "cond", PX_BOOL, 0, one);
    px_value *x = input(t, "x", PX_F32, 1, two);
    px_value *out = px_graph_new_value(t->g, "y", PX_F32, &x->shape);
    px_graph_add_node(t->g, "If", "", "if0", 1, &cond, 1, &out);
    px_graph_add_output(t->g, out);
    px_bindings b = {0};
    cr_assert_eq(px_pipeline_fold(t->g, &b, &t->d), -1, "a run-time If was accepted");
    cr_expect(strstr(t->d.text, "if0") != NULL, "%s", t->d.text);
    tg_free(t);
}

Test(op_table, the_folded_stage_removes_every_compile_time_op) {
    static const struct {
        px_op op;
        void (*check)(void);
    } fixtures[] = {
        {PX_OP_Einsum, einsum_is_rewritten},
        {PX_OP_If, runtime_if_is_refused},
    };
    for (int op = 1; op < PX_OP_COUNT; op++) {
        if (!(flags_of(op) & PX_F_COMPILE_TIME)) continue;
        int found = 0;
        for (size_t i = 0; i < sizeof fixtures / sizeof *fixtures; i++)
            if ((int)fixtures[i].op == op) {
                fixtures[i].check();
                found = 1;
            }
        cr_expect(found, "compile-time op %s: add a fixture showing the folded stage removes it",
                  px_op_name((px_op)op));
    }
}

/* A node of a compile-time op that a rewrite missed is a compiler bug,
 * reported by name before code generation. */
Test(op_table, a_leftover_compile_time_node_is_reported) {
    tg *t = tg_new();
    int64_t two[1] = {2};
    px_value *x = input(t, "x", PX_F32, 1, two);
    px_value *y = px_graph_new_value(t->g, "y", PX_F32, &x->shape);
    px_graph_add_node(t->g, "Einsum", "", "left_over", 1, &x, 1, &y);
    px_diag d;
    px_diag_init(&d);
    cr_assert_eq(px_check_compile_time_ops(t->g, &d), -1);
    cr_expect(strstr(d.text, "left_over") && strstr(d.text, "Einsum"), "%s", d.text);
    tg_free(t);
}

/* ---- the generated tables answer for every op and nothing else ---- */

Test(op_table, rule_lookups_follow_the_op_table_columns) {
    cr_expect_null(px_lowering_for(PX_OP_UNKNOWN));
    cr_expect_null(px_grad_rule_for(PX_OP_UNKNOWN));
    cr_expect_null(px_lowering_for(PX_OP_COUNT));
    cr_expect_null(px_grad_rule_for(PX_OP_COUNT));
    cr_expect_not(px_const_eval_supports(PX_OP_UNKNOWN));
    /* one op of each kind of row: folded shape arithmetic, a kernel-only op */
    cr_expect(px_const_eval_supports(PX_OP_Add) && px_const_eval_supports(PX_OP_Shape));
    cr_expect_not(px_const_eval_supports(PX_OP_Conv));
    /* ops sharing a rule share the function */
    cr_expect_eq(px_lowering_for(PX_OP_Acos), px_lowering_for(PX_OP_Tanh));
    cr_expect_eq(px_grad_rule_for(PX_OP_Max), px_grad_rule_for(PX_OP_Min));
}

/* ---- PX_F_ELEMWISE <=> fusable ---- */

Test(op_table, elemwise_ops_are_exactly_the_fusable_ops) {
    for (int op = 1; op < PX_OP_COUNT; op++) {
        int elemwise = (flags_of(op) & PX_F_ELEMWISE) != 0;
        int fusable = px_fuse_signature((px_op)op) != NULL;
        cr_expect_eq(elemwise, fusable, "op %s: PX_F_ELEMWISE %d but fusion signature %s",
                     px_op_name((px_op)op), elemwise, fusable ? "present" : "absent");
    }
}

/* Runs the LLVM code of group f on the data of the graph inputs (vals[i]
 * holds data[i]), writing out. */
static void run_fused(const px_fusion *f, px_value *const *vals, px_tensor *const *data, int n,
                      px_tensor *out) {
    void *p[PX_FUSE_MAX_INPUTS + 1] = {0};
    for (int i = 0; i < f->n_inputs; i++)
        for (int j = 0; j < n; j++)
            if (f->inputs[i] == vals[j]) p[i] = data[j]->data;
    p[f->n_inputs] = out->data;
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef m = LLVMModuleCreateWithNameInContext("fused_test", ctx);
    unsigned char shares[PX_FUSE_MAX_INPUTS] = {0};
    LLVMValueRef fn = px_emit_fused_fn(ctx, m, f, 0, shares);
    LLVMSetLinkage(fn, LLVMExternalLinkage);
    char *err = NULL;
    cr_assert_eq(LLVMVerifyModule(m, LLVMReturnStatusAction, &err), 0, "invalid IR: %s", err);
    LLVMDisposeMessage(err);
    LLVMExecutionEngineRef ee;
    cr_assert_eq(LLVMCreateMCJITCompilerForModule(&ee, m, NULL, 0, &err), 0, "%s", err);
    uintptr_t addr = (uintptr_t)LLVMGetFunctionAddress(ee, "px_fused_0");
    cr_assert_neq(addr, 0);
    switch (f->n_inputs) {
    case 1: ((void (*)(void *, void *))addr)(p[0], p[1]); break;
    case 2: ((void (*)(void *, void *, void *))addr)(p[0], p[1], p[2]); break;
    case 3: ((void (*)(void *, void *, void *, void *))addr)(p[0], p[1], p[2], p[3]); break;
    default: cr_assert_fail("unexpected %d inputs", f->n_inputs);
    }
    LLVMDisposeExecutionEngine(ee); /* and the module */
    LLVMContextDispose(ctx);
}

/* [2, 8] of float32 in [-3, 3) (wide enough for every branch: x > 1,
 * x < -1...) starting with -1, -0.5, 0, 0.5, or of random bools. */
static px_tensor *random_tensor(px_dtype dt, const int64_t *dims) {
    px_tensor *x = tg_rand_tensor(dt, 2, dims, -3, 3);
    for (int64_t k = 0; k < px_tensor_numel(x); k++)
        if (dt == PX_BOOL)
            px_tensor_set_i64(x, k, tg_urand() < 0.5);
        else if (k < 4)
            px_tensor_set_f64(x, k, (double)k * 0.5 - 1);
    return x;
}

/* One node of op on [2, 8] operands typed by its fusion signature ('?' is a
 * float32 input and a bool output): the fused loop must agree with the
 * runtime kernel that the node lowers to without fusion. */
static void check_fused_matches_kernel(px_op op) {
    const char *sig = px_fuse_signature(op);
    int arity = (int)(strchr(sig, '>') - sig);
    tg *t = tg_new();
    int64_t dims[2] = {2, 8};
    px_value *in[4];
    px_tensor *data[4];
    int n_in = arity;
    char name[16];
    for (int i = 0; i < arity; i++) {
        px_dtype dt = sig[i] == 'b' ? PX_BOOL : PX_F32;
        snprintf(name, sizeof name, "x%d", i);
        in[i] = input(t, name, dt, 2, dims);
        /* wide enough for every branch (x > 1, x < -1), with exact zeros and halves */
        data[i] = random_tensor(dt, dims);
    }
    if (op == PX_OP_CastLike) { /* the dtype to cast to */
        in[n_in] = input(t, "like", PX_BOOL, 2, dims);
        data[n_in] = random_tensor(PX_BOOL, dims);
        n_in++;
    }
    px_node *n = tg_node(t, px_op_name(op), n_in, in, 1);
    if (op == PX_OP_Cast) px_node_set_attr_int(n, "to", PX_BOOL);
    if (op == PX_OP_Clip) {
        px_node_set_attr_float(n, "min", -0.5f); /* opset < 11 form; ignored from 11 */
        px_value *lo = px_graph_add_constant(t->g, "lo", tg_rand_tensor(PX_F32, 0, dims, -1, -1));
        px_node_add_input(n, lo);
    }
    px_value *y = tg_out(t, n);
    px_graph_add_output(t->g, y);
    cr_assert(px_fusable(t->g, n), "op %s (%s) is not fusable", px_op_name(op), sig);

    px_plan plan = {0};
    px_tensor **ref = NULL;
    cr_assert_eq(px_plan_build(t->g, &plan, &t->d), 0, "%s", t->d.text);
    cr_assert_eq(px_interp_run(t->g, &plan, data, &ref, &t->d), 0, "%s", t->d.text);
    cr_assert_eq(px_fuse_plan(t->g, &plan, &t->d), 1, "%s: no fused group", px_op_name(op));
    px_tensor *got = px_tensor_clone(ref[0], &t->d);
    memset(got->data, 0xff, (size_t)px_tensor_numel(got) * (y->dtype == PX_BOOL ? 1 : 4));
    run_fused(plan.calls[0].fusion, in, data, n_in, got);
    char msg[256];
    cr_expect(px_tensors_close(got, ref[0], 1e-6, 1e-5, msg, sizeof msg), "%s (%s): %s",
              px_op_name(op), sig, msg);
    px_tensor_free(got);
    px_tensor_free(ref[0]);
    free(ref);
    for (int i = 0; i < n_in; i++) px_tensor_free(data[i]);
    px_plan_free(&plan);
    tg_free(t);
}

Test(op_table, every_elemwise_op_fuses_and_matches_its_kernel) {
    LLVMLinkInMCJIT();
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    int checked = 0;
    for (int op = 1; op < PX_OP_COUNT; op++) {
        if (!(flags_of(op) & PX_F_ELEMWISE) || !px_fuse_signature((px_op)op)) continue;
        check_fused_matches_kernel((px_op)op);
        checked++;
    }
    cr_expect_geq(checked, 60);
}

/* A fused Greater reads its float [1, 2] operand (8 bytes, broadcast) four
 * times over while writing its bool [4, 2] output (8 bytes too): the output
 * must not take the operand's buffer, as a same-size float output would. */
Test(op_table, a_broadcast_operand_is_not_overwritten_in_place) {
    tg *t = tg_new();
    int64_t row[2] = {1, 2}, full[2] = {4, 2};
    px_value *x = input(t, "x", PX_F32, 2, row), *y = input(t, "y", PX_F32, 2, full);
    px_value *r = tg_op1(t, "Relu", x); /* an intermediate that dies at Greater */
    px_value *gt = tg_op2(t, "Greater", r, y);
    px_value *out = tg_op1(t, "Not", gt);
    px_graph_add_output(t->g, out);
    px_plan plan = {0};
    cr_assert_eq(px_plan_build(t->g, &plan, &t->d), 0, "%s", t->d.text);
    cr_assert_eq(px_fuse_plan(t->g, &plan, &t->d), 2, "Relu alone, Greater with Not");
    px_memplan mp = {0};
    cr_assert_eq(px_memplan_build(t->g, &plan, &mp, &t->d), 0, "%s", t->d.text);
    cr_expect_neq(mp.offset[r->id], -1);
    cr_expect_neq(mp.offset[r->id], mp.offset[out->id], "the bool output overwrote its operand");
    px_memplan_free(&mp);
    px_plan_free(&plan);
    tg_free(t);
}
