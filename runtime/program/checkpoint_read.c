/* Reading a sharded checkpoint (format in checkpoint.h): every rank reads
 * the manifest, then exactly its own rows from the pieces that hold them,
 * whatever the number of ranks and the partitions that wrote them. */
#include "checkpoint.h"
#include "file_in.h"

#include "ckpt_layout.h"
#include "data.h"
#include "hash64.h"
#include "px_kernel.h"
#include "px_train.h"
#include "sparse/masked.h"
#include "tp_slabs.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char magic[8] = {'P', 'X', 'C', 'K', 'P', 'T', '\r', '\n'};
static const char end_magic[8] = {'P', 'X', 'C', 'K', 'E', 'N', 'D', '\n'};
#define MAX_MANIFEST ((int64_t)1 << 30)
#define MAX_NAME 65536
#define MAX_VARS 10000000

/* ---- the manifest, parsed from memory ---- */

typedef struct reader {
    const char *path;
    const unsigned char *p;
    int64_t pos, size;
} reader;

static void damaged(const reader *r, const char *what) {
    px_rt_fail("checkpoint %s is damaged: %s", r->path, what);
}

static void get(reader *r, void *out, int64_t n) {
    if (n < 0 || r->pos + n > r->size) damaged(r, "its manifest ends early");
    memcpy(out, r->p + r->pos, (size_t)n);
    r->pos += n;
}

static int64_t get_i64(reader *r) {
    int64_t v;
    get(r, &v, 8);
    return v;
}

/* A count or length, checked before anything is allocated from it. */
static int64_t get_len(reader *r, int64_t max, const char *what) {
    int64_t n = get_i64(r);
    if (n < 0 || n > max) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s of %lld", what, (long long)n);
        damaged(r, msg);
    }
    return n;
}

/* A count of records of at least min_bytes each: also bounded by the bytes
 * left in the manifest, so a damaged count is refused as damage before an
 * array is allocated for it (not as "out of memory", or a huge allocation). */
static int64_t get_count(reader *r, int64_t max, int64_t min_bytes, const char *what) {
    int64_t n = get_len(r, max, what);
    if (n > (r->size - r->pos) / min_bytes) damaged(r, "its manifest ends early");
    return n;
}

static char *get_text(reader *r, const char *what) {
    int64_t n = get_len(r, MAX_NAME, what);
    char *s = malloc((size_t)n + 1);
    if (!s) px_rt_fail("out of memory reading checkpoint %s", r->path);
    get(r, s, n);
    s[n] = '\0';
    return s;
}

typedef struct ck_seg {
    int64_t piece, row0, rows, offset, block_rows;
    int64_t hashes; /* manifest position of its first block hash */
} ck_seg;

typedef struct ck_var {
    char *name;
    int64_t rank, dims[PX_K_MAX_RANK], rows, dim, n_segs;
    ck_seg *segs;
} ck_var;

typedef struct ck_piece {
    char *name;
    int64_t bytes;
    int fd;
} ck_piece;

typedef struct ck_mask {
    int64_t var, entries;
    int64_t bits; /* manifest position of its bitmap */
} ck_mask;

typedef struct ck_manifest {
    int64_t version, identity, optim_kind, n_slots, n_vars, n_pieces, n_masks;
    ck_mask *masks;
    uint64_t nonce;
    px_ckpt_state st;
    char *model;
    ck_piece *pieces;
    ck_var *vars;
    unsigned char *bytes;
} ck_manifest;

static unsigned char *read_whole(const char *path, int64_t *size) {
    struct stat sb;
    char err[4400];
    int fd = px_open_regular(path, "checkpoint", &sb, err, sizeof err);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
    if (!f) px_rt_fail("%s", fd < 0 ? err : strerror(errno));
    if (sb.st_size > MAX_MANIFEST) px_rt_fail("%s is not a Parallax checkpoint (too large)", path);
    *size = (int64_t)sb.st_size;
    unsigned char *b = malloc((size_t)*size + 1);
    if (!b) px_rt_fail("out of memory reading checkpoint %s", path);
    if (*size && fread(b, 1, (size_t)*size, f) != (size_t)*size)
        px_rt_fail("cannot read checkpoint %s: %s", path,
                   ferror(f) ? strerror(errno) : "unexpected end of file");
    fclose(f);
    return b;
}

/* Checks the frame (magics, checksum) before parsing anything, so damage is
 * reported as damage, then parses the structure. Nothing is compared with
 * the program yet. */
static void scan(reader *r, ck_manifest *c) {
    if (r->size < 8 || memcmp(r->p, magic, 8))
        px_rt_fail("%s is not a Parallax checkpoint", r->path);
    if (r->size >= 16) {
        int64_t version;
        memcpy(&version, r->p + 8, 8);
        if (version < PX_CKPT_VERSION_MIN || version > PX_CKPT_VERSION_RELAXED)
            px_rt_fail("checkpoint %s has format version %lld; this program reads versions %d "
                       "to %d",
                       r->path, (long long)version, PX_CKPT_VERSION_MIN, PX_CKPT_VERSION_RELAXED);
    }
    if (r->size < 32 || memcmp(r->p + r->size - 8, end_magic, 8))
        px_rt_fail("checkpoint %s is truncated (its end marker is missing)", r->path);
    uint64_t sum;
    memcpy(&sum, r->p + r->size - 16, 8);
    if (sum != px_ck_hash(PX_HASH64_INIT, r->p, (size_t)(r->size - 16)))
        px_rt_fail("checkpoint %s is damaged (checksum mismatch): not loaded", r->path);
    r->size -= 16;
    r->pos = 8;
    c->version = get_i64(r);
    c->identity = get_i64(r);
    c->optim_kind = get_i64(r);
    c->n_slots = get_len(r, PX_OPTIM_MAX_SLOTS, "an optimizer slot count");
    /* checked against the bytes left once the pieces are read */
    c->n_vars = get_len(r, MAX_VARS, "a variable count");
    c->st.step = get_i64(r);
    c->st.shuffle = (int)get_i64(r);
    c->st.shuffle_seed = (uint64_t)get_i64(r);
    c->st.epoch = get_i64(r);
    c->st.samples = get_i64(r);
    c->st.global_batch = get_i64(r);
    c->st.data_fingerprint = (uint64_t)get_i64(r);
    c->st.dropout_seed = (uint64_t)get_i64(r);
    c->st.shuffle_buffer = c->version >= 3 ? get_i64(r) : 0;
    c->st.partitions = c->version >= 3 ? get_i64(r) : 0;
    if (c->st.step < 0) damaged(r, "a negative step");
    if (c->version == PX_CKPT_VERSION_RELAXED) {
        c->st.wire = get_i64(r);
        c->st.error_feedback = get_i64(r);
        c->st.sync_every = get_i64(r);
        c->st.local_sgd_after = get_i64(r);
        c->st.staleness = get_i64(r);
        if (c->st.wire < 0 || c->st.wire >= PX_WIRE_COUNT ||
            (c->st.error_feedback != 0 && c->st.error_feedback != 1) || c->st.sync_every < 0 ||
            c->st.local_sgd_after < 0 || c->st.staleness < 0 || !px_ckpt_relaxed(&c->st))
            damaged(r, "an unknown synchronization mode");
    }
    c->model = get_text(r, "a model name length");
    c->nonce = (uint64_t)get_i64(r);
    /* a piece: a name (length + at least 1 byte) and a size */
    c->n_pieces = get_count(r, 1 << 24, 17, "a piece count");
    c->pieces = calloc((size_t)c->n_pieces + 1, sizeof *c->pieces);
    if (!c->pieces) px_rt_fail("out of memory reading checkpoint %s", r->path);
    for (int64_t i = 0; i < c->n_pieces; i++) {
        c->pieces[i].fd = -1;
        c->pieces[i].name = get_text(r, "a piece name length");
        c->pieces[i].bytes = get_len(r, INT64_MAX, "a piece size");
        const char *n = c->pieces[i].name;
        if (!*n || strchr(n, '/') || !strcmp(n, ".") || !strcmp(n, ".."))
            damaged(r, "a piece name that is not a file name in the manifest's folder");
    }
    /* a variable: name length, rank, rows, dim, segment count */
    if (c->n_vars > (r->size - r->pos) / 40) damaged(r, "its manifest ends early");
    c->vars = calloc((size_t)c->n_vars + 1, sizeof *c->vars);
    if (!c->vars) px_rt_fail("out of memory reading checkpoint %s", r->path);
    int64_t row_bytes_per_dim = 4 * (1 + c->n_slots);
    for (int64_t v = 0; v < c->n_vars; v++) {
        ck_var *cv = &c->vars[v];
        cv->name = get_text(r, "a variable name length");
        cv->rank = get_len(r, PX_K_MAX_RANK, "a variable rank");
        get(r, cv->dims, 8 * cv->rank);
        cv->rows = get_len(r, INT64_MAX / 2, "a row count");
        cv->dim = get_len(r, (int64_t)1 << 40, "a row length");
        /* a segment: piece, row0, rows, offset, block size and a hash at least */
        cv->n_segs = get_count(r, cv->rows, 48, "a segment count");
        cv->segs = calloc((size_t)cv->n_segs + 1, sizeof *cv->segs);
        if (!cv->segs) px_rt_fail("out of memory reading checkpoint %s", r->path);
        int64_t next_row = 0;
        for (int64_t i = 0; i < cv->n_segs; i++) {
            ck_seg *s = &cv->segs[i];
            s->piece = get_len(r, c->n_pieces - 1, "a piece number");
            s->row0 = get_i64(r);
            s->rows = get_len(r, cv->rows, "a segment's row count");
            s->offset = get_len(r, INT64_MAX / 2, "a segment offset");
            s->block_rows = get_len(r, INT64_MAX / 2, "a block size");
            if (s->row0 != next_row || s->rows < 1 || s->block_rows < 1)
                damaged(r, "its segments do not cover a variable's rows in order");
            next_row += s->rows;
            if (cv->dim > 0 && s->rows > (INT64_MAX / 4) / (cv->dim * row_bytes_per_dim))
                damaged(r, "a segment too large");
            int64_t len = s->rows * cv->dim * row_bytes_per_dim;
            if (s->offset > c->pieces[s->piece].bytes - len)
                damaged(r, "a segment beyond the end of its piece");
            s->hashes = r->pos;
            int64_t blocks = px_ck_n_blocks(s->rows, s->block_rows);
            if (blocks > (r->size - r->pos) / 8) damaged(r, "its manifest ends early");
            r->pos += 8 * blocks;
        }
        if (next_row != cv->rows) damaged(r, "its segments do not cover a variable's rows");
    }
    /* a masked weight: variable, entries, and a bitmap of at least 8 bytes */
    c->n_masks = c->version >= 4 ? get_count(r, c->n_vars, 24, "a masked weight count") : 0;
    c->masks = calloc((size_t)c->n_masks + 1, sizeof *c->masks);
    if (!c->masks) px_rt_fail("out of memory reading checkpoint %s", r->path);
    for (int64_t i = 0; i < c->n_masks; i++) {
        ck_mask *m = &c->masks[i];
        m->var = get_len(r, c->n_vars - 1, "a masked variable's number");
        m->entries = get_len(r, INT64_MAX / 2, "a mask's entry count");
        if (m->entries != c->vars[m->var].rows * c->vars[m->var].dim)
            damaged(r, "a mask whose size is not its variable's");
        int64_t bytes = (m->entries + 63) / 64 * 8;
        if (bytes > r->size - r->pos) damaged(r, "its manifest ends early");
        m->bits = r->pos;
        r->pos += bytes;
    }
    if (r->pos != r->size) damaged(r, "unexpected bytes at the end of its manifest");
}

/* Is the checkpoint for this program? Names the first difference. */
static void check_matches(const char *path, const ck_manifest *c, const px_program_desc *p) {
    const char *model = p->model ? p->model : "?";
    if (c->optim_kind != p->optim->kind)
        px_rt_fail("checkpoint %s holds %s optimizer state; this program (%s) trains with %s", path,
                   px_optim_kind_name(c->optim_kind), model, px_optim_kind_name(p->optim->kind));
    if (c->n_slots != px_optim_n_slots(p->optim->kind))
        px_rt_fail("checkpoint %s has %lld optimizer slots per variable; %s needs %d", path,
                   (long long)c->n_slots, px_optim_kind_name(p->optim->kind),
                   px_optim_n_slots(p->optim->kind));
    if (c->n_vars != p->n_vars)
        px_rt_fail("checkpoint %s was written for another model (%s, %lld trainable variables); "
                   "this program (%s) has %lld",
                   path, c->model, (long long)c->n_vars, model, (long long)p->n_vars);
    for (int64_t v = 0; v < p->n_vars; v++) {
        const ck_var *cv = &c->vars[v];
        px_var_desc whole = px_tp_full_var(p, v); /* stored whole under any --tp */
        const px_var_desc *d = &whole;
        int same = !strcmp(cv->name, d->name) && cv->rank == d->rank;
        for (int64_t i = 0; same && i < d->rank; i++) same = cv->dims[i] == d->dims[i];
        if (same) {
            if (cv->rows != px_ck_rows(d) || cv->dim != px_ck_dim(d))
                px_rt_fail("checkpoint %s is damaged: variable '%s' is stored as %lld rows of %lld",
                           path, d->name, (long long)cv->rows, (long long)cv->dim);
            continue;
        }
        char got[256], want[256];
        px_shape_text(got, sizeof got, (int)cv->rank, cv->dims);
        px_shape_text(want, sizeof want, (int)d->rank, d->dims);
        px_rt_fail("checkpoint %s was written for another model (%s): its variable %lld is "
                   "'%s' %s, this program's (%s) is '%s' %s",
                   path, c->model, (long long)v, cv->name, got, model, d->name, want);
    }
    if ((uint64_t)c->identity != px_model_identity(p))
        px_rt_fail("checkpoint %s was written for another model (%s; variable types differ from "
                   "this program's, %s)",
                   path, c->model, model);
}

/* Every piece is there, at the size the manifest lists: a checkpoint whose
 * manifest was written over pieces of another is refused whole. */
static void open_pieces(const char *path, ck_manifest *c) {
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    const char *dir = dirname(copy);
    for (int64_t i = 0; i < c->n_pieces; i++) {
        ck_piece *pc = &c->pieces[i];
        char full[8400];
        snprintf(full, sizeof full, "%s/%s", dir, pc->name);
        struct stat sb;
        char why[256];
        /* A regular file: a FIFO planted as a piece is refused, not waited on. */
        pc->fd = px_open_regular_why(full, &sb, why, sizeof why);
        if (pc->fd < 0)
            px_rt_fail("checkpoint %s is incomplete: its piece %s cannot be opened (%s); copy a "
                       "checkpoint with all its pieces",
                       path, full, why);
        if ((int64_t)sb.st_size != pc->bytes)
            px_rt_fail("checkpoint %s is damaged: its piece %s has %lld bytes, the manifest lists "
                       "%lld",
                       path, full, (long long)sb.st_size, (long long)pc->bytes);
    }
}

static void read_at(int fd, void *out, int64_t n, int64_t off, const char *path,
                    const char *piece) {
    char *p = out;
    while (n > 0) {
        ssize_t got = pread(fd, p, (size_t)n, (off_t)off);
        if (got <= 0)
            px_rt_fail("cannot read piece %s of checkpoint %s: %s", piece, path,
                       got < 0 ? strerror(errno) : "unexpected end of file");
        p += got;
        off += got;
        n -= got;
    }
}

/* Reads rows [lo, hi) of variable v (the rows of target t, a block of rows
 * this rank holds) from the segments that have them, checking every block
 * it reads against its hash. */
static void load_rows(const char *path, const ck_manifest *c, const px_program_desc *p, int64_t v,
                      const px_row_block *t, int n_slots, float **buf, size_t *buf_bytes) {
    const ck_var *cv = &c->vars[v];
    int64_t lo = t->row0, hi = t->row0 + t->rows;
    int64_t row = px_ck_row_bytes(cv->dim, n_slots);
    for (int64_t i = 0; i < cv->n_segs; i++) {
        const ck_seg *s = &cv->segs[i];
        if (s->row0 + s->rows <= lo || s->row0 >= hi) continue;
        const ck_piece *pc = &c->pieces[s->piece];
        int64_t first = (lo > s->row0 ? lo - s->row0 : 0) / s->block_rows;
        int64_t end = hi < s->row0 + s->rows ? hi - s->row0 : s->rows;
        for (int64_t b = first; b * s->block_rows < end; b++) {
            int64_t r0 = b * s->block_rows; /* rows of the block, from the segment's start */
            int64_t n = s->rows - r0 < s->block_rows ? s->rows - r0 : s->block_rows;
            size_t bytes = (size_t)(n * row);
            if (bytes > *buf_bytes || !*buf) {
                free(*buf);
                *buf = malloc(bytes ? bytes : 1);
                *buf_bytes = bytes;
                if (!*buf) px_rt_fail("out of memory for a checkpoint block of %zu bytes", bytes);
            }
            read_at(pc->fd, *buf, (int64_t)bytes, s->offset + r0 * row, path, pc->name);
            uint64_t want;
            memcpy(&want, c->bytes + s->hashes + 8 * b, 8);
            if (px_hash64(PX_HASH64_INIT, *buf, bytes) != want)
                px_rt_fail("checkpoint %s is damaged: its piece %s does not match its checksum "
                           "(variable '%s', rows %lld..%lld): not loaded",
                           path, pc->name, cv->name, (long long)(s->row0 + r0),
                           (long long)(s->row0 + r0 + n - 1));
            /* The rows of this block that t holds. */
            int64_t a = s->row0 + r0 > lo ? s->row0 + r0 : lo;
            int64_t z = s->row0 + r0 + n < hi ? s->row0 + r0 + n : hi;
            const float *src = *buf + (a - s->row0 - r0) * (row / 4);
            if (t->w)
                px_ck_unpack(t, n_slots, a - t->row0, z - a, src);
            else /* a variable stored split (--tp): this rank's slab of the rows */
                px_tp_unpack_rows(p, v, n_slots, a, z - a, cv->dim, src);
        }
    }
}

/* Closes the pieces a read opened and frees what scan() built. */
static void manifest_free(ck_manifest *c) {
    for (int64_t i = 0; i < c->n_pieces; i++) {
        if (c->pieces[i].fd >= 0) close(c->pieces[i].fd);
        free(c->pieces[i].name);
    }
    for (int64_t v = 0; v < c->n_vars; v++) {
        free(c->vars[v].name);
        free(c->vars[v].segs);
    }
    free(c->pieces);
    free(c->masks);
    free(c->vars);
    free(c->model);
    free(c->bytes);
}

/* Reads and parses the manifest at path (c's bytes stay, for the masks). */
static void manifest_load(const char *path, ck_manifest *c) {
    memset(c, 0, sizeof *c);
    int64_t size;
    c->bytes = read_whole(path, &size);
    reader r = {path, c->bytes, 0, size};
    scan(&r, c);
}

void px_checkpoint_peek(const char *path, px_ckpt_state *st) {
    ck_manifest c;
    manifest_load(path, &c);
    *st = c.st;
    manifest_free(&c);
}

/* Every masked weight of p gets its mask from the checkpoint. */
static void restore_masks(const char *path, const ck_manifest *c, const px_program_desc *p,
                          int n_slots) {
    for (int64_t i = 0; i < p->n_masked; i++) {
        int64_t var = p->masked[i].var;
        const ck_mask *found = NULL;
        for (int64_t k = 0; k < c->n_masks; k++)
            if (c->masks[k].var == var) found = &c->masks[k];
        if (!found)
            px_rt_fail("checkpoint %s holds no mask for '%s', which this program trains masked "
                       "(--sparsity): it was written by a program compiled without it",
                       path, p->vars[var].name);
        px_masked_restore(px_sparse_get(i), c->bytes + found->bits, n_slots);
    }
}

void px_checkpoint_read(const char *path, const px_program_desc *p, px_ckpt_state *st) {
    ck_manifest c;
    manifest_load(path, &c);
    check_matches(path, &c, p);
    open_pieces(path, &c);
    int n_slots = (int)c.n_slots, me = px_comm_rank();
    float *buf = NULL;
    size_t buf_bytes = 0;
    /* masked weights: their values and dense state are read as a replica's */
    px_sparse_dense_state_begin(0);
    for (int64_t v = 0; v < p->n_vars; v++) {
        int64_t n;
        px_row_block *seg = px_ck_segments(p, v, n_slots, &n);
        int ps = px_comm_var_is_ps(v);
        /* This rank's rows: its shard's partitions; every replica whole;
         * its slab of a split variable (--tp), read block by block;
         * nothing of a variable another stage holds (--pp: no storage). */
        int slab = px_tp_var_split(p, v) && px_var_held(p, v);
        for (int64_t i = 0; i < n; i++)
            if ((!ps || seg[i].owner == me) && (seg[i].w || slab))
                load_rows(path, &c, p, v, &seg[i], n_slots, &buf, &buf_bytes);
        free(seg);
    }
    free(buf);
    restore_masks(path, &c, p, n_slots);
    px_sparse_dense_state_end();
    *st = c.st;
    manifest_free(&c);
}
