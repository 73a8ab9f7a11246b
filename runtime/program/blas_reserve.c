#include "blas_reserve.h"

#include <cblas.h>
#include <stdlib.h>

/* Large enough that OpenBLAS splits the product over all of its threads
 * (each then takes its buffer), small enough to cost well under a
 * millisecond: 2 * 256^3 flops. */
enum { RESERVE_N = 256 };

void px_blas_reserve(void) {
    size_t n = (size_t)RESERVE_N * RESERVE_N;
    float *m = calloc(3 * n, sizeof *m);
    if (!m) return; /* the allocations that follow report the shortage */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, RESERVE_N, RESERVE_N, RESERVE_N, 1.0f, m,
                RESERVE_N, m + n, RESERVE_N, 0.0f, m + 2 * n, RESERVE_N);
    free(m);
}
