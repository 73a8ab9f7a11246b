/* ONNX external data: tensor bytes kept in a file next to the model
 * (TensorProto.data_location = EXTERNAL). Used by the importer only. */
#ifndef PX_EXTERNAL_DATA_H
#define PX_EXTERNAL_DATA_H

#include "diag.h"
#include "tensor.h"

#include <stdint.h>

/* Tensors at least this large are mapped (copy-on-write) instead of read, so
 * multi-GiB weights cost no copy and no RAM until touched. */
#define PX_EXTERNAL_MMAP_MIN ((size_t)1 << 20)

/* Where a tensor's bytes live, parsed from TensorProto.external_data. */
typedef struct px_external_ref {
    const char *location; /* relative to the model's folder */
    int64_t offset;       /* 0 if absent */
    int64_t length;       /* -1 if absent: "to the end of the file" */
} px_external_ref;

/* Fills t->data (t->dtype/shape/nbytes already set, t->nbytes > 0) from the
 * file ref->location under base_dir. Rejects absolute locations and locations
 * that resolve (after symlinks) outside base_dir, offsets/lengths outside the
 * file, and a byte count different from t->nbytes. tensor_name is for
 * messages. Returns 0, or -1 with an error in d. */
int px_external_data_load(const char *base_dir, const char *tensor_name, const px_external_ref *ref,
                          px_tensor *t, px_diag *d);

#endif
