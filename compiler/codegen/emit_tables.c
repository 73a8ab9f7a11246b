/* The descriptor's variable and weight tables, packed (px_program.h, ABI
 * 12): rows of numbers in one constant byte array each, and zeroed tables
 * the runtime fills from them at start (px_program_unpack).
 *
 * Why: as LLVM structs, a model of 100k weights made 200k structs holding
 * 500k pointers into the name and dims pools. LLVM's passes walk every one
 * of those constants, its object writer makes a relocation for each
 * pointer, the linker a dynamic relocation, and the program's loader
 * applies them: seconds of compile time. As numbers the tables are one
 * array of bytes each, which LLVM copies through. */
#include "emit_internal.h"

#include "px_program.h"
#include "train.h"

#include <stdlib.h>

#define VAR(field) PX_DESC_FIELD(px_var_desc, field)
#define WEIGHT(field) PX_DESC_FIELD(px_weight_desc, field)
enum { VAR_FIELDS = PX_DESC_FIELDS(px_var_desc), WEIGHT_FIELDS = PX_DESC_FIELDS(px_weight_desc) };
_Static_assert(VAR_FIELDS == 12 && WEIGHT_FIELDS == 6,
               "var_row and weight_row write every field of a packed row");

/* A private writable global of rows x fields zeroed int64 (at least one
 * row): the table the runtime fills. */
static LLVMValueRef zeroed_table(emitter *e, size_t rows, int fields, const char *name) {
    LLVMTypeRef ty = LLVMArrayType2(e->i64, (rows ? rows : 1) * (size_t)fields);
    LLVMValueRef gv = LLVMAddGlobal(e->m, ty, name);
    LLVMSetInitializer(gv, LLVMConstNull(ty));
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetAlignment(gv, 8);
    return gv;
}

static LLVMValueRef packed_rows(emitter *e, const px_i64_vec *rows, const char *name) {
    return px_emit_global_bytes(e, name, rows->v, rows->n * sizeof *rows->v, 1, 8);
}

/* Appends a row of n values whose name and dims offsets are made (not
 * (size_t)-1, out of memory); -1 when out of memory. */
static int push_row(px_i64_vec *rows, const int64_t *row, int n, int name, int dims) {
    if (row[name] < 0 || row[dims] < 0) return -1;
    for (int i = 0; i < n; i++)
        if (px_i64_push(rows, row[i])) return -1;
    return 0;
}

int px_emit_var_table(emitter *e, const px_train_plan *tp, px_emit_table *out, px_diag *d) {
    px_i64_vec rows = {0};
    LLVMValueRef *data = calloc((size_t)tp->n_vars + 1, sizeof *data);
    int n_data = 0, rc = -1;
    if (!data) goto oom;
    for (int i = 0; i < tp->n_vars; i++) {
        const px_train_var *tv = &tp->vars[i];
        const px_value *v = tv->value;
        int w = e->wc.weight_of[v->id];
        if (w < 0 && px_tp_stored(tv)) {
            px_error(d,
                     "--tp: variable '%s' is stored split, so it must be loaded from the model "
                     "file, which does not hold it as compiled",
                     v->name);
            goto cleanup;
        }
        if (w < 0 && !(data[n_data] = px_emit_embedded_global(e, v, d))) goto cleanup;
        int64_t row[VAR_FIELDS];
        row[VAR(name)] = (int64_t)px_emit_cstring_offset(e, v->name);
        row[VAR(dtype)] = v->dtype;
        row[VAR(rank)] = v->shape.rank;
        row[VAR(dims)] = (int64_t)px_emit_dims_index(e, v->shape.dims, v->shape.rank);
        row[VAR(data)] = w >= 0 ? -1 : n_data++;
        /* the storage: a variable stored split (--tp) holds its slab */
        row[VAR(nbytes)] = px_tp_stored(tv)
                               ? px_shape_numel(&v->shape) * (int64_t)px_dtype_size(v->dtype)
                               : (int64_t)v->data->nbytes;
        row[VAR(var_class)] = tv->cls; /* px_enums.h's values, as the runtime reads them */
        row[VAR(sync)] = tv->sync;
        row[VAR(partitions)] = tv->partitions;
        row[VAR(weight)] = w;
        row[VAR(local_storage)] = tv->row_cache_only ? 0 : 1;
        row[VAR(no_decay)] = tv->no_decay;
        if (push_row(&rows, row, VAR_FIELDS, VAR(name), VAR(dims))) goto oom;
    }
    out->table = zeroed_table(e, (size_t)tp->n_vars, VAR_FIELDS, "px_vars");
    out->packed = tp->n_vars ? packed_rows(e, &rows, "px_vars_packed") : NULL;
    out->data =
        n_data ? px_emit_global_array(e, e->ptr, data, (unsigned)n_data, "px_var_data") : NULL;
    rc = 0;
    goto cleanup;
oom:
    px_error(d, "out of memory emitting the variable table");
cleanup:
    free(rows.v);
    free(data);
    return rc;
}

int px_emit_weight_table(emitter *e, px_emit_table *out, px_diag *d) {
    const px_train_plan *tp = e->train;
    px_i64_vec rows = {0};
    for (int w = 0; w < e->wc.n_weights; w++) {
        const px_value *v = e->wc.weights[w];
        /* as the model holds it, whole (a variable stored split by --tp
         * included) */
        int var = tp ? px_plan_var_of(tp, v) : -1;
        const px_shape *s =
            var >= 0 && px_tp_stored(&tp->vars[var]) ? &tp->vars[var].tp_full : &v->shape;
        int64_t row[WEIGHT_FIELDS];
        row[WEIGHT(name)] = (int64_t)px_emit_cstring_offset(e, v->name);
        row[WEIGHT(dtype)] = v->dtype;
        row[WEIGHT(rank)] = s->rank;
        row[WEIGHT(dims)] = (int64_t)px_emit_dims_index(e, s->dims, s->rank);
        row[WEIGHT(nbytes)] = (int64_t)v->data->nbytes;
        row[WEIGHT(slot)] = 1 + w; /* px_bases[1 + w] (emit_llvm.c) */
        if (push_row(&rows, row, WEIGHT_FIELDS, WEIGHT(name), WEIGHT(dims))) {
            free(rows.v);
            return px_error(d, "out of memory emitting the weight table");
        }
    }
    out->table = e->wc.n_weights
                     ? zeroed_table(e, (size_t)e->wc.n_weights, WEIGHT_FIELDS, "px_weights")
                     : NULL;
    out->packed = e->wc.n_weights ? packed_rows(e, &rows, "px_weights_packed") : NULL;
    out->data = NULL;
    free(rows.v);
    return 0;
}
