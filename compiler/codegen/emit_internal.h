/* Shared by the LLVM emitter's files (emit_llvm.c, emit_step_table.c):
 * the emitter's state and the helpers that make globals. Private to
 * compiler/codegen. */
#ifndef PX_EMIT_INTERNAL_H
#define PX_EMIT_INTERNAL_H

#include "emit.h"
#include "emit_weights.h"

#include <llvm-c/Core.h>

/* Bytes that many constants are slices of (emit_pool.c). */
typedef struct px_emit_pool {
    char *bytes;
    size_t n, cap;
    LLVMValueRef placeholder; /* replaced by the pool's global at the end */
} px_emit_pool;

/* A growable int64 array (a table of numbers being made). */
typedef struct px_i64_vec {
    int64_t *v;
    size_t n, cap;
} px_i64_vec;

/* Appends x; -1 when out of memory. */
int px_i64_push(px_i64_vec *a, int64_t x);

typedef struct emitter {
    LLVMContextRef ctx;
    LLVMModuleRef m;
    LLVMTypeRef i8, i64, ptr, voidt, kernel_ty, io_ty;
    LLVMValueRef bases; /* [1 + n_weights x ptr]: the arena, then each weight */
    LLVMTypeRef bases_ty;
    LLVMValueRef *const_globals; /* per value id */
    const px_graph *g;
    const px_memplan *mp;
    px_weight_choice wc;
    const struct px_train_plan *train; /* training programs' plan, else NULL */
    px_emit_pool strings, ints;
    /* the packed tables' rows (emit_tables.c), NULL until made */
    LLVMValueRef packed_vars, packed_weights, var_data;
} emitter;

/* A private global holding n bytes of data (constant or not). */
LLVMValueRef px_emit_global_bytes(emitter *e, const char *name, const void *data, size_t n,
                                  int is_const, unsigned align);
/* A private constant array of n values of type elem. */
LLVMValueRef px_emit_global_array(emitter *e, LLVMTypeRef elem, LLVMValueRef *vals, unsigned n,
                                  const char *name);
/* A NUL-terminated string and an int64 array as pointers into the pools
 * (NULL when out of memory); px_emit_pools_finish makes the pools' globals
 * once nothing more is added. */
LLVMValueRef px_emit_cstring(emitter *e, const char *s);
LLVMValueRef px_emit_dims(emitter *e, const int64_t *dims, int n);
/* The same as a byte offset into the strings pool and an element offset
 * into the ints pool ((size_t)-1 when out of memory), for tables of
 * numbers; and the pools' starts. */
size_t px_emit_cstring_offset(emitter *e, const char *s);
size_t px_emit_dims_index(emitter *e, const int64_t *dims, int n);
LLVMValueRef px_emit_strings_base(emitter *e);
LLVMValueRef px_emit_ints_base(emitter *e);
void px_emit_pools_finish(emitter *e);
/* A table of the descriptor as emit_tables.c makes it: the zeroed table
 * the runtime fills, its packed rows (NULL: none), and (the variables')
 * the embedded storage the rows index (NULL: none). */
typedef struct px_emit_table {
    LLVMValueRef table, packed, data;
} px_emit_table;
/* The variables of a training plan; the weights the program loads (table
 * NULL when none). */
int px_emit_var_table(emitter *e, const struct px_train_plan *tp, px_emit_table *out, px_diag *d);
int px_emit_weight_table(emitter *e, px_emit_table *out, px_diag *d);

/* The global of a constant the program embeds (made on first use); NULL
 * with an error for one the code generator cannot embed. */
LLVMValueRef px_emit_embedded_global(emitter *e, const px_value *v, px_diag *d);
/* The fused loop function of call c (a call with a fusion), its inputs
 * that share the output's buffer marked. */
LLVMValueRef px_emit_fused_call_fn(emitter *e, const struct px_kcall *k, int c);

/* The calls of plan as a table run by the runtime (runtime/px_step_table.h),
 * the body of step. */
int px_emit_step_table(emitter *e, const px_plan *plan, LLVMValueRef step, px_diag *d);
/* Calls at which a step becomes a table; PX_STEP_TABLE_MIN_CALLS overrides. */
int px_step_table_threshold(void);

#endif
