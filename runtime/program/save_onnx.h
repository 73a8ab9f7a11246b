/* --save OUT.onnx: the original model with the trained weights. */
#ifndef PX_SAVE_ONNX_H
#define PX_SAVE_ONNX_H

#include "px_program.h"

/* Trained initializers at or above this total are written as external data
 * (protobuf refuses messages of 2 GiB or more). */
#define PX_SAVE_INLINE_LIMIT 2147483647LL

/* Collective. Rank 0 writes px_program.onnx_base followed by one more
 * ModelProto `graph` field (7) holding a TensorProto initializer (GraphProto
 * field 5) per trainable variable: dims (1), data_type (2), name (8), and
 * either raw_data (9, little-endian float32) or, with external data,
 * external_data (13: location, offset, length) and data_location (14) =
 * EXTERNAL, the bytes in OUT.onnx.data (location relative to OUT.onnx).
 * Protobuf merges the second `graph` into the first, so readers see one
 * graph with the frozen initializers of the base plus the trained ones.
 * External data is used when `external` is set or when the model would
 * reach PX_SAVE_INLINE_LIMIT bytes. Parameter-server variables stream from
 * their shards to rank 0 in bounded chunks, partition by partition: no rank
 * holds a whole table. Each file is written to its .tmp and renamed (the
 * data file first). */
void px_save_onnx(const char *path, const px_program_desc *p, int external);
/* The same with another base (a ModelProto without the trained
 * initializers) and only the entries k with keep[k] set (keep NULL: all):
 * the variables v at k = v, then the tied copies t at k = n_vars + t. */
void px_save_model(const char *path, const px_program_desc *p, const uint8_t *base,
                   int64_t base_bytes, const char *keep, int external);
/* Whether px_save_model(.., base_bytes, keep, external) writes
 * OUT.onnx.data: asked for, or the model would reach PX_SAVE_INLINE_LIMIT. */
int px_save_is_external(const px_program_desc *p, int64_t base_bytes, const char *keep,
                        int external);

#endif
