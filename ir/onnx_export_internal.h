/* Private to the ONNX exporter (ir/onnx_export*.c): the build context shared
 * by the proto builder (onnx_export_graph.c) and the writer (onnx_export.c). */
#ifndef PX_ONNX_EXPORT_INTERNAL_H
#define PX_ONNX_EXPORT_INTERNAL_H

#include "graph.h"
#include "onnx.pb-c.h"

#include <stdint.h>

/* A TensorProto whose contents sit in raw_data: a candidate for external data. */
typedef struct px_export_blob {
    Onnx__TensorProto *proto;
    const uint8_t *data; /* what raw_data pointed at before moving out */
    size_t len;
    uint64_t offset; /* in the external file, once moved */
    int external;
} px_export_blob;

/* Everything the built ModelProto points at is either borrowed from the
 * px_graph (names, tensor data) or allocated here and freed at once. */
typedef struct px_export_ctx {
    px_diag *d;
    int64_t ir_version;
    void **allocs;
    size_t n_allocs, cap_allocs;
    px_export_blob *blobs;
    size_t n_blobs, cap_blobs;
} px_export_ctx;

/* Zero-filled memory owned by c; NULL with an error in c->d when out of memory. */
void *px_export_alloc(px_export_ctx *c, size_t size);
void px_export_ctx_free(px_export_ctx *c);

/* Builds the ModelProto for g (all tensors inline). NULL with an error in c->d. */
Onnx__ModelProto *px_export_build_model(px_export_ctx *c, const px_graph *g);

/* Packed models above this many bytes are rejected by protobuf parsers.
 * A variable (not a constant) only so that unit tests can exercise the
 * large-model path with small tensors. */
extern size_t px_export_proto_limit;

#endif
