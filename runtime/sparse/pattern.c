/* Mask pattern items (pattern.h). */
#include "pattern.h"
#include "mask_select.h"

#include <math.h>
#include <string.h>

void px_pattern_of(const px_masked_desc *d, px_pattern *pt) {
    memset(pt, 0, sizeof *pt);
    pt->kind = (int)d->pattern;
    pt->out = d->out;
    pt->in = d->in;
    pt->w_in_major = (int)d->w_in_major;
    pt->a = d->pa;
    pt->b = d->pb;
}

static int64_t position(const px_pattern *pt, int64_t o, int64_t i) {
    return pt->w_in_major ? i * pt->out + o : o * pt->in + i;
}

int64_t px_pattern_items(const px_pattern *pt) {
    if (pt->kind == PX_PATTERN_BLOCK) return (pt->out / pt->a) * (pt->in / pt->b);
    return pt->out * pt->in;
}

int64_t px_pattern_live_items(const px_pattern *pt, int64_t nnz) {
    return pt->kind == PX_PATTERN_BLOCK ? nnz / (pt->a * pt->b) : nnz;
}

void px_pattern_keys_abs(const px_pattern *pt, const float *v, uint32_t *key) {
    if (pt->kind != PX_PATTERN_BLOCK) {
        for (int64_t k = 0; k < pt->out * pt->in; k++) key[k] = px_mask_key_abs(v[k]);
        return;
    }
    int64_t cols = pt->in / pt->b;
    for (int64_t ob = 0; ob < pt->out / pt->a; ob++)
        for (int64_t ib = 0; ib < cols; ib++) {
            double sum = 0;
            for (int64_t o = ob * pt->a; o < (ob + 1) * pt->a; o++)
                for (int64_t i = ib * pt->b; i < (ib + 1) * pt->b; i++)
                    sum += fabs((double)v[position(pt, o, i)]);
            key[ob * cols + ib] = px_mask_key_abs((float)sum);
        }
}

/* Item `item`'s entries get (or, back, give) the value. */
void px_pattern_items_to_entries(const px_pattern *pt, const uint8_t *item, uint8_t *entry) {
    if (pt->kind != PX_PATTERN_BLOCK) {
        memcpy(entry, item, (size_t)(pt->out * pt->in));
        return;
    }
    int64_t cols = pt->in / pt->b;
    for (int64_t o = 0; o < pt->out; o++)
        for (int64_t i = 0; i < pt->in; i++)
            entry[position(pt, o, i)] = item[(o / pt->a) * cols + i / pt->b];
}

void px_pattern_entries_to_items(const px_pattern *pt, const uint8_t *entry, uint8_t *item) {
    if (pt->kind != PX_PATTERN_BLOCK) {
        memcpy(item, entry, (size_t)(pt->out * pt->in));
        return;
    }
    int64_t cols = pt->in / pt->b;
    for (int64_t ob = 0; ob < pt->out / pt->a; ob++)
        for (int64_t ib = 0; ib < cols; ib++)
            item[ob * cols + ib] = entry[position(pt, ob * pt->a, ib * pt->b)];
}

void px_pattern_select_nm(const px_pattern *pt, const uint32_t *key, uint8_t *chosen) {
    int64_t n = pt->a, m = pt->b;
    memset(chosen, 0, (size_t)(pt->out * pt->in));
    for (int64_t o = 0; o < pt->out; o++)
        for (int64_t g = 0; g < pt->in; g += m)
            for (int64_t t = 0; t < n; t++) {
                /* the largest key not yet chosen; ties to the lower input */
                int64_t best = -1;
                for (int64_t i = g; i < g + m; i++) {
                    int64_t at = position(pt, o, i);
                    if (!chosen[at] && (best < 0 || key[at] > key[best])) best = at;
                }
                chosen[best] = 1;
            }
}
