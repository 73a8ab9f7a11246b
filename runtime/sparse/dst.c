/* Dynamic sparse training (dst.h). */
#include "dst.h"
#include "mask_select.h"
#include "masked.h"
#include "pattern.h"

#include "kernels/gemm_split.h"
#include "px_kernel.h"
#include "px_train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    px_dst_opts o;
    float **grad;       /* RigL: per masked weight, its dense gradient of the step */
    int64_t *grad_step; /* the step whose gradient grad[id] holds (0: none) */
    int64_t n;
} dst;

const px_dst_opts *px_dst_options(void) {
    return &dst.o;
}

int px_dst_configure(const px_dst_opts *o, int64_t total_steps, char *err, size_t cap) {
    memset(&dst.o, 0, sizeof dst.o);
    if (o->kind == PX_DST_NONE) return 0;
    const char *flag = "--dst";
    if (px_sparse_count() == 0) {
        snprintf(err, cap, "%s %s: this program has no masked weights (compile it with --sparsity)",
                 flag, px_dst_kind_name(o->kind));
        return -1;
    }
    for (int64_t i = 0; i < px_sparse_count(); i++) {
        const px_masked *m = px_sparse_get(i);
        if (m->d->pattern == PX_PATTERN_NM) {
            snprintf(err, cap,
                     "%s: weight '%s' has the n:m pattern, which keeps n of every m entries by "
                     "construction: dynamic sparse training needs unstructured or block masks",
                     flag, m->name);
            return -1;
        }
    }
    dst.o = *o;
    if (!dst.o.every) dst.o.every = PX_DST_DEFAULT_EVERY;
    if (!(dst.o.fraction > 0)) dst.o.fraction = PX_DST_DEFAULT_FRACTION;
    if (!dst.o.until) dst.o.until = total_steps * 3 / 4;
    dst.n = px_sparse_count();
    dst.grad = calloc((size_t)dst.n, sizeof *dst.grad);
    dst.grad_step = calloc((size_t)dst.n, sizeof *dst.grad_step);
    if (!dst.grad || !dst.grad_step) px_rt_fail("out of memory");
    return 0;
}

int px_dst_updates_after(int64_t t) {
    return dst.o.kind != PX_DST_NONE && t % dst.o.every == 0 && t < dst.o.until;
}

int px_dst_wants_dense_grad(void) {
    return dst.o.kind == PX_DST_RIGL && !px_train.eval_pass && px_dst_updates_after(px_train.t);
}

/* The dense gradient buffer of id for this step, and whether it is new. */
static float *grad_buffer(int64_t id, int *first) {
    px_masked *m = px_sparse_get(id);
    if (!dst.grad[id]) {
        dst.grad[id] = malloc(sizeof(float) * (size_t)m->numel);
        if (!dst.grad[id])
            px_rt_fail("--dst rigl: out of memory for the dense gradient of '%s'", m->name);
    }
    *first = dst.grad_step[id] != px_train.t;
    dst.grad_step[id] = px_train.t;
    return dst.grad[id];
}

void px_dst_add_dense_grad(int64_t id, const float *grad) {
    int first;
    float *g = grad_buffer(id, &first);
    int64_t n = px_sparse_get(id)->numel;
    if (first)
        memcpy(g, grad, sizeof(float) * (size_t)n);
    else
        for (int64_t k = 0; k < n; k++) g[k] += grad[k];
}

void px_dst_add_dense_grad_of(int64_t id, const float *x, const float *dy, int64_t m) {
    int first;
    float *g = grad_buffer(id, &first);
    const px_masked_desc *d = px_sparse_get(id)->d;
    int out = (int)d->out, in = (int)d->in;
    if (d->w_in_major) /* G[in, out] = X^T dY */
        px_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, in, out, (int)m, 1.0f, x, in, dy, out,
                 first ? 0.0f : 1.0f, g, out);
    else /* G[out, in] = dY^T X */
        px_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, (int)m, 1.0f, dy, out, x, in,
                 first ? 0.0f : 1.0f, g, in);
}

/* The gradient averaged over the ranks, the same bits on every rank. */
static void mean_over_ranks(const px_masked *m, float *g) {
    char what[300];
    snprintf(what, sizeof what, "the dense gradient of '%s' (--dst rigl)", m->name);
    px_comm_mean_floats(g, m->numel, what);
}

static void update_mask(px_masked *m, int64_t id, int64_t t, double fraction, int n_slots) {
    px_pattern pt;
    px_pattern_of(m->d, &pt);
    int64_t items = px_pattern_items(&pt), live = px_pattern_live_items(&pt, m->d->nnz);
    int64_t k = (int64_t)floor(fraction * (double)live + 0.5);
    if (k <= 0) return;
    uint32_t *key = malloc(sizeof(uint32_t) * (size_t)items);
    uint8_t *entries = malloc((size_t)m->numel), *reset = malloc((size_t)m->numel);
    uint8_t *is_live = malloc((size_t)items), *kept = malloc((size_t)items);
    uint8_t *grown = malloc((size_t)items);
    if (!key || !entries || !reset || !is_live || !kept || !grown)
        px_rt_fail("--dst: out of memory for the mask update of '%s'", m->name);
    /* the live items, and the magnitudes of their values */
    px_spm_unpack(&m->s, m->vals, m->w);
    memset(entries, 0, (size_t)m->numel);
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)(m->d->nnz ? m->d->nnz : 1));
    if (!pos) px_rt_fail("--dst: out of memory for the mask update of '%s'", m->name);
    px_spm_positions(&m->s, pos);
    for (int64_t e = 0; e < m->d->nnz; e++) entries[pos[e]] = 1;
    free(pos);
    px_pattern_entries_to_items(&pt, entries, is_live);
    px_pattern_keys_abs(&pt, m->w, key);
    px_mask_select_top(key, is_live, items, live - k, kept);
    /* growth among the items not kept (a dropped one may come back, from zero) */
    for (int64_t i = 0; i < items; i++) is_live[i] = !kept[i];
    if (dst.o.kind == PX_DST_RIGL) {
        if (dst.grad_step[id] != t)
            px_rt_fail("internal error: --dst rigl: no dense gradient of '%s' at step %lld",
                       m->name, (long long)t);
        mean_over_ranks(m, dst.grad[id]);
        px_pattern_keys_abs(&pt, dst.grad[id], key);
    } else {
        for (int64_t i = 0; i < items; i++)
            key[i] =
                px_mask_random_key((uint64_t)m->d->seed, m->name_hash, (uint64_t)t, (uint64_t)i);
    }
    px_mask_select_top(key, is_live, items, k, grown);
    for (int64_t i = 0; i < items; i++) kept[i] |= grown[i];
    px_pattern_items_to_entries(&pt, kept, entries);
    px_pattern_items_to_entries(&pt, grown, reset);
    px_masked_set_mask(m, entries, reset, n_slots);
    free(key);
    free(entries);
    free(reset);
    free(is_live);
    free(kept);
    free(grown);
}

void px_dst_after_step(int64_t t) {
    if (!px_dst_updates_after(t)) return;
    double fraction = dst.o.fraction / 2 * (1 + cos(M_PI * (double)t / (double)dst.o.until));
    int n_slots = px_optim_n_slots(px_train.prog->optim->kind);
    for (int64_t id = 0; id < px_sparse_count(); id++)
        update_mask(px_sparse_get(id), id, t, fraction, n_slots);
}
