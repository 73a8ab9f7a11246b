/* The flags tensor (--tp) and pipeline (--pp) parallelism cannot be
 * combined with yet: one rule and one message for the flags a user gives
 * (cli.c: compile and inspect) and for the layouts `plan --layouts` sets
 * itself (plan_layouts.c). */
#ifndef PX_PARALLEL_FLAGS_H
#define PX_PARALLEL_FLAGS_H

#include "px_enums.h"

#include <stddef.h>

/* 0 when --tp tp and --pp pp go with --comm comm and with --sparsity (1:
 * given); else -1 with the reason, naming the flags, in why (cap bytes). */
int px_check_parallel_flags(int tp, int pp, px_comm_mode comm, int sparsity, char *why, size_t cap);

#endif
