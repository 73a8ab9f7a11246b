/* nn.EmbeddingBag's offsets read from data, checked by the loaders before
 * any step runs (the SegmentReduce kernel checks them again, as it does
 * offsets computed inside the graph): PyTorch's rule, the first 0, none
 * decreasing, none past the count of the batch's indices. Offsets that
 * break it gave silently wrong bags. */
#ifndef PX_BAG_OFFSETS_H
#define PX_BAG_OFFSETS_H

#include "px_program.h"

#include <stddef.h>
#include <stdint.h>

/* The position of the first offset of v[0..count) (int32 when dtype is 6,
 * else int64) that breaks the rule for a batch of n_indices indices, or -1
 * when all keep it; *why says which part of the rule it breaks. */
int64_t px_bag_offsets_bad(const void *v, int dtype, int64_t count, int64_t n_indices,
                           const char **why);

/* The thing input values are checked for, as the loaders' messages name
 * it: "Gather 'N' of 'T'" or "the offsets of EmbeddingBag 'N' of 'T'". */
void px_index_check_target(const px_index_check *k, char *buf, size_t cap);

#endif
