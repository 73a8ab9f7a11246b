/* The next step's batch, loaded ahead for the parameter-server prefetch
 * (px_comm_opts.next_input, comm/ps/prefetch.c): one input at a time, when
 * the communication runtime asks for it during the current step. */
#ifndef PX_NEXT_BATCH_H
#define PX_NEXT_BATCH_H

#include "data_source.h"

#include <stdint.h>

/* accumulate: with --accumulate K > 1 the steps counted here are
 * micro-batches, K to a step of the order: micro-batch i of step s is the
 * slice i*ranks + rank of the step's batch (px_source_fill_input). */
void px_next_batch_init(px_source *src, const px_program_desc *p, int64_t accumulate);
/* Step `step` (0-based) of a run that trains steps below `total` is being run. */
void px_next_batch_set_step(int64_t step, int64_t total);
/* This rank's rows of input i in the step after the current one, or NULL
 * after the last step; i = -1: only whether there is a next step. */
const void *px_next_batch_input(int64_t input);
void px_next_batch_free(void);

#endif
