/* Stable sort of row indices by value (LSD radix, no comparisons): the
 * order the row-set kernels visit a batch's indices in.
 *
 * qsort with a comparison callback cost a sampled-softmax step more than
 * its LSTM (1,280 indices per table, several sorts per step); indices of a
 * table of R rows have ceil(log2 R) significant bits, so one or two
 * counting passes sort them. Stability stands in for the tie-break on the
 * position: equal rows keep their input order. Not part of the ABI. */
#ifndef PX_ROW_SORT_H
#define PX_ROW_SORT_H

#include <stdint.h>

/* order[0..n) = the positions 0..n-1 sorted by rows[position] ascending,
 * equal rows in ascending position. rows[i] must lie in [0, limit).
 * Returns 0, or -1 when out of memory (order is then unspecified). */
int px_row_sort(const int64_t *rows, int64_t n, int64_t limit, int64_t *order);

#endif
