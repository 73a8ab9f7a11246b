/* Ops whose output is its input's bytes unchanged (Reshape, Squeeze,
 * Unsqueeze, Flatten, Identity, and a Transpose that moves only size-1
 * axes): views. The plan gives such a node no call and the memory plan gives
 * its output the input's buffer (compiler/codegen/memplan.c). */
#ifndef PX_LOWER_VIEW_H
#define PX_LOWER_VIEW_H

#include "graph.h"

/* Whether n's output 0 is a view of its input 0. Only values in the arena
 * qualify (runtime-fed inputs and intermediates, not weights or constants,
 * which live in their own globals), and not graph outputs. */
int px_lower_is_view(const px_node *n);

#endif
