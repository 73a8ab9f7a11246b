/* Single-process stand-ins for the MPI side of checkpoint reading, for the
 * checkpoint fuzz harness only: rank 0 of 1, loading a variable copies
 * nothing anywhere but reads every value (so ASan sees the buffers). */
#include "px_train.h"

#include <stdint.h>

int px_comm_rank(void) {
    return 0;
}

void px_comm_var_gather(int64_t var, float *w, float *const slots[PX_OPTIM_MAX_SLOTS]) {
    (void)var;
    (void)w;
    (void)slots;
}

void px_comm_var_load(int64_t var, const float *w, const float *const slots[PX_OPTIM_MAX_SLOTS]) {
    extern const px_program_desc *px_fuzz_program;
    volatile float sink = 0;
    int64_t n = px_fuzz_program->vars[var].nbytes / 4;
    for (int64_t i = 0; i < n; i++) {
        sink += w[i];
        for (int k = 0; k < PX_OPTIM_MAX_SLOTS; k++)
            if (slots[k]) sink += slots[k][i];
    }
    (void)sink;
}
