/* Test support: runs a lowered plan in-process by calling the runtime
 * kernels by name, with one malloc'd buffer per value. The shipped path is
 * the LLVM-compiled program; this exists so kernels and lowerings can be
 * checked quickly against reference data. */
#ifndef PX_TEST_INTERP_H
#define PX_TEST_INTERP_H

#include "plan.h"

/* inputs: one tensor per graph input (g->inputs order). On success *outputs
 * receives g->n_outputs new tensors (caller frees each and the array). */
int px_interp_run(const px_graph *g, const px_plan *plan, px_tensor *const *inputs,
                  px_tensor ***outputs, px_diag *d);

/* ONNX backend-test comparison: |out-ref| <= atol + rtol*|ref|, NaN == NaN,
 * integers and bools exact, shapes and dtypes exact. Returns 1 if equal, else
 * 0 with a description of the first difference in msg. */
int px_tensors_close(const px_tensor *out, const px_tensor *ref, double atol, double rtol,
                     char *msg, size_t cap);

#endif
