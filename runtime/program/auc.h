/* The exact AUC of a validation over every rank's (score, label) pairs,
 * without bringing them to one rank: a distributed sort (docs/data.md,
 * "Ranking metrics").
 *
 * Each rank sorts its own samples by score (a 32-bit order-preserving key
 * of the float; -0 and +0 are one score) and merges equal scores into runs
 * (key, positives, negatives). Splitter keys cut the key space into one
 * range per rank, each holding about 1/ranks of the samples: the key at
 * every global position r x samples / ranks, found exactly by three summed
 * histograms of 11, 11 and 10 key bits (the later ones only under the
 * prefixes that hold a splitter). Every rank sends each range's runs to
 * its owner, which merges them and counts, over its groups of equal
 * scores, positives x (2 x negatives below + negatives within): twice the
 * Mann-Whitney statistic, in integers. One sum of per-rank counters adds
 * the negatives of the lower ranges; AUC = that count / (2 x positives x
 * negatives), rounded once. A rank holds its samples, their sort and about
 * 1/ranks of the runs; ties cost one run per rank and score. */
#ifndef PX_AUC_H
#define PX_AUC_H

#include <stdint.h>

/* Collective: the AUC over every rank's n (score, label) pairs, the same
 * bits on every rank; a label >= 0.5 is a positive. NaN without both
 * classes. Scores must not be NaN. */
double px_auc_over_ranks(const float *scores, const float *labels, int64_t n);

#endif
