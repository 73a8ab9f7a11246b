/* Gradient clipping by the global L2 norm (--clip-grad-norm), equal to
 * torch.nn.utils.clip_grad_norm_ on the 1-rank model.
 *
 * The norm needs every gradient of the step, but the step applies updates
 * as their gradients become ready (replicas after their AllReduce bucket,
 * shards when a push arrives). So while clipping is on, each update is
 * queued with a copy of its gradient (the step's buffers are reused later in
 * the step) and applied by px_clip_finish after the step, scaled by one
 * factor that every rank and shard computes identically:
 *   replicated gradients (AllReduce replicas: the same averaged values on
 *   every rank) count once; shard gradients (the averaged pushed rows a
 *   shard owns) are summed over the ranks. One allgather of each rank's
 *   partial sum of squares, added in rank order, gives every rank the same
 *   norm. */
#include "optim_internal.h"
#include "px_kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct queued {
    const px_optim_desc *o;
    int64_t t;
    float *w;
    float *slots[PX_OPTIM_MAX_SLOTS];
    int64_t dim, n;       /* dense: dim 0, n elements; rows: n rows of dim */
    int64_t g_off, r_off; /* into the pools */
} queued;

static struct {
    queued *q;
    int64_t n, cap;
    float *g;
    int64_t g_len, g_cap;
    int64_t *rows;
    int64_t r_len, r_cap;
    double sumsq[2]; /* [0] shard gradients, [1] replicated */
} clip;

static void *grow(void *p, int64_t *cap, int64_t need, size_t elem) {
    if (need <= *cap) return p;
    int64_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *np = realloc(p, (size_t)c * elem);
    if (!np)
        px_rt_fail("--clip-grad-norm: out of memory queueing %lld gradient values",
                   (long long)need);
    *cap = c;
    return np;
}

static queued *enqueue(const px_optim_desc *o, int64_t t, float *w,
                       float *const slots[PX_OPTIM_MAX_SLOTS], int64_t g_len, int64_t r_len) {
    clip.q = grow(clip.q, &clip.cap, clip.n + 1, sizeof *clip.q);
    clip.g = grow(clip.g, &clip.g_cap, clip.g_len + g_len, sizeof *clip.g);
    clip.rows = grow(clip.rows, &clip.r_cap, clip.r_len + r_len, sizeof *clip.rows);
    queued *e = &clip.q[clip.n++];
    *e = (queued){.o = o, .t = t, .w = w, .g_off = clip.g_len, .r_off = clip.r_len};
    int n_slots = px_optim_n_slots(o->kind);
    for (int s = 0; s < PX_OPTIM_MAX_SLOTS; s++)
        e->slots[s] = s < n_slots && slots ? slots[s] : NULL;
    clip.g_len += g_len;
    clip.r_len += r_len;
    return e;
}

static double sum_squares(const float *g, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)g[i] * (double)g[i];
    return s;
}

void px_clip_submit_dense(const px_optim_desc *o, int64_t t, float *w, const float *g,
                          float *const slots[PX_OPTIM_MAX_SLOTS], int64_t n, int replicated) {
    if (!(px_train.clip_max_norm > 0)) {
        px_optim_dense_now(o, t, w, g, slots, n);
        return;
    }
    queued *e = enqueue(o, t, w, slots, n, 0);
    e->n = n;
    memcpy(clip.g + e->g_off, g, sizeof(float) * (size_t)n);
    clip.sumsq[replicated != 0] += sum_squares(g, n);
}

void px_clip_submit_rows(const px_optim_desc *o, int64_t t, float *w,
                         float *const slots[PX_OPTIM_MAX_SLOTS], int64_t dim, const int64_t *rows,
                         const float *g, int64_t n_rows, int g_by_row, int replicated) {
    if (!(px_train.clip_max_norm > 0)) {
        px_optim_rows_now(o, t, w, slots, dim, rows, g, n_rows, g_by_row);
        return;
    }
    queued *e = enqueue(o, t, w, slots, n_rows * dim, n_rows);
    e->dim = dim;
    e->n = n_rows;
    float *gq = clip.g + e->g_off;
    memcpy(clip.rows + e->r_off, rows, sizeof(int64_t) * (size_t)n_rows);
    for (int64_t i = 0; i < n_rows; i++)
        memcpy(gq + i * dim, g + (g_by_row ? rows[i] : i) * dim, sizeof(float) * (size_t)dim);
    clip.sumsq[replicated != 0] += sum_squares(gq, n_rows * dim);
}

void px_clip_discard(void) {
    clip.n = clip.g_len = clip.r_len = 0;
    clip.sumsq[0] = clip.sumsq[1] = 0;
}

double px_clip_finish(void) {
    int ranks = px_comm_size();
    double *all = malloc(sizeof(double) * (size_t)ranks);
    if (!all) px_rt_fail("--clip-grad-norm: out of memory");
    px_comm_allgather_doubles(&clip.sumsq[0], 1, all);
    double total = clip.sumsq[1];
    for (int r = 0; r < ranks; r++) total += all[r];
    free(all);
    /* torch: clip_coef = max_norm / (total_norm + 1e-6), clamped to 1, in float32. */
    float norm = (float)sqrt(total);
    float coef = (float)px_train.clip_max_norm / (norm + 1e-6f);
    if (coef > 1.0f) coef = 1.0f;
    if (coef < 1.0f)
        for (int64_t i = 0; i < clip.g_len; i++) clip.g[i] *= coef;
    for (int64_t k = 0; k < clip.n; k++) {
        const queued *e = &clip.q[k];
        if (e->dim == 0)
            px_optim_dense_now(e->o, e->t, e->w, clip.g + e->g_off, e->slots, e->n);
        else
            px_optim_rows_now(e->o, e->t, e->w, e->slots, e->dim, clip.rows + e->r_off,
                              clip.g + e->g_off, e->n, 0);
    }
    px_clip_discard();
    return norm;
}
