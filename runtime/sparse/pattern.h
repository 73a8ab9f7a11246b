/* A mask pattern's items (--sparsity-pattern), the units a mask keeps or
 * prunes: unstructured, every entry (storage order); block a x b, the
 * blocks of the logical [out, in] matrix (row-major); n:m, every entry,
 * chosen n per group of m consecutive inputs of one output. */
#ifndef PX_SPARSE_PATTERN_H
#define PX_SPARSE_PATTERN_H

#include "px_program.h"

#include <stdint.h>

typedef struct px_pattern {
    int kind; /* px_sparsity_pattern */
    int64_t out, in;
    int w_in_major;
    int64_t a, b; /* block a x b, or n:m with n = a, m = b */
} px_pattern;

void px_pattern_of(const px_masked_desc *d, px_pattern *pt);
int64_t px_pattern_items(const px_pattern *pt);
/* Items live in a mask of nnz entries. */
int64_t px_pattern_live_items(const px_pattern *pt, int64_t nnz);
/* key[item] from the magnitudes of the storage-order values v: an entry's
 * px_mask_key_abs, a block's of the sum of its |v| (double, row-major,
 * rounded to float). */
void px_pattern_keys_abs(const px_pattern *pt, const float *v, uint32_t *key);
/* The entries (storage order) of the chosen items, and back (an item is
 * live when its entries are). */
void px_pattern_items_to_entries(const px_pattern *pt, const uint8_t *item, uint8_t *entry);
void px_pattern_entries_to_items(const px_pattern *pt, const uint8_t *entry, uint8_t *item);
/* n:m: the n entries of the largest key in every group (ties: the lower
 * input). */
void px_pattern_select_nm(const px_pattern *pt, const uint32_t *key, uint8_t *chosen);

#endif
