/* Lowerings of the rnn op family to runtime kernels. */
#include "lower.h"

const px_lowering px_lowerings_rnn[] = {
    {PX_OP_UNKNOWN, NULL},
};
