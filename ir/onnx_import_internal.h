/* Shared by the ONNX importer's files (onnx_import*.c); not a public API. */
#ifndef PX_ONNX_IMPORT_INTERNAL_H
#define PX_ONNX_IMPORT_INTERNAL_H

#include "graph.h"
#include "onnx_io.h"

#include "onnx.pb-c.h"

/* Dense tensors built from sparse ones are refused beyond this size: a tiny
 * sparse proto can describe an absurd dense shape. */
#define PX_IMPORT_DENSIFY_MAX ((int64_t)1 << 32)

typedef struct px_import_ctx {
    const char *model_name; /* file path or "<buffer>", for messages */
    const char *base_dir;   /* external data folder; NULL: external data is an error */
    int allow_unsupported;
    px_diag *d;
} px_import_ctx;

/* TensorProto -> new tensor (every encoding, external data). label names the
 * tensor in messages when the proto has no name. NULL on error. */
px_tensor *pxi_tensor_from_proto(px_import_ctx *c, const Onnx__TensorProto *tp, const char *label);
/* SparseTensorProto -> new dense tensor. NULL on error. */
px_tensor *pxi_tensor_from_sparse(px_import_ctx *c, const Onnx__SparseTensorProto *sp,
                                  const char *label);
/* TypeProto -> element type and shape. *is_tensor is 0 for sequence, map and
 * optional types (dtype UNDEFINED, shape unknown then). A NULL tp is an
 * unknown tensor type. Returns -1 on invalid element types or ranks. */
int pxi_type_from_proto(px_import_ctx *c, const Onnx__TypeProto *tp, const char *label,
                        px_dtype *dtype, px_shape *shape, int *is_tensor);

/* Adds attribute a to node n (labelled label in messages) and fills it,
 * except the graphs of a GRAPH or GRAPHS attribute, which stay NULL for the
 * caller to import. NULL on error. */
px_attr *pxi_import_attr(px_import_ctx *c, px_node *n, const Onnx__AttributeProto *a,
                         const char *label);
/* Imports a graph; parent is NULL for the model's main graph. NULL on error. */
px_graph *pxi_import_graph(px_import_ctx *c, const Onnx__GraphProto *gp, px_graph *parent);

/* strdup that maps NULL to NULL (and aborts on OOM like the IR does). */
char *pxi_strdup(const char *s);

#endif
