/* Shared helpers of the MPI communication tests (tests/mpi/mpi_*.c, run by
 * tests/cli/mpi_comm.sh under mpirun). Each test builds its own
 * px_program_desc by hand and calls the px_comm API and the communication
 * kernels directly. */
#ifndef PX_MPI_TEST_H
#define PX_MPI_TEST_H

#include "px_kernel.h"
#include "px_program.h"
#include "px_train.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The communication kernels (runtime/comm/sched/kernels.c). */
void px_k_allreduce_start(void *const *buf, const int64_t *p);
void px_k_allreduce_wait(void *const *buf, const int64_t *p);
void px_k_ps_pull(void *const *buf, const int64_t *p);
void px_k_ps_pull_rows(void *const *buf, const int64_t *p);
void px_k_ps_push(void *const *buf, const int64_t *p);
void px_k_ps_push_dense(void *const *buf, const int64_t *p);

static int mt_failures, mt_checks;

/* CHECK(cond, fmt, ...): counts a check; prints the failure with the rank. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        mt_checks++;                                                                               \
        if (!(cond)) {                                                                             \
            mt_failures++;                                                                         \
            if (mt_failures <= 20) {                                                               \
                fprintf(stderr, "FAIL (rank %d) %s:%d: ", px_comm_rank(), __FILE__, __LINE__);     \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* FNV-1a of a buffer: equal bits on every rank <=> equal hashes. */
static inline uint64_t mt_hash(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

/* Ends the test: total failures over the ranks (through px_comm_mean, so
 * it needs no MPI header), a summary from rank 0, exit status. */
static inline int mt_finish(const char *name) {
    double total = px_comm_mean((double)mt_failures) * px_comm_size();
    double checks = px_comm_mean((double)mt_checks) * px_comm_size();
    int rank = px_comm_rank(), size = px_comm_size();
    px_comm_finalize();
    if (rank == 0)
        printf("%s (%d rank%s): %.0f checks, %.0f failed\n", name, size, size == 1 ? "" : "s",
               checks, total);
    return total > 0.5 ? 1 : 0;
}

/* Deterministic pseudo-random numbers (splitmix64). */
static inline uint64_t mt_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline float mt_uniform(uint64_t *s) { /* [-1, 1) */
    return (float)((double)(mt_rand(s) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* A PS or allreduce variable of `rows` x `dim` floats. */
static inline px_var_desc mt_var(const char *name, int64_t *dims, int64_t rows, int64_t dim,
                                 float *data, int64_t sync, int64_t partitions) {
    dims[0] = rows;
    dims[1] = dim;
    px_var_desc v = {name,          1,    2,          dims, data, rows * dim * 4,
                     PX_VAR_SPARSE, sync, partitions, -1,   1,    0};
    return v;
}

#endif
