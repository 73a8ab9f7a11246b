/* --save OUT.onnx: the original model with the trained weights. */
#ifndef PX_SAVE_ONNX_H
#define PX_SAVE_ONNX_H

#include "px_program.h"

/* Collective (gathers every variable to rank 0). Rank 0 writes
 * px_program.onnx_base followed by one more ModelProto `graph` field (7)
 * holding a TensorProto initializer (GraphProto field 5) per trainable
 * variable: dims (1), data_type (2), name (8), raw_data (9, little-endian
 * float32). Protobuf merges the second `graph` into the first, so readers see
 * one graph with the frozen initializers of the base plus the trained ones.
 * Written to OUT.tmp and renamed. */
void px_save_onnx(const char *path, const px_program_desc *p);

#endif
