#include "checkpoint.h"

#include "data.h"
#include "file_atomic.h"
#include "hash64.h"
#include "px_kernel.h"
#include "px_train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoints are written in the host byte order, which must be little-endian"
#endif

static const char magic[8] = {'P', 'X', 'C', 'K', 'P', 'T', '\r', '\n'};
static const char end_magic[8] = {'P', 'X', 'C', 'K', 'E', 'N', 'D', '\n'};
#define PIECE ((size_t)1 << 20) /* arrays are hashed in pieces of this size */
#define MAX_NAME 65536
#define MAX_VARS 10000000

static const char *optim_name(int64_t kind) {
    static const char *names[] = {"sgd", "momentum", "adam", "adagrad"};
    return kind >= 0 && kind < 4 ? names[kind] : "unknown";
}

uint64_t px_model_identity(const px_program_desc *p) {
    uint64_t h = px_hash64_u64(PX_HASH64_INIT, (uint64_t)p->n_vars);
    for (int64_t v = 0; v < p->n_vars; v++) {
        const px_var_desc *d = &p->vars[v];
        h = px_hash64(h, d->name, strlen(d->name));
        h = px_hash64_u64(h, (uint64_t)d->dtype);
        h = px_hash64_u64(h, (uint64_t)d->rank);
        h = px_hash64(h, d->dims, sizeof(int64_t) * (size_t)d->rank);
    }
    return px_hash64_u64(h, (uint64_t)(p->optim ? p->optim->kind : -1));
}

static int64_t var_numel(const px_var_desc *d) {
    return d->nbytes / 4;
}

/* Slots of replicated variables live in px_train.slots; PS variables' state
 * comes from the shards through px_comm_var_gather / px_comm_var_load. */
static int replicated(const px_var_desc *d) {
    return d->sync != PX_SYNC_PS;
}

/* ---- writing ---- */

typedef struct writer {
    px_atomic_file af;
    uint64_t h;
    int failed;
} writer;

static void put(writer *w, const void *data, size_t n) {
    if (w->af.f && n && fwrite(data, 1, n, w->af.f) != n) w->failed = 1;
    w->h = px_hash64(w->h, data, n);
}

static void put_i64(writer *w, int64_t v) {
    put(w, &v, 8);
}

static void put_text(writer *w, const char *s) {
    put_i64(w, (int64_t)strlen(s));
    put(w, s, strlen(s));
}

static void put_array(writer *w, const float *a, int64_t numel) {
    size_t n = (size_t)numel * 4;
    const char *p = (const char *)a;
    for (size_t off = 0; off < n; off += PIECE) put(w, p + off, n - off < PIECE ? n - off : PIECE);
}

typedef struct var_scratch {
    float *w;
    float *slots[PX_OPTIM_MAX_SLOTS];
} var_scratch;

/* One buffer for the largest variable and its slots, reused per variable. */
static void scratch_alloc(var_scratch *s, const px_program_desc *p, int n_slots) {
    int64_t most = 1;
    for (int64_t v = 0; v < p->n_vars; v++)
        if (var_numel(&p->vars[v]) > most) most = var_numel(&p->vars[v]);
    memset(s, 0, sizeof *s);
    s->w = malloc(sizeof(float) * (size_t)most);
    for (int k = 0; k < n_slots; k++) s->slots[k] = malloc(sizeof(float) * (size_t)most);
    int ok = s->w != NULL;
    for (int k = 0; k < n_slots; k++) ok = ok && s->slots[k];
    if (!ok) px_rt_fail("out of memory for a checkpoint buffer of %lld floats", (long long)most);
}

static void scratch_free(var_scratch *s) {
    free(s->w);
    for (int k = 0; k < PX_OPTIM_MAX_SLOTS; k++) free(s->slots[k]);
}

static int all_finite(const float *a, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(a[i])) return 0;
    return 1;
}

void px_checkpoint_write(const char *path, const px_program_desc *p, const px_ckpt_state *st) {
    int root = px_comm_rank() == 0;
    int n_slots = px_optim_n_slots(p->optim->kind);
    char err[4400];
    writer w = {.h = PX_HASH64_INIT};
    if (root && px_atomic_open(&w.af, path, err, sizeof err)) px_rt_fail("%s", err);
    put(&w, magic, sizeof magic);
    put_i64(&w, PX_CKPT_VERSION);
    put_i64(&w, (int64_t)px_model_identity(p));
    put_i64(&w, p->optim->kind);
    put_i64(&w, n_slots);
    put_i64(&w, p->n_vars);
    put_i64(&w, st->step);
    put_i64(&w, st->shuffle);
    put_i64(&w, (int64_t)st->shuffle_seed);
    put_i64(&w, st->epoch);
    put_i64(&w, st->samples);
    put_i64(&w, st->global_batch);
    put_i64(&w, (int64_t)st->data_fingerprint);
    put_i64(&w, (int64_t)st->dropout_seed);
    put_text(&w, p->model ? p->model : "");
    var_scratch s;
    scratch_alloc(&s, p, n_slots);
    for (int64_t v = 0; v < p->n_vars; v++) {
        const px_var_desc *d = &p->vars[v];
        int64_t numel = var_numel(d);
        float *want[PX_OPTIM_MAX_SLOTS] = {NULL, NULL};
        for (int k = 0; k < n_slots && !replicated(d); k++) want[k] = s.slots[k];
        px_comm_var_gather(v, s.w, want);
        if (!root) continue;
        if (!all_finite(s.w, numel)) {
            px_atomic_abort(&w.af);
            px_rt_fail("variable '%s' holds NaN or infinite values after step %lld: checkpoint "
                       "not written (%s is unchanged)",
                       d->name, (long long)st->step, path);
        }
        put_text(&w, d->name);
        put_i64(&w, d->rank);
        put(&w, d->dims, sizeof(int64_t) * (size_t)d->rank);
        put_array(&w, s.w, numel);
        for (int k = 0; k < n_slots; k++)
            put_array(&w, replicated(d) ? px_train.slots[v * PX_OPTIM_MAX_SLOTS + k] : s.slots[k],
                      numel);
    }
    scratch_free(&s);
    if (!root) return;
    uint64_t sum = w.h;
    put(&w, &sum, 8);
    put(&w, end_magic, sizeof end_magic);
    if (w.failed) {
        int saved = errno;
        px_atomic_abort(&w.af);
        px_rt_fail("cannot write checkpoint %s.tmp: %s (%s is unchanged)", path, strerror(saved),
                   path);
    }
    if (px_atomic_commit(&w.af, err, sizeof err))
        px_rt_fail("%s (checkpoint %s is unchanged)", err, path);
}

/* ---- reading ---- */

typedef struct reader {
    FILE *f;
    const char *path;
    uint64_t h;
    int64_t pos, size;
} reader;

static void get(reader *r, void *out, size_t n) {
    if (r->pos + (int64_t)n > r->size)
        px_rt_fail("checkpoint %s is truncated (%lld bytes; the variables it lists need more)",
                   r->path, (long long)r->size);
    if (n && fread(out, 1, n, r->f) != n)
        px_rt_fail("cannot read checkpoint %s: %s", r->path,
                   ferror(r->f) ? strerror(errno) : "unexpected end of file");
    r->pos += (int64_t)n;
    r->h = px_hash64(r->h, out, n);
}

static int64_t get_i64(reader *r) {
    int64_t v;
    get(r, &v, 8);
    return v;
}

/* A length field, checked before anything is allocated from it. */
static int64_t get_len(reader *r, int64_t max, const char *what) {
    int64_t n = get_i64(r);
    if (n < 0 || n > max)
        px_rt_fail("checkpoint %s is damaged: %s of %lld", r->path, what, (long long)n);
    return n;
}

static char *get_text(reader *r, const char *what) {
    int64_t n = get_len(r, MAX_NAME, what);
    char *s = malloc((size_t)n + 1);
    if (!s) px_rt_fail("out of memory reading checkpoint %s", r->path);
    get(r, s, (size_t)n);
    s[n] = '\0';
    return s;
}

/* Reads (and hashes) an array of numel floats into out, or just hashes it
 * through buf when out is NULL. */
static void get_array(reader *r, float *out, int64_t numel, char *buf) {
    size_t n = (size_t)numel * 4;
    for (size_t off = 0; off < n; off += PIECE) {
        size_t k = n - off < PIECE ? n - off : PIECE;
        get(r, out ? (char *)out + off : buf, k);
    }
}

typedef struct ckpt_var {
    char *name;
    int64_t rank, dims[PX_K_MAX_RANK], numel;
    int64_t data_offset; /* file offset of the weights */
} ckpt_var;

typedef struct ckpt_file {
    int64_t version, identity, optim_kind, n_slots, n_vars;
    px_ckpt_state st;
    char *model;
    ckpt_var *vars;
} ckpt_file;

/* Pass 1: reads the whole file, checks its structure and checksum, and
 * notes where each variable's data is. Nothing is compared with the
 * program yet, so damage is reported as damage. */
static void scan(reader *r, ckpt_file *c) {
    char m[8];
    if (r->size < (int64_t)sizeof m) px_rt_fail("%s is not a Parallax checkpoint", r->path);
    get(r, m, sizeof m);
    if (memcmp(m, magic, sizeof m)) px_rt_fail("%s is not a Parallax checkpoint", r->path);
    c->version = get_i64(r);
    if (c->version != PX_CKPT_VERSION)
        px_rt_fail("checkpoint %s has format version %lld; this program reads version %d", r->path,
                   (long long)c->version, PX_CKPT_VERSION);
    c->identity = get_i64(r);
    c->optim_kind = get_i64(r);
    c->n_slots = get_len(r, PX_OPTIM_MAX_SLOTS, "an optimizer slot count");
    c->n_vars = get_len(r, MAX_VARS, "a variable count");
    c->st.step = get_i64(r);
    c->st.shuffle = (int)get_i64(r);
    c->st.shuffle_seed = (uint64_t)get_i64(r);
    c->st.epoch = get_i64(r);
    c->st.samples = get_i64(r);
    c->st.global_batch = get_i64(r);
    c->st.data_fingerprint = (uint64_t)get_i64(r);
    c->st.dropout_seed = (uint64_t)get_i64(r);
    if (c->st.step < 0)
        px_rt_fail("checkpoint %s is damaged: step %lld", r->path, (long long)c->st.step);
    c->model = get_text(r, "a model name length");
    c->vars = calloc((size_t)c->n_vars + 1, sizeof *c->vars);
    char *buf = malloc(PIECE);
    if (!c->vars || !buf) px_rt_fail("out of memory reading checkpoint %s", r->path);
    for (int64_t v = 0; v < c->n_vars; v++) {
        ckpt_var *cv = &c->vars[v];
        cv->name = get_text(r, "a variable name length");
        cv->rank = get_len(r, PX_K_MAX_RANK, "a variable rank");
        get(r, cv->dims, sizeof(int64_t) * (size_t)cv->rank);
        cv->numel = 1;
        for (int64_t i = 0; i < cv->rank; i++) {
            if (cv->dims[i] < 0 || (cv->dims[i] && cv->numel > r->size / cv->dims[i]))
                px_rt_fail("checkpoint %s is damaged: variable '%s' has an impossible shape",
                           r->path, cv->name);
            cv->numel *= cv->dims[i];
        }
        cv->data_offset = r->pos;
        for (int64_t k = 0; k <= c->n_slots; k++) get_array(r, NULL, cv->numel, buf);
    }
    free(buf);
    uint64_t expect = r->h, sum;
    get(r, &sum, 8);
    get(r, m, sizeof m);
    if (sum != expect || memcmp(m, end_magic, sizeof m))
        px_rt_fail("checkpoint %s is damaged (checksum mismatch): not loaded", r->path);
    if (r->pos != r->size)
        px_rt_fail("checkpoint %s is damaged: %lld unexpected bytes after its end", r->path,
                   (long long)(r->size - r->pos));
}

/* Pass 2: is the file for this program? Names the first difference. */
static void check_matches(const char *path, const ckpt_file *c, const px_program_desc *p) {
    const char *model = p->model ? p->model : "?";
    if (c->optim_kind != p->optim->kind)
        px_rt_fail("checkpoint %s holds %s optimizer state; this program (%s) trains with %s", path,
                   optim_name(c->optim_kind), model, optim_name(p->optim->kind));
    if (c->n_slots != px_optim_n_slots(p->optim->kind))
        px_rt_fail("checkpoint %s has %lld optimizer slots per variable; %s needs %d", path,
                   (long long)c->n_slots, optim_name(p->optim->kind),
                   px_optim_n_slots(p->optim->kind));
    if (c->n_vars != p->n_vars)
        px_rt_fail("checkpoint %s was written for another model (%s, %lld trainable variables); "
                   "this program (%s) has %lld",
                   path, c->model, (long long)c->n_vars, model, (long long)p->n_vars);
    for (int64_t v = 0; v < p->n_vars; v++) {
        const ckpt_var *cv = &c->vars[v];
        const px_var_desc *d = &p->vars[v];
        int same = !strcmp(cv->name, d->name) && cv->rank == d->rank;
        for (int64_t i = 0; same && i < d->rank; i++) same = cv->dims[i] == d->dims[i];
        if (same) continue;
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

static void read_exact(FILE *f, const char *path, void *out, size_t n) {
    if (n && fread(out, 1, n, f) != n)
        px_rt_fail("cannot read checkpoint %s: %s", path,
                   ferror(f) ? strerror(errno) : "unexpected end of file");
}

void px_checkpoint_read(const char *path, const px_program_desc *p, px_ckpt_state *st) {
    FILE *f = fopen(path, "rb");
    if (!f) px_rt_fail("cannot open checkpoint %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb)) px_rt_fail("cannot read checkpoint %s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) px_rt_fail("checkpoint %s is a folder, not a file", path);
    reader r = {f, path, PX_HASH64_INIT, 0, (int64_t)sb.st_size};
    ckpt_file c;
    memset(&c, 0, sizeof c);
    scan(&r, &c);
    check_matches(path, &c, p);
    int n_slots = (int)c.n_slots;
    var_scratch s;
    scratch_alloc(&s, p, n_slots);
    for (int64_t v = 0; v < p->n_vars; v++) {
        const px_var_desc *d = &p->vars[v];
        const ckpt_var *cv = &c.vars[v];
        size_t bytes = (size_t)cv->numel * 4;
        if (fseeko(f, (off_t)cv->data_offset, SEEK_SET))
            px_rt_fail("cannot read checkpoint %s: %s", path, strerror(errno));
        read_exact(f, path, s.w, bytes);
        for (int k = 0; k < n_slots; k++) read_exact(f, path, s.slots[k], bytes);
        const float *slots[PX_OPTIM_MAX_SLOTS] = {NULL, NULL};
        for (int k = 0; k < n_slots && !replicated(d); k++) slots[k] = s.slots[k];
        px_comm_var_load(v, s.w, slots);
        for (int k = 0; k < n_slots && replicated(d); k++)
            memcpy(px_train.slots[v * PX_OPTIM_MAX_SLOTS + k], s.slots[k], bytes);
    }
    scratch_free(&s);
    fclose(f);
    *st = c.st;
    for (int64_t v = 0; v < c.n_vars; v++) free(c.vars[v].name);
    free(c.vars);
    free(c.model);
}
