/* The rnn kernels' scratch buffers (rnn_internal.h: px_rnn_scratch), shared
 * by the parameter decoding (rnn.c) and the cells (rnn_f32.c, rnn_f64.c). */
#include "rnn_internal.h"

#include <stdlib.h>

static struct {
    void *p;
    size_t cap;
} scratch[PX_RNN_SCRATCH_SLOTS];

void *px_rnn_scratch(int slot, size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (scratch[slot].cap < bytes) {
        free(scratch[slot].p);
        size_t cap = (bytes + 63) & ~(size_t)63; /* aligned_alloc needs a multiple of 64 */
        scratch[slot].p = aligned_alloc(64, cap);
        if (!scratch[slot].p) px_rt_fail("out of memory: rnn kernel scratch of %zu bytes", bytes);
        scratch[slot].cap = cap;
    }
    return scratch[slot].p;
}
