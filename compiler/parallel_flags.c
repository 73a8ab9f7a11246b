#include "parallel_flags.h"

#include <stdio.h>

/* Every gradient of a split weight or of a stage goes through AllReduce:
 * the parameter servers (ps, and what auto may choose) hold whole rows. */
static int allreduce_comm(px_comm_mode comm) {
    return comm == PX_COMM_MODE_HYBRID || comm == PX_COMM_MODE_ALLREDUCE;
}

int px_check_parallel_flags(int tp, int pp, px_comm_mode comm, int sparsity, char *why,
                            size_t cap) {
    why[0] = '\0';
    if (tp > 1 && sparsity)
        snprintf(why, cap, "--tp splits dense weights; it cannot be combined with --sparsity yet");
    else if (tp > 1 && !allreduce_comm(comm))
        snprintf(why, cap,
                 "--tp needs --comm hybrid or allreduce (the split weights' gradients go through "
                 "AllReduce), not '%s'",
                 px_comm_mode_name(comm));
    else if (pp > 1 && sparsity)
        snprintf(why, cap,
                 "--pp cuts the model into stages; it cannot be combined with --sparsity yet");
    else if (pp > 1 && !allreduce_comm(comm))
        snprintf(why, cap,
                 "--pp needs --comm hybrid or allreduce (the stages' gradients go through "
                 "AllReduce), not '%s'",
                 px_comm_mode_name(comm));
    return why[0] ? -1 : 0;
}

int px_check_parallel_ranks(int tp, int pp, int ranks, char *why, size_t cap) {
    why[0] = '\0';
    int group = (tp > 1 ? tp : 1) * (pp > 1 ? pp : 1);
    if (group > 1 && ranks % group != 0)
        snprintf(why, cap,
                 "--ranks %d is not a multiple of --tp x --pp = %d x %d = %d (the program runs "
                 "on whole groups of tp x pp ranks)",
                 ranks, tp > 1 ? tp : 1, pp > 1 ? pp : 1, group);
    return why[0] ? -1 : 0;
}
