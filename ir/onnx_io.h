/* ONNX import and export (protobuf-c). The IR never holds protobuf pointers. */
#ifndef PX_ONNX_IO_H
#define PX_ONNX_IO_H

#include "graph.h"

typedef struct px_import_opts {
    /* 0 (default): any node whose (domain, op_type) is not in the op table, or
     * that carries a subgraph (If/Loop/Scan), fails the import with one error
     * listing every such node by name and op. 1: keep them as PX_OP_UNKNOWN. */
    int allow_unsupported;
} px_import_opts;

/* Loads a model file. External data is resolved relative to the model's folder. */
px_graph *px_onnx_load_file(const char *path, const px_import_opts *opts, px_diag *d);
/* Loads from memory; base_dir resolves external data (NULL: external data is an error). */
px_graph *px_onnx_load_buffer(const void *buf, size_t len, const char *base_dir,
                              const px_import_opts *opts, px_diag *d);

typedef struct px_export_opts {
    /* Tensors of at least this many bytes go to external data files next to the
     * model (0 = never, unless the model would exceed protobuf's 2 GiB limit). */
    size_t external_threshold;
} px_export_opts;

/* Writes g as an ONNX model. path "-" writes to stdout. */
int px_onnx_save_file(const px_graph *g, const char *path, const px_export_opts *opts, px_diag *d);
/* Serializes to a malloc'd buffer (caller frees). No external data. */
int px_onnx_save_buffer(const px_graph *g, void **buf, size_t *len, px_diag *d);

#endif

#ifndef PX_ONNX_IO_TENSOR_FILE
#define PX_ONNX_IO_TENSOR_FILE
/* Reads one serialized TensorProto file (the backend test data's input_K.pb /
 * output_K.pb). External data is resolved next to the file. */
px_tensor *px_onnx_load_tensor_file(const char *path, char **name_out, px_diag *d);
#endif
