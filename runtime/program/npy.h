/* NumPy .npy files: memory-mapped reading, writing. */
#ifndef PX_NPY_H
#define PX_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "npy_header.h"

/* Loads path into a; on failure returns -1 with a message in err. */
int px_npy_load(const char *path, px_array *a, char *err, size_t cap);
/* Writes a C-contiguous array. Atomic: temp file + rename. */
int px_npy_save(const char *path, int dtype, int rank, const int64_t *dims, const void *data,
                char *err, size_t cap);
/* Serialized ONNX TensorProto (raw_data or typed fields; no external data). */
int px_pb_load(const char *path, px_array *a, char *err, size_t cap);
void px_array_free(px_array *a);

#endif
