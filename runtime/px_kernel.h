/* The C ABI between generated code and runtime kernels.
 *
 * Every kernel has the signature
 *     void px_k_NAME(void *const *buf, const int64_t *p);
 * buf: data pointers of the tensors the kernel reads and writes, in the order
 *      documented at the kernel (usually: inputs, then outputs; an absent
 *      optional tensor is a NULL pointer).
 * p:   int64 parameters: tensor descriptors (px_kp_tensor layout below),
 *      attributes, floats as IEEE double bits (px_kp_f64).
 * Generated code keeps buf and p in constant globals, so a call costs nothing
 * to set up. The compiler writes p with px_kparams (compiler/lower.h) and the
 * kernel reads it back with px_kcur in the same order.
 *
 * Kernels never return errors for conditions the compiler has checked
 * (shapes, dtypes); data-dependent failures (an index out of range) call
 * px_rt_fail(), which ends the program with a message. */
#ifndef PX_KERNEL_H
#define PX_KERNEL_H

#include <stdint.h>
#include <string.h>

#define PX_K_MAX_RANK 16

typedef void (*px_kernel_fn)(void *const *buf, const int64_t *p);

/* Tensor descriptor layout in p: dtype, rank, dims[rank]. dtype values are
 * ONNX's TensorProto.DataType (1 float, 6 int32, 7 int64, 9 bool, 11 double...). */
typedef struct px_kt {
    int dtype;
    int rank;
    int64_t dims[PX_K_MAX_RANK];
    int64_t numel;
} px_kt;

typedef struct px_kcur {
    const int64_t *p;
} px_kcur;

static inline int64_t px_kp_i64(px_kcur *c) {
    return *c->p++;
}

static inline double px_kp_f64(px_kcur *c) {
    int64_t bits = *c->p++;
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

static inline px_kt px_kp_tensor(px_kcur *c) {
    px_kt t;
    t.dtype = (int)*c->p++;
    t.rank = (int)*c->p++;
    t.numel = 1;
    for (int i = 0; i < t.rank; i++) {
        t.dims[i] = *c->p++;
        t.numel *= t.dims[i];
    }
    return t;
}

/* Reads n int64 values into out (n <= cap is the compiler's promise). */
static inline void px_kp_ints(px_kcur *c, int64_t *out, int n) {
    for (int i = 0; i < n; i++) out[i] = *c->p++;
}

/* Ends the program with a message (rank-aware under MPI). Never returns. */
void px_rt_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* The kernel named name, NULL if none: for tests and tools that call
 * kernels by name (generated code calls them directly). Every px_k_
 * function of px_runtime is listed, found at build time (kernel_registry.c);
 * link px_kernel_registry to use it. */
px_kernel_fn px_kernel_find(const char *name);

#endif
