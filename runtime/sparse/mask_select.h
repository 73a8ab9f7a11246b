/* The choices that make a mask: which items (entries, or blocks of
 * entries) are live. Every choice is a top-k by a 32-bit key with ties to
 * the lower index, so it is a pure function of the keys, the same on every
 * rank and easy to reproduce elsewhere (tests/tools/sparse_reference.py
 * does it in NumPy):
 *   magnitude   the key of |x| (px_mask_key_abs): its float bits;
 *   random      px_mask_random_key(seed, weight name, step, item);
 *   gradient    the key of |g| (RigL's growth). */
#ifndef PX_MASK_SELECT_H
#define PX_MASK_SELECT_H

#include <stdint.h>

/* Order-preserving key of |x|: the bits of the non-negative float (NaN: 0,
 * the least). */
uint32_t px_mask_key_abs(float x);
/* FNV-1a 64 of the weight's name: keys its random draws. */
uint64_t px_mask_name_hash(const char *name);
/* The high 32 bits of splitmix64(splitmix64(splitmix64(seed ^ name_hash) +
 * step) + item): one draw per (weight, step, item). */
uint32_t px_mask_random_key(uint64_t seed, uint64_t name_hash, uint64_t step, uint64_t item);

/* Sets chosen[i] = 1 for the k eligible items of the largest key (ties: the
 * lower index), 0 for the others. eligible NULL: every item. k larger than
 * the eligible count: all of them. */
void px_mask_select_top(const uint32_t *key, const uint8_t *eligible, int64_t n, int64_t k,
                        uint8_t *chosen);

#endif
