#include "tp_slabs.h"

#include "px_kernel.h"
#include "px_train.h"

#include <stdlib.h>
#include <string.h>

int px_tp_var_split(const px_program_desc *p, int64_t v) {
    return p->tp > 1 && p->var_tp_axis && p->var_tp_axis[v] >= 0;
}

int64_t px_arena_bytes_held(const px_program_desc *p) {
    if (p->pp <= 1 || !p->pp_arena_bytes || px_pp_stage < 0 || px_pp_stage >= p->pp)
        return p->arena_bytes;
    return p->pp_arena_bytes[px_pp_stage];
}

static int stage_of(const px_program_desc *p, int64_t v) {
    return p->pp > 1 && p->var_pp_stage ? (int)p->var_pp_stage[v] : 0;
}

/* The whole variable's shape is its weight's (the model's initializer). */
px_var_desc px_tp_full_var(const px_program_desc *p, int64_t v) {
    px_var_desc d = p->vars[v];
    if (!px_tp_var_split(p, v)) return d;
    if (d.weight < 0 || d.weight >= p->n_weights)
        px_rt_fail("internal error: split variable '%s' has no weight", d.name);
    const px_weight_desc *w = &p->weights[d.weight];
    d.rank = w->rank;
    d.dims = w->dims;
    d.nbytes = w->nbytes;
    d.data = NULL;
    return d;
}

/* The whole variable as [outer, tp * slab, inner], a slab as [outer, slab,
 * inner]; a variable of several sections along the axis has them in outer
 * (each section split alike). */
typedef struct slab_view {
    int64_t outer, slab, inner, tp;
} slab_view;

static slab_view view_of(const px_program_desc *p, int64_t v) {
    px_var_desc d = px_tp_full_var(p, v);
    int64_t axis = p->var_tp_axis[v];
    int64_t sections = p->var_tp_sections ? p->var_tp_sections[v] : 1;
    slab_view s = {sections, 1, 1, p->tp};
    if (axis < 0 || axis >= d.rank || sections < 1 || d.dims[axis] % (p->tp * sections))
        px_rt_fail("internal error: variable '%s' split on axis %lld in %lld sections", d.name,
                   (long long)axis, (long long)sections);
    for (int64_t i = 0; i < axis; i++) s.outer *= d.dims[i];
    for (int64_t i = axis + 1; i < d.rank; i++) s.inner *= d.dims[i];
    s.slab = d.dims[axis] / (p->tp * sections);
    return s;
}

void px_tp_take_slab(const px_program_desc *p, int64_t v, const float *full, float *slab) {
    slab_view s = view_of(p, v);
    int64_t t = px_comm_rank() % s.tp, run = s.slab * s.inner;
    for (int64_t o = 0; o < s.outer; o++)
        memcpy(slab + o * run, full + (o * s.tp + t) * run, sizeof(float) * (size_t)run);
}

void px_tp_gather(const px_program_desc *p, int64_t v, const float *slab, float *full) {
    slab_view s = view_of(p, v);
    int64_t run = s.slab * s.inner, n = s.outer * run;
    float *all = malloc(sizeof(float) * (size_t)(n * s.tp + 1));
    if (!all) px_rt_fail("out of memory gathering '%s'", p->vars[v].name);
    px_comm_tp_gather(slab, all, n, (int)s.tp);
    for (int64_t t = 0; t < s.tp; t++)
        for (int64_t o = 0; o < s.outer; o++)
            memcpy(full + (o * s.tp + t) * run, all + t * n + o * run, sizeof(float) * (size_t)run);
    free(all);
}

/* Variable v's storage (slot -1) or its optimizer slot's. */
static float *storage(const px_program_desc *p, int64_t v, int slot) {
    if (slot < 0) return p->vars[v].data;
    return px_train.slots ? px_train.slots[v * PX_OPTIM_MAX_SLOTS + slot] : NULL;
}

/* Whether v has optimizer state (the slots alloc_slots gives it): on the
 * ranks that hold it, its slot pointers say; elsewhere (--pp), every
 * variable off the parameter servers has it (masked weights, which keep
 * theirs packed, are refused under --pp). */
static int has_slot(const px_program_desc *p, int64_t v, int slot) {
    if (slot < 0) return 1;
    if (px_var_held(p, v)) return storage(p, v, slot) != NULL;
    return p->vars[v].sync != PX_SYNC_PS;
}

int px_tp_streamed(const px_program_desc *p, int64_t v) {
    /* the shards write a parameter-server variable's rows themselves */
    if (p->vars[v].sync == PX_SYNC_PS) return 0;
    return px_tp_var_split(p, v) || (p->pp > 1 && p->var_pp_stage && stage_of(p, v) > 0);
}

/* A run of rank t's slab inside whole elements [a, b): n elements from
 * slab_at in the slab, at whole_at in the whole variable. */
typedef struct slab_run {
    int64_t slab_at, whole_at, n;
} slab_run;

/* The next run of rank t's slab in [a, b), from outer index *o on (start
 * at a / (tp * slab * inner)); 0 when none is left. */
static int next_run(const slab_view *s, int64_t a, int64_t b, int64_t t, int64_t *o, slab_run *r) {
    int64_t run = s->slab * s->inner, width = s->tp * run;
    for (; *o < s->outer && *o * width < b; (*o)++) {
        int64_t lo = *o * width + t * run, hi = lo + run;
        if (lo < a) lo = a;
        if (hi > b) hi = b;
        if (lo >= hi) continue;
        *r = (slab_run){*o * run + lo - (*o * width + t * run), lo, hi - lo};
        (*o)++;
        return 1;
    }
    return 0;
}

static int64_t run_total(const slab_view *s, int64_t a, int64_t b, int64_t t) {
    int64_t o = a / (s->tp * s->slab * s->inner), n = 0;
    slab_run r;
    while (next_run(s, a, b, t, &o, &r)) n += r.n;
    return n;
}

void px_tp_gather_range(const px_program_desc *p, int64_t v, const float *slab, int64_t a,
                        int64_t n, float *out) {
    slab_view s = view_of(p, v);
    int64_t b = a + n, me = px_comm_rank() % s.tp, most = 0, o0 = a / (s.tp * s.slab * s.inner);
    for (int64_t t = 0; t < s.tp; t++) {
        int64_t c = run_total(&s, a, b, t);
        if (c > most) most = c;
    }
    /* each rank's elements of the range, padded to the most any has */
    float *mine = calloc((size_t)most + 1, sizeof(float));
    float *all = malloc(sizeof(float) * (size_t)(most * s.tp + 1));
    if (!mine || !all) px_rt_fail("out of memory gathering a block of '%s'", p->vars[v].name);
    slab_run r;
    int64_t at = 0, o = o0;
    while (next_run(&s, a, b, me, &o, &r)) {
        memcpy(mine + at, slab + r.slab_at, sizeof(float) * (size_t)r.n);
        at += r.n;
    }
    px_comm_tp_gather(mine, all, most, (int)s.tp);
    for (int64_t t = 0; me == 0 && t < s.tp; t++) {
        const float *from = all + t * most;
        for (o = o0; next_run(&s, a, b, t, &o, &r); from += r.n)
            memcpy(out + (r.whole_at - a), from, sizeof(float) * (size_t)r.n);
    }
    free(mine), free(all);
}

void px_tp_stream_rows(const px_program_desc *p, int64_t v, int n_slots, int64_t r0, int64_t k,
                       int64_t dim, float **rows) {
    if (!px_tp_streamed(p, v)) return;
    int held = px_var_held(p, v), me = px_comm_rank(), split = px_tp_var_split(p, v);
    int stage = stage_of(p, v);
    /* the ranks of the first pipeline (the first tp x pp) send the rows */
    int first = me < (p->tp > 1 ? p->tp : 1) * (p->pp > 1 ? p->pp : 1);
    if (me != 0 && !(held && first)) return;
    float *block = NULL; /* a sender's gathered rows */
    if (me != 0 && split && !(block = malloc(sizeof(float) * (size_t)(k * dim + 1))))
        px_rt_fail("out of memory for a checkpoint block of '%s'", p->vars[v].name);
    for (int s = -1; s < n_slots; s++) {
        if (!has_slot(p, v, s)) {
            if (me == 0) rows[1 + s] = NULL;
            continue;
        }
        float *at = me == 0 ? rows[1 + s] : block;
        if (held && split)
            px_tp_gather_range(p, v, storage(p, v, s), r0 * dim, k * dim, at);
        else if (held)
            at = storage(p, v, s) + r0 * dim;
        /* rows a later stage holds: its first rank sends them to rank 0 */
        if (stage > 0) px_comm_pp_to_first(at, k * dim, stage);
    }
    free(block);
}

void px_tp_unpack_rows(const px_program_desc *p, int64_t v, int n_slots, int64_t r0, int64_t k,
                       int64_t dim, const float *buf) {
    slab_view sv = view_of(p, v);
    int64_t me = px_comm_rank() % sv.tp;
    for (int64_t r = r0; r < r0 + k; r++)
        for (int s = -1; s < n_slots; s++, buf += dim) {
            float *slab = storage(p, v, s);
            if (!slab) continue;
            slab_run run;
            int64_t a = r * dim, o = a / (sv.tp * sv.slab * sv.inner);
            while (next_run(&sv, a, a + dim, me, &o, &run))
                memcpy(slab + run.slab_at, buf + (run.whole_at - a), sizeof(float) * (size_t)run.n);
        }
}
