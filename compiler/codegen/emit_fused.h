#ifndef PX_EMIT_FUSED_H
#define PX_EMIT_FUSED_H

#include "fuse.h"

#include <llvm-c/Core.h>

/* Defines internal `void px_fused_<index>(ptr in0, ..., ptr out)` for f.
 * shares_output[k] is 1 where input k occupies the output's buffer. Loops
 * of 32k elements or more hand their outermost index to the runtime's
 * px_parallel_for (runtime/kernels/thread_pool.h) in pieces. */
LLVMValueRef px_emit_fused_fn(LLVMContextRef ctx, LLVMModuleRef m, const px_fusion *f, int index,
                              const unsigned char *shares_output);

#endif
