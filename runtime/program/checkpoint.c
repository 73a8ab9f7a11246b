/* Writing a sharded checkpoint (format in checkpoint.h). */
#include "checkpoint.h"

#include "ckpt_layout.h"
#include "file_atomic.h"
#include "hash64.h"
#include "pb_write.h"
#include "px_kernel.h"
#include "px_train.h"
#include "sparse/masked.h"
#include "tp_slabs.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoints are written in the host byte order, which must be little-endian"
#endif

static const char magic[8] = {'P', 'X', 'C', 'K', 'P', 'T', '\r', '\n'};
static const char end_magic[8] = {'P', 'X', 'C', 'K', 'E', 'N', 'D', '\n'};

uint64_t px_model_identity(const px_program_desc *p) {
    uint64_t h = px_hash64_u64(PX_HASH64_INIT, (uint64_t)p->n_vars);
    for (int64_t v = 0; v < p->n_vars; v++) {
        px_var_desc whole = px_tp_full_var(p, v); /* the same under any --tp */
        const px_var_desc *d = &whole;
        h = px_hash64(h, d->name, strlen(d->name));
        h = px_hash64_u64(h, (uint64_t)d->dtype);
        h = px_hash64_u64(h, (uint64_t)d->rank);
        h = px_hash64(h, d->dims, sizeof(int64_t) * (size_t)d->rank);
    }
    return px_hash64_u64(h, (uint64_t)(p->optim ? p->optim->kind : -1));
}

int px_ckpt_relaxed(const px_ckpt_state *st) {
    return st->wire != 0 || st->error_feedback != 0 || st->sync_every > 1 ||
           st->local_sgd_after != 0 || st->staleness != 0;
}

static int all_finite(const float *a, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(a[i])) return 0;
    return 1;
}

/* The segments this rank writes: the ones it owns. */
static int mine(const px_row_block *s) {
    return s->owner == px_comm_rank() && s->rows > 0;
}

/* Whether this rank checks segment s of variable v: the rows it writes,
 * or under --pp those of the variables its stage holds (rank 0 writes
 * another stage's from rows it receives block by block, after the check).
 * A variable stored split (--tp) is checked by its slabs' holders. */
static int checks(const px_program_desc *p, int64_t v, const px_row_block *s) {
    if (p->pp > 1 && p->var_pp_stage && p->vars[v].sync != PX_SYNC_PS)
        return px_var_held(p, v) && s->w && s->rows > 0;
    return mine(s) && s->w;
}

static int finite_slab(const px_program_desc *p, int64_t v) {
    if (!px_tp_var_split(p, v) || p->vars[v].sync == PX_SYNC_PS || !px_var_held(p, v)) return 1;
    return all_finite(p->vars[v].data, p->vars[v].nbytes / 4);
}

/* Every rank checks the rows it holds; all agree on the first variable
 * holding NaN or infinity, and nothing is written. */
static void refuse_non_finite(const char *path, const px_program_desc *p, int n_slots,
                              const px_ckpt_state *st) {
    int64_t bad = INT64_MAX;
    for (int64_t v = 0; v < p->n_vars && bad == INT64_MAX; v++) {
        int64_t n;
        px_row_block *seg = px_ck_segments(p, v, n_slots, &n);
        if (!finite_slab(p, v)) bad = v;
        for (int64_t i = 0; i < n; i++)
            if (checks(p, v, &seg[i]) && !all_finite(seg[i].w, seg[i].rows * seg[i].dim)) bad = v;
        free(seg);
    }
    bad = px_comm_min_i64(bad);
    if (bad == INT64_MAX) return;
    if (px_comm_rank() != 0) {
        px_comm_bcast_u64(0); /* rank 0 ends the job with the message */
        exit(1);
    }
    px_rt_fail("variable '%s' holds NaN or infinite values after step %lld: checkpoint not "
               "written (%s is unchanged)",
               p->vars[bad].name, (long long)st->step, path);
}

typedef struct hash_list {
    uint64_t *h;
    int64_t n, cap;
} hash_list;

static void hash_add(hash_list *l, uint64_t h) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        l->h = realloc(l->h, sizeof *l->h * (size_t)l->cap);
        if (!l->h) px_rt_fail("out of memory for checkpoint hashes");
    }
    l->h[l->n++] = h;
}

/* A variable stored split (--tp) or held by a later stage (--pp) reaches
 * rank 0 block by block (px_tp_streamed: gathered from the slabs, sent by
 * that stage's first rank), as rank 0 writes it, so no rank holds more
 * than a block of it beyond its own share. The senders' side: every block
 * of v, in the order rank 0 writes them. */
static void send_streamed(const px_program_desc *p, int64_t v, int n_slots) {
    if (!px_tp_streamed(p, v) || !px_var_held(p, v) || px_comm_rank() == 0) return;
    px_var_desc whole = px_tp_full_var(p, v);
    int64_t rows = px_ck_rows(&whole), dim = px_ck_dim(&whole);
    int64_t block = px_ck_block_rows(dim, n_slots);
    for (int64_t r = 0; r < rows; r += block)
        px_tp_stream_rows(p, v, n_slots, r, rows - r < block ? rows - r : block, dim, NULL);
}

/* Rank 0's side: rows [r0, r0 + k) of v and its slots, received and packed
 * into buf as px_ck_pack packs a segment it holds. */
static void pack_streamed(const px_program_desc *p, int64_t v, const px_row_block *s, int n_slots,
                          int64_t r0, int64_t k, float *buf) {
    if (!px_tp_streamed(p, v))
        px_rt_fail("internal error: rank %d writes '%s' and holds none of it", px_comm_rank(),
                   p->vars[v].name);
    float *scratch = malloc(sizeof(float) * (size_t)((1 + n_slots) * k * s->dim + 1));
    float *rows[1 + PX_OPTIM_MAX_SLOTS];
    if (!scratch) px_rt_fail("out of memory for a checkpoint block of '%s'", p->vars[v].name);
    for (int j = 0; j <= n_slots; j++) rows[j] = scratch + j * k * s->dim;
    px_tp_stream_rows(p, v, n_slots, r0, k, s->dim, rows);
    px_row_block got = *s;
    got.row0 = 0;
    got.rows = k;
    got.w = rows[0];
    for (int j = 0; j < n_slots; j++) got.slots[j] = rows[1 + j];
    px_ck_pack(&got, n_slots, 0, k, buf);
    free(scratch);
}

/* Writes this rank's segments to its piece (a temporary until committed),
 * one hash per block. Returns whether it has a piece. */
static int write_piece(const char *path, const px_program_desc *p, int n_slots, px_atomic_file *af,
                       hash_list *hashes) {
    int me = px_comm_rank(), have = 0;
    float *buf = NULL;
    size_t buf_bytes = 0;
    char err[4400];
    for (int64_t v = 0; v < p->n_vars; v++) {
        send_streamed(p, v, n_slots);
        int64_t n;
        px_row_block *seg = px_ck_segments(p, v, n_slots, &n);
        for (int64_t i = 0; i < n; i++) {
            const px_row_block *s = &seg[i];
            if (!mine(s)) continue;
            if (!have) {
                char tmp_base[4200];
                snprintf(tmp_base, sizeof tmp_base, "%s.piece%d", path, me);
                if (px_atomic_open(af, tmp_base, err, sizeof err)) px_rt_fail("%s", err);
                have = 1;
            }
            int64_t block = px_ck_block_rows(s->dim, n_slots);
            size_t row = (size_t)px_ck_row_bytes(s->dim, n_slots);
            if (row * (size_t)block > buf_bytes || !buf) {
                free(buf);
                buf_bytes = row * (size_t)block;
                buf = malloc(buf_bytes ? buf_bytes : 1);
                if (!buf)
                    px_rt_fail("out of memory for a checkpoint block of %zu bytes", buf_bytes);
            }
            for (int64_t r = 0; r < s->rows; r += block) {
                int64_t k = s->rows - r < block ? s->rows - r : block;
                if (s->w)
                    px_ck_pack(s, n_slots, r, k, buf);
                else
                    pack_streamed(p, v, s, n_slots, r, k, buf);
                hash_add(hashes, px_hash64(PX_HASH64_INIT, buf, row * (size_t)k));
                if (fwrite(buf, 1, row * (size_t)k, af->f) != row * (size_t)k) {
                    int saved = errno;
                    px_atomic_abort(af);
                    px_rt_fail("cannot write checkpoint piece %s: %s (checkpoint %s is unchanged)",
                               af->tmp, strerror(saved), path);
                }
            }
        }
        free(seg);
    }
    free(buf);
    return have;
}

/* ---- the manifest (rank 0) ---- */

static void put_i64(px_pb_buf *b, int64_t v) {
    px_pb_put_raw(b, &v, 8);
}

static void put_text(px_pb_buf *b, const char *s) {
    put_i64(b, (int64_t)strlen(s));
    px_pb_put_raw(b, s, strlen(s));
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The masks of the masked weights (the same on every rank). */
static void put_masks(px_pb_buf *b, const px_program_desc *p) {
    put_i64(b, p->n_masked);
    for (int64_t i = 0; i < p->n_masked; i++) {
        const px_masked *m = px_sparse_get(i);
        size_t bytes = (size_t)(m->numel + 63) / 64 * 8;
        unsigned char *bits = calloc(bytes + 1, 1);
        if (!bits) px_rt_fail("out of memory for the mask of '%s' in a checkpoint", m->name);
        px_masked_bits(m, bits);
        put_i64(b, m->d->var);
        put_i64(b, m->numel);
        px_pb_put_raw(b, bits, bytes);
        free(bits);
    }
}

/* Rank 0: the manifest's bytes. all/counts: every rank's block hashes. */
static void build_manifest(px_pb_buf *b, const char *path, const px_program_desc *p, int n_slots,
                           const px_ckpt_state *st, uint64_t nonce, const uint64_t *all,
                           const int64_t *counts) {
    int ranks = px_comm_size();
    int64_t *bytes = calloc((size_t)ranks, sizeof *bytes);
    int64_t *piece = calloc((size_t)ranks, sizeof *piece);
    int64_t *next_hash = calloc((size_t)ranks, sizeof *next_hash);
    int64_t *end_hash = calloc((size_t)ranks, sizeof *end_hash);
    int64_t *offset = calloc((size_t)ranks, sizeof *offset);
    if (!bytes || !piece || !next_hash || !end_hash || !offset)
        px_rt_fail("out of memory for a manifest");
    /* Piece sizes from the layout; a rank has a piece when it wrote a block. */
    for (int64_t v = 0; v < p->n_vars; v++) {
        int64_t n;
        px_row_block *seg = px_ck_segments(p, v, n_slots, &n);
        for (int64_t i = 0; i < n; i++)
            bytes[seg[i].owner] += seg[i].rows * px_ck_row_bytes(seg[i].dim, n_slots);
        free(seg);
    }
    int64_t n_pieces = 0, first = 0;
    for (int r = 0; r < ranks; r++) {
        next_hash[r] = first;
        first += counts[r];
        end_hash[r] = first;
        piece[r] = counts[r] > 0 ? n_pieces++ : -1;
    }
    put_i64(b, 0); /* the magic, written below */
    int relaxed = px_ckpt_relaxed(st);
    put_i64(b, relaxed ? PX_CKPT_VERSION_RELAXED : PX_CKPT_VERSION);
    put_i64(b, (int64_t)px_model_identity(p));
    put_i64(b, p->optim->kind);
    put_i64(b, n_slots);
    put_i64(b, p->n_vars);
    put_i64(b, st->step);
    put_i64(b, st->shuffle);
    put_i64(b, (int64_t)st->shuffle_seed);
    put_i64(b, st->epoch);
    put_i64(b, st->samples);
    put_i64(b, st->global_batch);
    put_i64(b, (int64_t)st->data_fingerprint);
    put_i64(b, (int64_t)st->dropout_seed);
    put_i64(b, st->shuffle_buffer);
    put_i64(b, st->partitions);
    if (relaxed) {
        put_i64(b, st->wire);
        put_i64(b, st->error_feedback);
        put_i64(b, st->sync_every);
        put_i64(b, st->local_sgd_after);
        put_i64(b, st->staleness);
    }
    put_text(b, p->model ? p->model : "");
    put_i64(b, (int64_t)nonce);
    put_i64(b, n_pieces);
    for (int r = 0; r < ranks; r++) {
        if (piece[r] < 0) continue;
        char name[4300];
        px_ck_piece_path(name, sizeof name, base_name(path), nonce, r);
        put_text(b, name);
        put_i64(b, bytes[r]);
    }
    for (int64_t v = 0; v < p->n_vars; v++) {
        px_var_desc whole = px_tp_full_var(p, v);
        const px_var_desc *d = &whole;
        int64_t n;
        px_row_block *seg = px_ck_segments(p, v, n_slots, &n);
        put_text(b, d->name);
        put_i64(b, d->rank);
        px_pb_put_raw(b, d->dims, sizeof(int64_t) * (size_t)d->rank);
        put_i64(b, px_ck_rows(d));
        put_i64(b, px_ck_dim(d));
        put_i64(b, n);
        for (int64_t i = 0; i < n; i++) {
            const px_row_block *s = &seg[i];
            int o = s->owner;
            int64_t block = px_ck_block_rows(s->dim, n_slots);
            int64_t blocks = px_ck_n_blocks(s->rows, block);
            if (piece[o] < 0 || next_hash[o] + blocks > end_hash[o])
                px_rt_fail("internal error: rank %d wrote other segments than the layout of '%s' "
                           "lists",
                           o, d->name);
            put_i64(b, piece[o]);
            put_i64(b, s->row0);
            put_i64(b, s->rows);
            put_i64(b, offset[o]);
            put_i64(b, block);
            px_pb_put_raw(b, all + next_hash[o], sizeof(uint64_t) * (size_t)blocks);
            next_hash[o] += blocks;
            offset[o] += s->rows * px_ck_row_bytes(s->dim, n_slots);
        }
        free(seg);
    }
    for (int r = 0; r < ranks; r++)
        if (next_hash[r] != end_hash[r])
            px_rt_fail("internal error: rank %d wrote more checkpoint blocks than its segments", r);
    put_masks(b, p);
    memcpy(b->data, magic, sizeof magic);
    uint64_t sum = px_ck_hash(PX_HASH64_INIT, b->data, b->len);
    px_pb_put_raw(b, &sum, 8);
    px_pb_put_raw(b, end_magic, sizeof end_magic);
    if (b->oom) px_rt_fail("out of memory for the manifest of %s", path);
    free(bytes);
    free(piece);
    free(next_hash);
    free(end_hash);
    free(offset);
}

/* Whether entry names a piece of the checkpoint called `name`
 * ("<name>.<16 hex>.<rank>", *hex pointing at the hex), or a temporary of
 * one ("<name>.<16 hex>.<rank>.tmp", "<name>.piece<rank>.tmp": *hex NULL
 * for the latter). */
static int piece_of(const char *entry, const char *name, const char **hex, int *tmp) {
    size_t n = strlen(name);
    *hex = NULL;
    *tmp = 0;
    if (strncmp(entry, name, n) || entry[n] != '.') return 0;
    const char *rest = entry + n + 1;
    if (!strncmp(rest, "piece", 5)) {
        const char *q = rest + 5;
        if (!*q) return 0;
        while (*q >= '0' && *q <= '9') q++;
        return *tmp = !strcmp(q, ".tmp");
    }
    for (int i = 0; i < 16; i++)
        if (!((rest[i] >= '0' && rest[i] <= '9') || (rest[i] >= 'a' && rest[i] <= 'f'))) return 0;
    if (rest[16] != '.' || !rest[17]) return 0;
    const char *q = rest + 17;
    while (*q >= '0' && *q <= '9') q++;
    if (*q && strcmp(q, ".tmp")) return 0;
    *hex = rest;
    *tmp = *q != 0;
    return 1;
}

/* The pieces of the checkpoint at path other than those of `nonce`, and
 * temporaries: left by an earlier checkpoint, or by one that failed before
 * its manifest. */
static int superseded(const char *entry, const char *name, uint64_t nonce) {
    const char *hex;
    int tmp;
    if (!piece_of(entry, name, &hex, &tmp)) return 0;
    if (!hex) return 1;
    char mine_hex[17];
    snprintf(mine_hex, sizeof mine_hex, "%016llx", (unsigned long long)nonce);
    return strncmp(hex, mine_hex, 16) != 0;
}

int px_checkpoint_input_files(const char *path, px_path_list *l) {
    if (px_path_list_add(l, "--resume", path)) return -1;
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    const char *dir = dirname(copy);
    const char *name = base_name(path);
    DIR *dp = opendir(dir);
    if (!dp) return 0;
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(dp))) {
        const char *hex;
        int tmp;
        if (!piece_of(e->d_name, name, &hex, &tmp) || tmp) continue;
        char full[8400];
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        rc = px_path_list_add(l, "a piece of --resume", full);
    }
    closedir(dp);
    return rc;
}

static void remove_superseded(const char *path, uint64_t nonce) {
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    const char *dir = dirname(copy);
    const char *name = base_name(path);
    DIR *dp = opendir(dir);
    if (!dp) return;
    struct dirent *e;
    while ((e = readdir(dp))) {
        if (!superseded(e->d_name, name, nonce)) continue;
        char full[8400];
        snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
        if (unlink(full) && errno != ENOENT)
            fprintf(stderr, "warning: cannot remove the old checkpoint piece %s: %s\n", full,
                    strerror(errno));
    }
    closedir(dp);
}

void px_checkpoint_write(const char *path, const px_program_desc *p, const px_ckpt_state *st) {
    int me = px_comm_rank(), ranks = px_comm_size();
    int n_slots = px_optim_n_slots(p->optim->kind);
    char err[4400];
    /* masked weights: their values and state written as a replica's, dense */
    px_sparse_dense_state_begin(1);
    refuse_non_finite(path, p, n_slots, st);

    px_atomic_file af;
    hash_list hashes = {0};
    int have = write_piece(path, p, n_slots, &af, &hashes);

    /* The nonce names the pieces after their contents (and the layout), so a
     * manifest can only ever match the pieces written with it. */
    int64_t *counts = calloc((size_t)ranks, sizeof *counts);
    if (!counts) px_rt_fail("out of memory for a checkpoint");
    uint64_t *all = px_comm_gather_u64(hashes.h, hashes.n, counts);
    uint64_t nonce = 0;
    if (me == 0) {
        nonce = px_hash64_u64(px_model_identity(p), (uint64_t)st->step);
        for (int r = 0; r < ranks; r++) nonce = px_hash64_u64(nonce, (uint64_t)counts[r]);
        int64_t total = 0;
        for (int r = 0; r < ranks; r++) total += counts[r];
        nonce = px_ck_hash(nonce, all, sizeof(uint64_t) * (size_t)total);
    }
    nonce = px_comm_bcast_u64(nonce);
    if (have) {
        char final[4300];
        px_ck_piece_path(final, sizeof final, path, nonce, me);
        if (px_atomic_commit_as(&af, final, err, sizeof err))
            px_rt_fail("%s (checkpoint %s is unchanged)", err, path);
    }
    free(hashes.h);
    /* Every piece is on disk before the manifest names it. */
    px_comm_min_i64(0);
    if (me == 0) {
        px_pb_buf m = {0};
        build_manifest(&m, path, p, n_slots, st, nonce, all, counts);
        px_atomic_file mf;
        if (px_atomic_open(&mf, path, err, sizeof err)) px_rt_fail("%s", err);
        if (fwrite(m.data, 1, m.len, mf.f) != m.len) {
            int saved = errno;
            px_atomic_abort(&mf);
            px_rt_fail("cannot write checkpoint %s.tmp: %s (%s is unchanged)", path,
                       strerror(saved), path);
        }
        px_pb_free(&m);
        if (px_atomic_commit(&mf, err, sizeof err))
            px_rt_fail("%s (checkpoint %s is unchanged)", err, path);
        remove_superseded(path, nonce);
    }
    free(all);
    free(counts);
    px_sparse_dense_state_end();
}
