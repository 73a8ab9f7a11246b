/* Shared by ir/control_flow*.c; not a public API. */
#ifndef PX_CONTROL_FLOW_INTERNAL_H
#define PX_CONTROL_FLOW_INTERNAL_H

#include "control_flow.h"

/* The value a body graph's PX_VALUE_OUTER stand-in captures, found by name
 * in the enclosing graphs (NULL if none). Other values map to themselves. */
px_value *pxcf_outer(const px_graph *body, px_value *v);
/* v's producer when it is the default-domain op op_type, else NULL. */
px_node *pxcf_producer(const px_value *v, const char *op_type);
/* Reads v as a compile-time integer tensor of at most cap elements: an
 * initializer or constant, a Constant node's value, or an outer value that
 * is one. Returns the element count, or -1 when v is not such a constant. */
int pxcf_const_ints(const px_graph *body, const px_value *v, int64_t *out, int cap);

/* Rewrites the Loop node n of g if it is PyTorch's nn.EmbeddingBag: 1 done,
 * 0 not that pattern (g untouched), -1 error. */
int pxcf_embedding_bag(px_graph *g, px_node *n, px_diag *d);

#endif
