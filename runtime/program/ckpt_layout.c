#include "ckpt_layout.h"

#include "hash64.h"
#include "px_kernel.h"
#include "px_train.h"
#include "tp_slabs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t px_ck_rows(const px_var_desc *d) {
    return d->rank > 0 ? d->dims[0] : 1;
}

int64_t px_ck_dim(const px_var_desc *d) {
    int64_t dim = 1;
    for (int64_t i = 1; i < d->rank; i++) dim *= d->dims[i];
    return dim;
}

int64_t px_ck_var_bytes(const px_var_desc *d) {
    return 4 * px_ck_rows(d) * px_ck_dim(d);
}

int64_t px_ck_row_bytes(int64_t dim, int n_slots) {
    return dim * 4 * (1 + n_slots);
}

int64_t px_ck_block_rows(int64_t dim, int n_slots) {
    int64_t row = px_ck_row_bytes(dim, n_slots);
    return row > 0 && row < PX_CK_BLOCK_BYTES ? PX_CK_BLOCK_BYTES / row : 1;
}

int64_t px_ck_n_blocks(int64_t rows, int64_t block_rows) {
    return (rows + block_rows - 1) / block_rows;
}

px_row_block *px_ck_segments(const px_program_desc *p, int64_t v, int n_slots, int64_t *n) {
    /* a variable stored split (--tp) or held by another stage (--pp) has
     * no rows here (w NULL): rank 0 writes it from rows sent to it
     * (px_tp_stream_rows), and a rank holding a slab reads it block by
     * block, keeping the slab's elements (px_tp_unpack_rows) */
    px_var_desc whole = px_tp_full_var(p, v);
    const px_var_desc *d = &whole;
    int sent = px_tp_var_split(p, v);
    int ps = px_comm_var_is_ps(v);
    *n = ps ? px_comm_var_n_parts(v) : px_ck_rows(d) > 0;
    px_row_block *s = calloc((size_t)(*n > 0 ? *n : 1), sizeof *s);
    if (!s) px_rt_fail("out of memory for the checkpoint layout of '%s'", d->name);
    if (ps) {
        for (int64_t i = 0; i < *n; i++) px_comm_var_part(v, i, &s[i]);
        return s;
    }
    if (*n == 0) return s;
    s->rows = px_ck_rows(d);
    s->dim = px_ck_dim(d);
    s->owner = 0;
    s->w = sent ? NULL : p->vars[v].data;
    for (int k = 0; k < n_slots && px_train.slots && !sent; k++)
        s->slots[k] = px_train.slots[v * PX_OPTIM_MAX_SLOTS + k];
    return s;
}

void px_ck_pack(const px_row_block *s, int n_slots, int64_t r0, int64_t n, float *buf) {
    size_t row = sizeof(float) * (size_t)s->dim;
    for (int64_t r = r0; r < r0 + n; r++) {
        size_t at = (size_t)(r * s->dim);
        memcpy(buf, s->w + at, row);
        buf += s->dim;
        for (int k = 0; k < n_slots; k++, buf += s->dim) {
            if (s->slots[k])
                memcpy(buf, s->slots[k] + at, row);
            else
                memset(buf, 0, row);
        }
    }
}

void px_ck_unpack(const px_row_block *s, int n_slots, int64_t r0, int64_t n, const float *buf) {
    size_t row = sizeof(float) * (size_t)s->dim;
    for (int64_t r = r0; r < r0 + n; r++) {
        size_t at = (size_t)(r * s->dim);
        memcpy(s->w + at, buf, row);
        buf += s->dim;
        for (int k = 0; k < n_slots; k++, buf += s->dim)
            if (s->slots[k]) memcpy(s->slots[k] + at, buf, row);
    }
}

void px_ck_piece_path(char *out, size_t cap, const char *path, uint64_t nonce, int rank) {
    snprintf(out, cap, "%s.%016llx.%d", path, (unsigned long long)nonce, rank);
}

uint64_t px_ck_hash(uint64_t h, const void *data, size_t n) {
    const size_t piece = (size_t)1 << 20;
    const char *p = data;
    for (size_t off = 0; off < n; off += piece)
        h = px_hash64(h, p + off, n - off < piece ? n - off : piece);
    return h;
}
