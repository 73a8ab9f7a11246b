/* Which samples a step reads from a sharded dataset (docs/data.md, "Sample
 * order"), defined so that each rank reads only its share of the shards and
 * the order is the same at every rank count for a given global batch.
 *
 * With S samples, global batch B and E = floor(S/B) steps per epoch:
 * - the epoch's stream is the shards one after the other, in manifest order,
 *   or with --shuffle SEED in the order px_order_permutation(SEED, e,
 *   shards) gives for epoch e;
 * - lane j (0 <= j < B) owns stream positions [j*E, (j+1)*E) (its "lane
 *   positions" 0..E-1); the last S - E*B positions are not read that epoch;
 * - position j of step s's global batch (t = s mod E steps into the epoch)
 *   is lane j's t-th output. Without --shuffle that is lane position t.
 *   With it, each lane passes its positions through a buffer of K =
 *   min(E, ceil(shuffle_buffer / B)) slots: the buffer starts with
 *   positions 0..K-1; output t draws slot u = uniform(live) from the lane's
 *   generator (splitmix64 seeded by SEED, e and j), outputs it, and puts
 *   the lane's next position there (or, when none is left, the last live
 *   slot's, and live drops by one).
 * - rank r takes positions [r*b, (r+1)*b): lanes r*b .. (r+1)*b-1, whose
 *   stream positions are one contiguous stretch, 1/N of the epoch.
 * Everything depends on the data, B, SEED, the shuffle buffer and the epoch,
 * not on how many ranks share B. */
#ifndef PX_LANE_ORDER_H
#define PX_LANE_ORDER_H

#include <stdint.h>

typedef struct px_lane_plan {
    int64_t n_shards;
    const int64_t *shard_rows; /* manifest order */
    int64_t samples, global_batch, steps_per_epoch;
    int shuffle;
    uint64_t seed;
    int64_t slots; /* K: buffer slots per lane (0: no buffer) */
    /* the epoch whose stream order is set (px_lane_plan_epoch) */
    int64_t epoch;
    int64_t *order; /* shard at each place of the stream */
    int64_t *start; /* stream position where each place starts; [n_shards] = samples */
} px_lane_plan;

/* 0, or -1 when samples < global_batch or memory runs out. */
int px_lane_plan_init(px_lane_plan *pl, const int64_t *shard_rows, int64_t n_shards,
                      int64_t global_batch, int shuffle, uint64_t seed, int64_t shuffle_buffer);
void px_lane_plan_free(px_lane_plan *pl);
/* Sets the stream order of epoch e (nothing to do if it is set). */
void px_lane_plan_epoch(px_lane_plan *pl, int64_t epoch);
/* Stream position x of the set epoch: the shard (manifest index), the row
 * in it and how many rows of that shard follow from there (>= 1). */
void px_lane_plan_locate(const px_lane_plan *pl, int64_t x, int64_t *shard, int64_t *row,
                         int64_t *run);

typedef struct px_lane {
    int64_t lane;
    int64_t taken; /* outputs so far this epoch */
    int64_t next;  /* lane position that enters the buffer next */
    int64_t live;  /* buffer slots in use */
    int64_t *slot; /* K lane positions */
    uint64_t rng;
} px_lane;

/* What an output did to the buffer (with slots): the sample output is the
 * one in `slot`; after copying it out, load lane position l->slot[slot]
 * into it (refill), or move the sample of slot `moved_from` into it
 * (moved_from >= 0), or nothing (the slot was the last live one). Without
 * slots, `position` is the lane position output. */
typedef struct px_lane_step {
    int64_t position;
    int64_t slot;
    int refill;
    int64_t moved_from;
} px_lane_step;

/* 0, or -1 when memory runs out (the slot table). */
int px_lane_alloc(px_lane *l, const px_lane_plan *pl, int64_t lane);
void px_lane_free(px_lane *l);
/* The lane at the start of the plan's epoch: slots hold positions 0..K-1. */
void px_lane_begin(px_lane *l, const px_lane_plan *pl);
/* The next output (l->taken < steps_per_epoch). */
px_lane_step px_lane_next(px_lane *l, const px_lane_plan *pl);
/* Stream position of lane position x of lane l. */
int64_t px_lane_stream_position(const px_lane_plan *pl, int64_t lane, int64_t x);

#endif
