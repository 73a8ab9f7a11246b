/* The ai.parallax segment reductions (SegmentReduce, SegmentReduceGrad;
 * ir/shape_segment.c documents them): what their passes and lowering share. */
#ifndef PX_SEGMENT_REDUCE_H
#define PX_SEGMENT_REDUCE_H

#include "graph.h"

enum { PX_SEGMENT_SUM = 0, PX_SEGMENT_MEAN = 1, PX_SEGMENT_MAX = 2 };

/* The node's mode attribute as PX_SEGMENT_*, or -1 when missing or unknown. */
int px_segment_mode(const px_node *n);

#endif
