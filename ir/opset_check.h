/* Opset versions a model may declare, and the first ai.onnx opset of each op. */
#ifndef PX_OPSET_CHECK_H
#define PX_OPSET_CHECK_H

#include "graph.h"

/* Newest ai.onnx opset whose operator forms the compiler implements: after
 * 19, the ops of the table change only in the element types they accept
 * (20, 21: int4, float8, which import refuses), and Gelu arrives in 20. */
#define PX_MAX_OPSET_ONNX 21
/* ai.onnx.preview.training has one version. */
#define PX_MAX_OPSET_TRAINING 1

/* Refuses declared opsets beyond what is implemented and nodes whose op does
 * not exist yet in the declared opset (e.g. LayerNormalization at opset 13).
 * model_name names the model in messages. 0, or -1 with an error in d. */
int px_check_opsets(const px_graph *g, const char *model_name, px_diag *d);

#endif
