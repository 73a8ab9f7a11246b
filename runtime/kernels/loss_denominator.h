/* The kept weight behind a loss's denominator (loss_denominator.c), for the
 * kernels that average it over the ranks as a job of the comm thread
 * (comm/sched/loss_mean.c). */
#ifndef PX_KERNELS_LOSS_DENOMINATOR_H
#define PX_KERNELS_LOSS_DENOMINATOR_H

#include "px_kernel.h"

/* buf {labels, weights|NULL}; c at the parameters of px_k_loss_denominator,
 * left after them. This rank's kept weight into *kept; returns 1 when this pass averages it
 * over the ranks, 0 when it is the divisor itself (--sync-every's local
 * steps, --accumulate, --pp's micro-batches: the warning said once). */
int px_loss_kept_weight(void *const *buf, px_kcur *c, double *kept);

#endif
