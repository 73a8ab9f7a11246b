/* Where the rows of a parameter-server variable live: its row partitions
 * and the shard of each. One definition for the runtime (comm/ps/setup.c
 * and comm/ps/partition.c, which lay the shards out) and the compiler's
 * memory model (compiler/memory_model.c, which predicts the bytes per
 * shard), so the prediction is the layout. Header only: the compiler links
 * no runtime.
 *
 * The placement is shard-contiguous: partition p of P of a variable goes
 * to shard (floor(p * S / P) + offset) % S, the variable's offset fixed
 * when the program sets its shards up. The automatic-partition search
 * (comm/sched/autotune.c) changes P of a running program among multiples of S;
 * under this placement a shard keeps its row range whatever the count (up
 * to the few rows by which balanced ranges of different counts differ), so
 * re-partitioning is a copy inside each shard, not a reshuffle of the
 * table between shards. (A placement balancing bytes greedily partition by
 * partition moved up to a whole shard's rows at each change.) The offsets
 * balance bytes over the variables: they matter when P is not a multiple
 * of S (a fixed --partitions, tables with fewer rows than shards). */
#ifndef PX_PS_LAYOUT_H
#define PX_PS_LAYOUT_H

#include <stdint.h>

/* First row of partition p of `parts` contiguous, balanced row ranges over
 * `rows` (the first rows % parts partitions get one row more); p = parts
 * gives rows. */
static inline int64_t px_ps_part_row0(int64_t rows, int64_t parts, int64_t p) {
    int64_t q = rows / parts, m = rows % parts;
    return p * q + (p < m ? p : m);
}

/* The partition (of `parts` over `rows`) holding row. */
static inline int64_t px_ps_part_of_row(int64_t rows, int64_t parts, int64_t row) {
    int64_t q = rows / parts, m = rows % parts;
    if (row < m * (q + 1)) return row / (q + 1);
    return m + (row - m * (q + 1)) / q;
}

/* The shard (0..shards-1) of partition p of `parts` of a variable whose
 * offset is `offset` (px_ps_shard_offsets). */
static inline int px_ps_part_shard(int64_t p, int64_t parts, int shards, int offset) {
    if (shards <= 1 || parts <= 0) return 0;
    return (int)((p * shards / parts + offset) % shards);
}

/* The offsets of n_ps variables in order, variable i having rows[i] rows of
 * row_bytes[i] bytes in parts[i] partitions (at most rows[i]): each the one
 * that leaves the most loaded shard least loaded, given the variables
 * before it (ties: the lowest offset). scratch: 2 * shards int64. */
static inline void px_ps_shard_offsets(int n_ps, const int64_t *rows, const int64_t *row_bytes,
                                       const int64_t *parts, int shards, int64_t *scratch,
                                       int *offsets) {
    int64_t *load = scratch, *add = scratch + shards;
    for (int s = 0; s < shards; s++) load[s] = 0;
    for (int i = 0; i < n_ps; i++) {
        for (int s = 0; s < shards; s++) add[s] = 0;
        for (int64_t p = 0; p < parts[i]; p++) {
            int64_t n =
                px_ps_part_row0(rows[i], parts[i], p + 1) - px_ps_part_row0(rows[i], parts[i], p);
            add[px_ps_part_shard(p, parts[i], shards, 0)] += n * row_bytes[i];
        }
        int best = 0;
        int64_t best_max = -1;
        for (int o = 0; o < shards; o++) {
            int64_t most = 0;
            for (int s = 0; s < shards; s++) {
                int64_t l = load[(s + o) % shards] + add[s];
                if (l > most) most = l;
            }
            if (best_max < 0 || most < best_max) best_max = most, best = o;
        }
        for (int s = 0; s < shards; s++) load[(s + best) % shards] += add[s];
        offsets[i] = best;
    }
}

#endif
