#include "lane_order.h"

#include "data_order.h"

#include <stdlib.h>
#include <string.h>

int px_lane_plan_init(px_lane_plan *pl, const int64_t *shard_rows, int64_t n_shards,
                      int64_t global_batch, int shuffle, uint64_t seed, int64_t shuffle_buffer) {
    memset(pl, 0, sizeof *pl);
    pl->n_shards = n_shards;
    pl->shard_rows = shard_rows;
    for (int64_t s = 0; s < n_shards; s++) pl->samples += shard_rows[s];
    pl->global_batch = global_batch;
    pl->steps_per_epoch = global_batch > 0 ? pl->samples / global_batch : 0;
    pl->shuffle = shuffle;
    pl->seed = seed;
    pl->epoch = -1;
    if (pl->steps_per_epoch < 1) return -1;
    if (shuffle && shuffle_buffer > 0) {
        int64_t k = shuffle_buffer / global_batch + (shuffle_buffer % global_batch != 0);
        pl->slots = k < pl->steps_per_epoch ? k : pl->steps_per_epoch;
    }
    pl->order = malloc(sizeof *pl->order * (size_t)n_shards);
    pl->start = malloc(sizeof *pl->start * (size_t)(n_shards + 1));
    if (!pl->order || !pl->start) {
        px_lane_plan_free(pl);
        return -1;
    }
    return 0;
}

void px_lane_plan_free(px_lane_plan *pl) {
    free(pl->order);
    free(pl->start);
    pl->order = pl->start = NULL;
}

void px_lane_plan_epoch(px_lane_plan *pl, int64_t epoch) {
    if (epoch == pl->epoch) return;
    if (pl->shuffle)
        px_order_permutation(pl->seed, epoch, pl->n_shards, pl->order);
    else
        for (int64_t s = 0; s < pl->n_shards; s++) pl->order[s] = s;
    pl->start[0] = 0;
    for (int64_t k = 0; k < pl->n_shards; k++)
        pl->start[k + 1] = pl->start[k] + pl->shard_rows[pl->order[k]];
    pl->epoch = epoch;
}

void px_lane_plan_locate(const px_lane_plan *pl, int64_t x, int64_t *shard, int64_t *row,
                         int64_t *run) {
    /* The last place whose start is <= x. */
    int64_t lo = 0, hi = pl->n_shards - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (pl->start[mid] <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    *shard = pl->order[lo];
    *row = x - pl->start[lo];
    *run = pl->start[lo + 1] - x;
}

int64_t px_lane_stream_position(const px_lane_plan *pl, int64_t lane, int64_t x) {
    return lane * pl->steps_per_epoch + x;
}

int px_lane_alloc(px_lane *l, const px_lane_plan *pl, int64_t lane) {
    memset(l, 0, sizeof *l);
    l->lane = lane;
    if (pl->slots > 0) {
        l->slot = malloc(sizeof *l->slot * (size_t)pl->slots);
        if (!l->slot) return -1;
    }
    return 0;
}

void px_lane_free(px_lane *l) {
    free(l->slot);
    l->slot = NULL;
}

void px_lane_begin(px_lane *l, const px_lane_plan *pl) {
    l->taken = 0;
    l->live = pl->slots;
    l->next = pl->slots;
    for (int64_t k = 0; k < pl->slots; k++) l->slot[k] = k;
    /* Its own generator per (seed, epoch, lane): a lane draws the same
     * numbers whichever rank runs it. */
    l->rng = px_splitmix64_mix(pl->seed ^ px_splitmix64_mix((uint64_t)pl->epoch + 1)) ^
             px_splitmix64_mix(~(uint64_t)l->lane);
}

px_lane_step px_lane_next(px_lane *l, const px_lane_plan *pl) {
    px_lane_step st = {.position = l->taken, .slot = -1, .refill = 0, .moved_from = -1};
    l->taken++;
    if (pl->slots == 0) return st;
    int64_t u = (int64_t)px_uniform_below(&l->rng, (uint64_t)l->live);
    st.position = l->slot[u];
    st.slot = u;
    if (l->next < pl->steps_per_epoch) {
        l->slot[u] = l->next++;
        st.refill = 1;
    } else {
        l->live--;
        if (u != l->live) {
            l->slot[u] = l->slot[l->live];
            st.moved_from = l->live;
        }
    }
    return st;
}
