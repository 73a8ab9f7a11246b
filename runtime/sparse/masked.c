/* The masked weights of the running program (masked.h) and their initial
 * masks.
 *
 * A pattern's items: unstructured, the entries in storage order; block
 * a x b, the blocks of the logical [out, in] matrix in row-major order (an
 * item's key from its entries' magnitudes summed in double, in row-major
 * order, rounded to float); n:m, the entries, chosen n per group of m
 * consecutive inputs of one output. */
#include "masked.h"
#include "mask_select.h"
#include "pattern.h"

#include "px_kernel.h"

#include <stdlib.h>
#include <string.h>

static struct {
    px_masked *m;
    int64_t n;
    const px_program_desc *p;
} reg;

int64_t px_sparse_count(void) {
    return reg.n;
}

px_masked *px_sparse_get(int64_t id) {
    if (id < 0 || id >= reg.n)
        px_rt_fail("internal error: masked weight %lld of %lld", (long long)id, (long long)reg.n);
    return &reg.m[id];
}

int64_t px_sparse_of_var(int64_t var) {
    for (int64_t i = 0; i < reg.n; i++)
        if (reg.m[i].d->var == var) return i;
    return -1;
}

static void *alloc_or_fail(size_t bytes, const char *what, const char *name) {
    void *p = calloc(bytes ? bytes : 1, 1);
    if (!p) px_rt_fail("out of memory for the %s of masked weight '%s'", what, name);
    return p;
}

void px_masked_set_mask(px_masked *m, const uint8_t *chosen, const uint8_t *reset, int n_slots) {
    const px_masked_desc *d = m->d;
    int64_t nnz = 0;
    for (int64_t k = 0; k < m->numel; k++) nnz += chosen[k] != 0;
    if (nnz != d->nnz)
        px_rt_fail("internal error: mask of '%s' has %lld live entries, not %lld", m->name,
                   (long long)nnz, (long long)d->nnz);
    /* the current values and state in storage layout, then the new mask */
    if (m->vals) px_spm_unpack(&m->s, m->vals, m->w);
    for (int64_t k = 0; k < m->numel; k++)
        if (!chosen[k] || (reset && reset[k])) m->w[k] = 0.0f;
    float *state[PX_OPTIM_MAX_SLOTS] = {0};
    for (int s = 0; s < n_slots; s++) {
        state[s] = alloc_or_fail(sizeof(float) * (size_t)m->numel, "optimizer state", m->name);
        if (m->slots[s]) px_spm_unpack(&m->s, m->slots[s], state[s]);
        for (int64_t k = 0; reset && k < m->numel; k++)
            if (reset[k]) state[s][k] = 0.0f;
    }
    int64_t *pos = alloc_or_fail(sizeof(int64_t) * (size_t)nnz, "mask", m->name);
    for (int64_t k = 0, e = 0; k < m->numel; k++)
        if (chosen[k]) pos[e++] = k;
    px_spm_free(&m->s);
    if (px_spm_build(&m->s, pos, nnz, d->out, d->in, (int)d->w_in_major))
        px_rt_fail("out of memory for the mask of masked weight '%s'", m->name);
    free(pos);
    if (!m->vals) m->vals = alloc_or_fail(sizeof(float) * (size_t)nnz, "live values", m->name);
    px_spm_pack(&m->s, m->w, m->vals);
    for (int s = 0; s < n_slots; s++) {
        if (!m->slots[s])
            m->slots[s] = alloc_or_fail(sizeof(float) * (size_t)nnz, "optimizer state", m->name);
        px_spm_pack(&m->s, state[s], m->slots[s]);
        free(state[s]);
    }
}

/* The initial choice of m's live entries (storage order) into chosen. */
static void choose_initial(const px_masked *m, uint8_t *chosen) {
    const px_masked_desc *d = m->d;
    px_pattern pt;
    px_pattern_of(d, &pt);
    int64_t items = px_pattern_items(&pt);
    uint32_t *key = alloc_or_fail(sizeof(uint32_t) * (size_t)items, "mask", m->name);
    if (d->init == PX_SPARSE_INIT_MAGNITUDE)
        px_pattern_keys_abs(&pt, m->w, key);
    else
        for (int64_t i = 0; i < items; i++)
            key[i] = px_mask_random_key((uint64_t)d->seed, m->name_hash, 0, (uint64_t)i);
    uint8_t *item_chosen = alloc_or_fail((size_t)items, "mask", m->name);
    if (d->pattern == PX_PATTERN_NM)
        px_pattern_select_nm(&pt, key, item_chosen);
    else
        px_mask_select_top(key, NULL, items, px_pattern_live_items(&pt, d->nnz), item_chosen);
    px_pattern_items_to_entries(&pt, item_chosen, chosen);
    free(item_chosen);
    free(key);
}

void px_sparse_setup(const px_program_desc *p) {
    reg.p = p;
    reg.n = p->n_masked;
    if (!reg.n) return;
    reg.m = alloc_or_fail(sizeof *reg.m * (size_t)reg.n, "table", "all");
    int n_slots = px_optim_n_slots(p->optim->kind);
    for (int64_t i = 0; i < reg.n; i++) {
        px_masked *m = &reg.m[i];
        const px_masked_desc *d = &p->masked[i];
        if (d->var < 0 || d->var >= p->n_vars)
            px_rt_fail("internal error: masked weight %lld names variable %lld", (long long)i,
                       (long long)d->var);
        const px_var_desc *v = &p->vars[d->var];
        m->d = d;
        m->name = v->name;
        m->w = v->data;
        m->numel = d->out * d->in;
        m->name_hash = px_mask_name_hash(v->name);
        if (!m->w || v->nbytes != 4 * m->numel)
            px_rt_fail("internal error: masked weight '%s' has no storage of %lld floats", v->name,
                       (long long)m->numel);
        uint8_t *chosen = alloc_or_fail((size_t)m->numel, "mask", m->name);
        choose_initial(m, chosen);
        px_masked_set_mask(m, chosen, NULL, n_slots);
        free(chosen);
    }
}

void px_sparse_teardown(void) {
    for (int64_t i = 0; i < reg.n; i++) {
        px_masked *m = &reg.m[i];
        px_spm_free(&m->s);
        free(m->vals);
        for (int s = 0; s < PX_OPTIM_MAX_SLOTS; s++) free(m->slots[s]);
    }
    free(reg.m);
    memset(&reg, 0, sizeof reg);
}

void px_sparse_write_back(void) {
    for (int64_t i = 0; i < reg.n; i++) px_spm_unpack(&reg.m[i].s, reg.m[i].vals, reg.m[i].w);
}

void px_masked_bits(const px_masked *m, unsigned char *bits) {
    memset(bits, 0, (size_t)(m->numel + 7) / 8);
    int64_t *pos = alloc_or_fail(sizeof(int64_t) * (size_t)m->d->nnz, "mask", m->name);
    px_spm_positions(&m->s, pos);
    for (int64_t e = 0; e < m->d->nnz; e++) bits[pos[e] / 8] |= (unsigned char)(1u << (pos[e] % 8));
    free(pos);
}

void px_sparse_dense_state_begin(int fill) {
    int n_slots = reg.p && reg.p->optim ? px_optim_n_slots(reg.p->optim->kind) : 0;
    for (int64_t i = 0; i < reg.n; i++) {
        px_masked *m = &reg.m[i];
        px_spm_unpack(&m->s, m->vals, m->w);
        for (int s = 0; s < n_slots && px_train.slots; s++) {
            float *dense = alloc_or_fail(sizeof(float) * (size_t)m->numel, "checkpoint", m->name);
            if (fill) px_spm_unpack(&m->s, m->slots[s], dense);
            px_train.slots[m->d->var * PX_OPTIM_MAX_SLOTS + s] = dense;
        }
    }
}

void px_sparse_dense_state_end(void) {
    for (int64_t i = 0; i < reg.n && px_train.slots; i++)
        for (int s = 0; s < PX_OPTIM_MAX_SLOTS; s++) {
            float **slot = &px_train.slots[reg.m[i].d->var * PX_OPTIM_MAX_SLOTS + s];
            free(*slot);
            *slot = NULL;
        }
}

void px_masked_restore(px_masked *m, const unsigned char *bits, int n_slots) {
    uint8_t *chosen = alloc_or_fail((size_t)m->numel, "mask", m->name);
    int64_t live = 0;
    for (int64_t k = 0; k < m->numel; k++) live += chosen[k] = (bits[k / 8] >> (k % 8)) & 1;
    if (live != m->d->nnz)
        px_rt_fail("the checkpoint's mask of '%s' has %lld live entries; this program keeps %lld "
                   "(compiled with another --sparsity)",
                   m->name, (long long)live, (long long)m->d->nnz);
    /* the state read: dense in px_train.slots; make it the packed state's source */
    px_spm_free(&m->s);
    free(m->vals);
    m->vals = NULL;
    for (int s = 0; s < PX_OPTIM_MAX_SLOTS; s++) {
        free(m->slots[s]);
        m->slots[s] = NULL;
    }
    px_masked_set_mask(m, chosen, NULL, 0);
    for (int s = 0; s < n_slots; s++) {
        m->slots[s] = alloc_or_fail(sizeof(float) * (size_t)m->d->nnz, "optimizer state", m->name);
        px_spm_pack(&m->s, px_train.slots[m->d->var * PX_OPTIM_MAX_SLOTS + s], m->slots[s]);
    }
    free(chosen);
}

void px_sparse_step_done(void) {
    for (int64_t i = 0; i < reg.n; i++)
        if (reg.m[i].d->dense_path) px_spm_unpack(&reg.m[i].s, reg.m[i].vals, reg.m[i].w);
}
