/* ONNX Slice-13 clamping, the one rule shared by shape inference
 * (ir/shape_index.c), the lowering of constant slices
 * (compiler/codegen/lower_tensor_window.c) and the run-time kernel of
 * computed ones (runtime/kernels/tensor_window.c): they must agree on every
 * output shape. Header-only, no dependencies (common/: compiled into both the
 * compiler and the runtime). */
#ifndef PX_SLICE_CLAMP_H
#define PX_SLICE_CLAMP_H

#include <stdint.h>

/* The first index taken and the element count of slicing a dim of size dim
 * from start to end (exclusive) by step (!= 0); negative start/end count
 * from the end, and both are clamped into the dim. */
static inline void px_slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step,
                                 int64_t *first, int64_t *len) {
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
        start = start < 0 ? 0 : start > dim ? dim : start;
        end = end < 0 ? 0 : end > dim ? dim : end;
        *len = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
        start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
        end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
        if (start <= end)
            *len = 0;
        else if (step == INT64_MIN)
            *len = 1;
        else
            *len = (start - end - 1) / -step + 1;
    }
    *first = *len > 0 ? start : 0;
}

#endif
