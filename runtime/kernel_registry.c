#include "px_kernel.h"

#include <string.h>

/* Every kernel of px_runtime: px_kernel_table.inc is generated at build
 * time from the archive's px_k_ symbols (runtime/kernel_table.cmake), so
 * a new kernel file registers itself. */
#define PX_KERNEL(name) void name(void *const *buf, const int64_t *p);
#include "px_kernel_table.inc"
#undef PX_KERNEL

static const struct {
    const char *name;
    px_kernel_fn fn;
} kernels[] = {
#define PX_KERNEL(name) {#name, name},
#include "px_kernel_table.inc"
#undef PX_KERNEL
};

px_kernel_fn px_kernel_find(const char *name) {
    for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++)
        if (strcmp(kernels[i].name, name) == 0) return kernels[i].fn;
    return NULL;
}
