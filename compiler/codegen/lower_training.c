/* Lowerings of the training op family to runtime kernels. */
#include "lower.h"

const px_lowering px_lowerings_training[] = {
    {PX_OP_UNKNOWN, NULL},
};
