/* ONNX control flow (If, Loop) after import: the importer keeps their body
 * graphs as GRAPH attributes, then px_lower_control_flow replaces every such
 * node by straight-line ops or refuses the model naming the node:
 *  - a Loop that is PyTorch's export of nn.EmbeddingBag (a loop over bags
 *    slicing the indices, gathering table rows and reducing them) becomes
 *    Gather + ai.parallax::SegmentReduce (control_flow_embedding_bag.c), so
 *    the table stays a sparse variable;
 *  - an If whose condition is a compile-time constant becomes the chosen
 *    branch's nodes; a Loop whose trip count is a constant at import and
 *    whose condition stays true is unrolled (control_flow_unroll.c);
 *  - anything else is an error. */
#ifndef PX_CONTROL_FLOW_H
#define PX_CONTROL_FLOW_H

#include "graph.h"

/* Subgraphs nested deeper than this are refused (hostile models). */
#define PX_CONTROL_FLOW_MAX_DEPTH 32

/* 1 when (op_type, domain) is control flow that px_lower_control_flow may
 * rewrite: the importer lets it through instead of refusing it up front. */
int px_is_control_flow_op(const char *op_type, const char *domain);

enum px_cf_flags {
    PX_CF_ALLOW_UNSUPPORTED = 1, /* leave what cannot be rewritten in place (inspecting) */
    PX_CF_DEFER_IF = 2,          /* leave an If whose condition is not constant yet: at
                                    import, before shapes are bound and folded */
};

/* Rewrites g's If/Loop nodes as above. Returns the number of rewrites, or -1
 * with an error naming every node it refuses. */
int px_lower_control_flow(px_graph *g, int flags, px_diag *d);

/* Shape inference of an If node (the op table's if_branch): infers the
 * branch the condition picks (both when it is not constant yet, which must
 * agree on dtypes) with the enclosing graph's current shapes. */

#endif
