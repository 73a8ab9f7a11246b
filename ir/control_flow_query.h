/* Queries on If/Loop body graphs shared by ir/control_flow*.c and
 * ir/shape_if.c: resolving captured outer values, matching producers,
 * reading compile-time constants. They only read graphs, so the rewriters
 * above them (control_flow.c, control_flow_unroll.c,
 * control_flow_embedding_bag.c) depend on this file and never on each
 * other's helpers. Not a public API. */
#ifndef PX_CONTROL_FLOW_QUERY_H
#define PX_CONTROL_FLOW_QUERY_H

#include "control_flow.h"

/* 1 when n is the default-domain op op_type. */
int pxcf_is_op(const px_node *n, const char *op_type);
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

#endif
