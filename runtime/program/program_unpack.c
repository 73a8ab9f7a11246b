/* The descriptor's packed variable and weight tables (px_program.h, ABI
 * 12) made into the structs the runtime reads. */
#include "px_program.h"

_Static_assert(PX_DESC_FIELDS(px_var_desc) == 12 && PX_DESC_FIELDS(px_weight_desc) == 6,
               "px_program_unpack reads every field of a packed row");

#define VAR(field) PX_DESC_FIELD(px_var_desc, field)
#define WEIGHT(field) PX_DESC_FIELD(px_weight_desc, field)

void px_program_unpack(const px_program_desc *p) {
    for (int64_t i = 0; p->packed_vars && i < p->n_vars; i++) {
        const int64_t *f = p->packed_vars + i * (int64_t)PX_DESC_FIELDS(px_var_desc);
        p->vars[i] = (px_var_desc){
            .name = p->strings + f[VAR(name)],
            .dtype = f[VAR(dtype)],
            .rank = f[VAR(rank)],
            .dims = p->ints + f[VAR(dims)],
            .data = f[VAR(data)] < 0 ? NULL : p->var_data[f[VAR(data)]],
            .nbytes = f[VAR(nbytes)],
            .var_class = f[VAR(var_class)],
            .sync = f[VAR(sync)],
            .partitions = f[VAR(partitions)],
            .weight = f[VAR(weight)],
            .local_storage = f[VAR(local_storage)],
            .no_decay = f[VAR(no_decay)],
        };
    }
    /* The weights' storage is the program's writable zeroed table that
     * the descriptor reads as constant once filled. */
    px_weight_desc *weights = (px_weight_desc *)p->weights;
    for (int64_t i = 0; p->packed_weights && i < p->n_weights; i++) {
        const int64_t *f = p->packed_weights + i * (int64_t)PX_DESC_FIELDS(px_weight_desc);
        weights[i] = (px_weight_desc){
            .name = p->strings + f[WEIGHT(name)],
            .dtype = f[WEIGHT(dtype)],
            .rank = f[WEIGHT(rank)],
            .dims = p->ints + f[WEIGHT(dims)],
            .nbytes = f[WEIGHT(nbytes)],
            .slot = p->arena + f[WEIGHT(slot)],
        };
    }
}
