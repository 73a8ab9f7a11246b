/* The table-driven step: the contract between the code generator and the
 * runtime for graphs with very many kernel calls.
 *
 * A step of n calls is ordinarily emitted as n direct calls; LLVM's
 * optimization and code generation then cost time in proportion to n with
 * a large constant (about 0.4 ms a call), minutes at 100k nodes. Above a
 * threshold (compiler/codegen/emit_step_table.c) the compiler emits the
 * calls as constant data instead, and the step is one call of
 * px_step_table_run, which makes the same kernel calls, in the same order,
 * with the same buffers and parameters: the numbers are bit-identical.
 *
 * Every field is 8 bytes, so the compiler writes the struct as an array of
 * i64/ptr fields. */
#ifndef PX_STEP_TABLE_H
#define PX_STEP_TABLE_H

#include <stdint.h>

/* Longest buffer list of one call (compiler/codegen/lower.h's
 * PX_KCALL_MAX_BUFS; the compiler checks they agree). */
#define PX_STEP_TABLE_MAX_BUFS 32

/* A buffer reference's base: >= 0 indexes bases, PX_STEP_REF_NULL is an
 * absent optional tensor, and PX_STEP_REF_GLOBAL - j is globals[j]. */
#define PX_STEP_REF_NULL (-1)
#define PX_STEP_REF_GLOBAL (-2)

typedef struct px_step_table {
    int64_t n_calls;
    /* Per call, 5 values: kernel index, buffer count, index of its first
     * parameter in params, index of its first reference in refs, and the
     * --pp stage whose ranks make the call (-1: every rank). */
    const int64_t *calls;
    const int64_t *params;
    /* Per buffer, 2 values: base (above) and byte offset from it. */
    const int64_t *refs;
    /* the kernels (px_kernel.h's px_kernel_fn) and fused loops called */
    void (*const *kernels)(void *const *buf, const int64_t *p);
    void *const *globals; /* constants embedded in the program */
    void *const *bases;   /* the program's base pointers, read at every call */
    /* this rank's --pp stage (px_train.h's px_pp_stage); NULL: no call has one */
    const int64_t *pp_stage;
} px_step_table;

/* Runs the calls of t in order. */
void px_step_table_run(const px_step_table *t);

#endif
