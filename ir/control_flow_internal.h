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

/* 1 when v is a loop condition that stays true: a constant true, cond_in
 * (the body's own condition input) passed through, or a Cast / Identity of
 * either. */
int pxcf_always_true(const px_graph *body, const px_value *v, const px_value *cond_in);

/* Unrolls the Loop node n of g when its trip count is a compile-time
 * constant (at most PXCF_MAX_UNROLL iterations) and its condition stays
 * true: 1 done, 0 not that kind of loop (g untouched), -1 error. */
#define PXCF_MAX_UNROLL 4096
int pxcf_unroll_loop(px_graph *g, px_node *n, px_diag *d);

/* Rewrites the Loop node n of g if it is PyTorch's nn.EmbeddingBag: 1 done,
 * 0 not that pattern (g untouched), -1 error. */
int pxcf_embedding_bag(px_graph *g, px_node *n, px_diag *d);

#endif
