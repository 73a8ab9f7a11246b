/* The flags tensor (--tp) and pipeline (--pp) parallelism cannot be
 * combined with yet, and the rank counts they run on: one rule and one
 * message for the flags a user gives
 * (cli.c: compile and inspect) and for the layouts `plan --layouts` sets
 * itself (plan_layouts.c). */
#ifndef PX_PARALLEL_FLAGS_H
#define PX_PARALLEL_FLAGS_H

#include "px_enums.h"

#include <stddef.h>

/* 0 when --tp tp and --pp pp go with --comm comm and with --sparsity (1:
 * given); else -1 with the reason, naming the flags, in why (cap bytes). */
int px_check_parallel_flags(int tp, int pp, px_comm_mode comm, int sparsity, char *why, size_t cap);

/* 0 when a program of --tp tp and --pp pp can run on `ranks` ranks (a
 * multiple of tp x pp, as the program itself requires); else -1 with the
 * reason in why. */
int px_check_parallel_ranks(int tp, int pp, int ranks, char *why, size_t cap);

#endif
