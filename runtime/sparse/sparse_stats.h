/* What --stats reports of the masked weights: their live and total
 * entries, and the floating-point operations of their products, counted
 * by the kernels as they run (2 per multiply-add; the dense path counts its
 * dense products; validation passes are not counted). */
#ifndef PX_SPARSE_STATS_H
#define PX_SPARSE_STATS_H

#include <stdint.h>
#include <stdio.h>

void px_sparse_count_flops(int64_t flops);
/* Forgets what was counted (the end of the warm-up). */
void px_sparse_flops_reset(void);
/* The "sparse" member of --stats (with its trailing ",\n"), per step over
 * `steps` counted steps; nothing without masked weights. */
void px_sparse_stats_json(FILE *f, int64_t steps);

#endif
