#ifndef PX_EMIT_FUSED_H
#define PX_EMIT_FUSED_H

#include "fuse.h"

#include <llvm-c/Core.h>

/* Defines internal `void px_fused_<index>(ptr in0, ..., ptr out)` for f.
 * shares_output[k] is 1 where input k occupies the output's buffer. */
LLVMValueRef px_emit_fused_fn(LLVMContextRef ctx, LLVMModuleRef m, const px_fusion *f, int index,
                              const unsigned char *shares_output);

#endif
