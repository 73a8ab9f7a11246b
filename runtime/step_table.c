#include "px_step_table.h"

#include <stddef.h>

void px_step_table_run(const px_step_table *t) {
    /* Kernels read their buffer pointers during the call and keep none,
     * so one array serves every call, as in the directly emitted step. */
    void *args[PX_STEP_TABLE_MAX_BUFS];
    for (int64_t c = 0; c < t->n_calls; c++) {
        const int64_t *call = t->calls + 5 * c;
        if (call[4] >= 0 && *t->pp_stage != call[4]) continue;
        const int64_t *ref = t->refs + call[3];
        for (int64_t i = 0; i < call[1]; i++) {
            int64_t base = ref[2 * i];
            char *p = base >= 0                  ? (char *)t->bases[base]
                      : base == PX_STEP_REF_NULL ? NULL
                                                 : (char *)t->globals[PX_STEP_REF_GLOBAL - base];
            args[i] = p ? p + ref[2 * i + 1] : NULL;
        }
        t->kernels[call[0]](args, t->params + call[2]);
    }
}
