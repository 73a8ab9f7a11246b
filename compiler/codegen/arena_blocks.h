/* The arena blocks that are live at one point of the buffer plan
 * (memplan.c), ordered by offset, with first fit in O(log n): a treap whose
 * subtrees know their first offset, their last end and the largest gap
 * between their blocks. A scan over a sorted array gives the same offsets
 * but costs O(n) per value, O(n^2) for a training step whose n gradients
 * all live until the updates. Blocks never overlap. */
#ifndef PX_ARENA_BLOCKS_H
#define PX_ARENA_BLOCKS_H

#include <stdint.h>

typedef struct px_arena_blocks {
    struct arena_block *nodes; /* index 0 unused: "no node" */
    int n_nodes, cap_nodes, root, free_list;
    struct expiry *heap; /* (end, offset) of every block, min-heap on end */
    int n_heap, cap_heap;
    uint64_t seed;
} px_arena_blocks;

void px_arena_blocks_init(px_arena_blocks *a);
void px_arena_blocks_free(px_arena_blocks *a);
/* Removes the blocks whose last use is before `call`. */
void px_arena_blocks_expire(px_arena_blocks *a, int call);
/* Where first fit puts `bytes`: the end of the block before the first gap
 * of at least that size (from offset 0), or the end of the last block. */
int64_t px_arena_blocks_first_fit(const px_arena_blocks *a, int64_t bytes);
/* Adds a block; -1 when out of memory. */
int px_arena_blocks_add(px_arena_blocks *a, int64_t offset, int64_t bytes, int end);
/* The live block at offset: its bytes and end (0 if none). */
int px_arena_blocks_find(const px_arena_blocks *a, int64_t offset, int64_t *bytes, int *end);
/* Extends the block at offset to end at `end` (later than its end now). */
int px_arena_blocks_extend(px_arena_blocks *a, int64_t offset, int end);

#endif
