#include "dataset_manifest.h"

#include "file_in.h"
#include "hash64.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAGIC "parallax-dataset 1"
/* A manifest lists shards, not samples: even 10 million shards fit. */
#define MAX_MANIFEST_BYTES ((size_t)1 << 30)
#define MAX_INPUTS 4096

void px_data_file_name(char *out, size_t cap, const char *dir, const char *name, const char *ext) {
    int n = snprintf(out, cap, "%s/", dir);
    if (n < 0 || (size_t)n >= cap) n = (int)cap - 1;
    for (const char *p = name; *p && (size_t)n + 1 < cap; p++)
        out[n++] = (*p == '/' || *p == ':') ? '_' : *p;
    out[n] = '\0';
    snprintf(out + n, cap - (size_t)n, "%s", ext);
}

uint64_t px_block_checksum(const void *data, size_t n) {
    return px_hash64(PX_HASH64_INIT, data, n);
}

int64_t px_shard_blocks(int64_t rows, int64_t block_rows) {
    return block_rows > 0 ? (rows + block_rows - 1) / block_rows : 0;
}

int px_manifest_shard_name_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > PX_MANIFEST_NAME_MAX || !strcmp(s, ".") || !strcmp(s, "..")) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '-'))
            return 0;
    return 1;
}

int px_manifest_input_name_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > PX_MANIFEST_NAME_MAX) return 0;
    for (; *s; s++)
        if (*s <= ' ' || *s > '~') return 0;
    return 1;
}

int64_t px_manifest_bytes(const px_manifest *m) {
    return m->text_bytes;
}

int px_manifest_input(const px_manifest *m, const char *name) {
    for (int i = 0; i < m->n_inputs; i++)
        if (!strcmp(m->inputs[i].name, name)) return i;
    return -1;
}

void px_manifest_free(px_manifest *m) {
    for (int64_t s = 0; m->shards && s < m->n_shards; s++) free(m->shards[s].file_bytes);
    free(m->shards);
    free(m->inputs);
    memset(m, 0, sizeof *m);
}

/* ---- parsing ---- */

typedef struct parser {
    const char *path;
    int64_t line;
    char *err;
    size_t cap;
} parser;

static int bad(const parser *ps, const char *what) {
    snprintf(ps->err, ps->cap, "%s:%lld: %s", ps->path, (long long)ps->line, what);
    return -1;
}

/* Splits line (modified in place) at single spaces into at most max words. */
static int split_words(char *line, char **words, int max) {
    int n = 0;
    for (char *p = line; *p;) {
        if (n == max) return max + 1;
        words[n++] = p;
        char *sp = strchr(p, ' ');
        if (!sp) break;
        *sp = '\0';
        p = sp + 1;
    }
    return n;
}

/* A whole number in [min, 10^18]. */
static int parse_count(const char *s, int64_t min, int64_t *out) {
    if (!*s || *s == '-' || *s == '+' || *s == ' ') return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > 1000000000000000000LL) return -1;
    *out = v;
    return 0;
}

static int parse_hash(const char *s, uint64_t *out) {
    if (strlen(s) != 16) return -1;
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        int c = s[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return -1;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 0;
}

/* "[13]", "[]", "[4,8]" */
static int parse_shape(const char *s, px_ds_input *in) {
    size_t n = strlen(s);
    if (n < 2 || s[0] != '[' || s[n - 1] != ']') return -1;
    in->rank = 0;
    if (n == 2) return 0;
    const char *p = s + 1;
    for (;;) {
        if (in->rank == PX_NPY_MAX_RANK - 1 || *p < '0' || *p > '9') return -1;
        char *end;
        errno = 0;
        long long d = strtoll(p, &end, 10);
        if (errno || d < 0 || d > 1000000000000LL) return -1;
        in->dims[in->rank++] = d;
        if (*end == ']') return end == s + n - 1 ? 0 : -1;
        if (*end != ',') return -1;
        p = end + 1;
    }
}

static int parse_input(parser *ps, px_manifest *m, char **w, int nw) {
    if (nw != 4) return bad(ps, "an input line is 'input NAME DTYPE [SHAPE]'");
    if (m->n_shards) return bad(ps, "input lines come before the shard lines");
    if (m->n_inputs == MAX_INPUTS) return bad(ps, "more than 4096 inputs");
    if (!px_manifest_input_name_ok(w[1])) return bad(ps, "bad input name");
    if (px_manifest_input(m, w[1]) >= 0) return bad(ps, "an input is listed twice");
    px_ds_input in;
    memset(&in, 0, sizeof in);
    snprintf(in.name, sizeof in.name, "%s", w[1]);
    in.dtype = px_rt_dtype_from_name(w[2]);
    if (!in.dtype) return bad(ps, "unknown dtype");
    if (parse_shape(w[3], &in))
        return bad(ps, "bad sample shape (expected e.g. [13], [] or [4,8])");
    int64_t bytes = (int64_t)px_rt_dtype_size(in.dtype);
    for (int d = 0; d < in.rank; d++)
        if (__builtin_mul_overflow(bytes, in.dims[d], &bytes) || bytes > ((int64_t)1 << 40))
            return bad(ps, "a sample of this input is too large");
    in.sample_bytes = bytes;
    px_ds_input *grown = realloc(m->inputs, sizeof *grown * (size_t)(m->n_inputs + 1));
    if (!grown) return bad(ps, "out of memory");
    m->inputs = grown;
    m->inputs[m->n_inputs++] = in;
    return 0;
}

static int parse_shard(parser *ps, px_manifest *m, char **w, int nw, int64_t *cap_shards) {
    if (!m->n_inputs) return bad(ps, "a shard line before any input line");
    if (nw != 4 + m->n_inputs)
        return bad(ps, "a shard line is 'shard NAME ROWS CHECKSUMS-HASH' and one file size per "
                       "input");
    if (!px_manifest_shard_name_ok(w[1])) return bad(ps, "bad shard name");
    if (m->n_shards == *cap_shards) {
        int64_t c = *cap_shards ? 2 * *cap_shards : 64;
        px_ds_shard *grown = realloc(m->shards, sizeof *grown * (size_t)c);
        if (!grown) return bad(ps, "out of memory");
        m->shards = grown;
        *cap_shards = c;
    }
    px_ds_shard *s = &m->shards[m->n_shards];
    memset(s, 0, sizeof *s);
    s->file_bytes = calloc((size_t)m->n_inputs, sizeof *s->file_bytes);
    if (!s->file_bytes) return bad(ps, "out of memory");
    m->n_shards++;
    snprintf(s->name, sizeof s->name, "%s", w[1]);
    if (parse_count(w[2], 1, &s->rows)) return bad(ps, "bad row count");
    if (parse_hash(w[3], &s->checksums_hash)) return bad(ps, "bad checksums hash");
    for (int i = 0; i < m->n_inputs; i++)
        if (parse_count(w[4 + i], 0, &s->file_bytes[i])) return bad(ps, "bad file size");
    s->first =
        m->n_shards > 1 ? m->shards[m->n_shards - 2].first + m->shards[m->n_shards - 2].rows : 0;
    if (s->first > INT64_MAX / 2) return bad(ps, "too many samples");
    return 0;
}

/* Every shard name once (sorted copy; names are short). */
static int cmp_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int check_whole(parser *ps, px_manifest *m, int have_samples, int have_block) {
    if (!have_samples || !have_block) return bad(ps, "'samples' or 'block-rows' is missing");
    if (!m->n_inputs || !m->n_shards) return bad(ps, "no input or no shard listed");
    const px_ds_shard *last = &m->shards[m->n_shards - 1];
    if (last->first + last->rows != m->samples)
        return bad(ps, "the shards' rows do not add up to 'samples'");
    const char **names = malloc(sizeof *names * (size_t)m->n_shards);
    if (!names) return bad(ps, "out of memory");
    for (int64_t s = 0; s < m->n_shards; s++) names[s] = m->shards[s].name;
    qsort(names, (size_t)m->n_shards, sizeof *names, cmp_names);
    int dup = 0;
    for (int64_t s = 1; s < m->n_shards && !dup; s++) dup = !strcmp(names[s - 1], names[s]);
    free(names);
    return dup ? bad(ps, "a shard is listed twice") : 0;
}

int px_manifest_parse(const char *text, size_t len, const char *path, px_manifest *m, char *err,
                      size_t cap) {
    memset(m, 0, sizeof *m);
    parser ps = {path, 0, err, cap};
    /* The checksum line ends the file: everything before it is hashed. */
    if (len == 0 || text[len - 1] != '\n')
        return bad(&ps, "incomplete manifest (it does not end with a line break)");
    size_t last = len - 1;
    while (last > 0 && text[last - 1] != '\n') last--;
    char tail[64];
    if (len - last >= sizeof tail || len - last < 10 || memchr(text + last, '\0', len - last))
        return bad(&ps, "the last line is not 'checksum HASH'");
    memcpy(tail, text + last, len - last - 1);
    tail[len - last - 1] = '\0';
    uint64_t want;
    if (strncmp(tail, "checksum ", 9) || parse_hash(tail + 9, &want))
        return bad(&ps, "the last line is not 'checksum HASH'");
    m->hash = px_hash64(PX_HASH64_INIT, text, last);
    if (m->hash != want) {
        snprintf(err, cap,
                 "%s: the manifest does not match its checksum: it was altered or is incomplete",
                 path);
        return -1;
    }
    if (last == 0 || memchr(text, '\0', last))
        return bad(&ps, "not a Parallax dataset manifest (empty, or a NUL byte in the text)");
    char *copy = malloc(last + 1);
    if (!copy) return bad(&ps, "out of memory");
    memcpy(copy, text, last);
    copy[last] = '\0';
    int rc = -1, have_samples = 0, have_block = 0;
    int64_t cap_shards = 0;
    char *line = copy, *end = copy + last, **w = malloc(sizeof *w * (MAX_INPUTS + 5));
    if (!w) goto done;
    while (line < end) { /* end[-1] is a line break: every line has one */
        ps.line++;
        char *nl = memchr(line, '\n', (size_t)(end - line));
        *nl = '\0';
        if (ps.line == 1) {
            if (strcmp(line, MAGIC)) {
                bad(&ps, "not a Parallax dataset manifest (the first line is not '" MAGIC "')");
                goto done;
            }
            line = nl + 1;
            continue;
        }
        int nw = split_words(line, w, MAX_INPUTS + 4);
        if (nw == 0 || nw > MAX_INPUTS + 4) {
            bad(&ps, "empty or overlong line");
            goto done;
        } else if (!strcmp(w[0], "samples") && nw == 2 && !have_samples) {
            have_samples = 1;
            if (parse_count(w[1], 1, &m->samples)) {
                bad(&ps, "bad sample count");
                goto done;
            }
        } else if (!strcmp(w[0], "block-rows") && nw == 2 && !have_block) {
            have_block = 1;
            if (parse_count(w[1], 1, &m->block_rows)) {
                bad(&ps, "bad block-rows");
                goto done;
            }
        } else if (!strcmp(w[0], "input")) {
            if (parse_input(&ps, m, w, nw)) goto done;
        } else if (!strcmp(w[0], "shard")) {
            if (parse_shard(&ps, m, w, nw, &cap_shards)) goto done;
        } else {
            bad(&ps, "unknown or repeated record");
            goto done;
        }
        line = nl + 1;
    }
    ps.line++;
    rc = check_whole(&ps, m, have_samples, have_block);
    m->text_bytes = (int64_t)len;
done:
    free(w);
    free(copy);
    if (rc) {
        px_manifest_free(m);
        memset(m, 0, sizeof *m);
    }
    return rc;
}

int px_manifest_read(const char *dir, px_manifest *m, char *err, size_t cap) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, PX_MANIFEST_FILE);
    struct stat st;
    int fd = px_open_regular(path, "dataset manifest", &st, err, cap);
    if (fd < 0) return -1;
    if ((size_t)st.st_size > MAX_MANIFEST_BYTES) {
        close(fd);
        snprintf(err, cap, "%s: a manifest of %lld bytes is too large", path,
                 (long long)st.st_size);
        return -1;
    }
    size_t len = (size_t)st.st_size;
    char *text = malloc(len + 1);
    if (!text) {
        close(fd);
        snprintf(err, cap, "%s: out of memory", path);
        return -1;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(fd, text + got, len - got, (off_t)got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    int rc;
    if (got != len) {
        snprintf(err, cap, "cannot read %s", path);
        rc = -1;
    } else {
        rc = px_manifest_parse(text, len, path, m, err, cap);
    }
    free(text);
    return rc;
}

/* ---- formatting ---- */

typedef struct growbuf {
    char *p;
    size_t len, cap;
    int oom;
} growbuf;

static void put(growbuf *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(growbuf *g, const char *fmt, ...) {
    if (g->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(g->p + g->len, g->cap - g->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            g->oom = 1;
            return;
        }
        if ((size_t)n < g->cap - g->len) {
            g->len += (size_t)n;
            return;
        }
        size_t c = 2 * g->cap + (size_t)n + 1;
        char *grown = realloc(g->p, c);
        if (!grown) {
            g->oom = 1;
            return;
        }
        g->p = grown;
        g->cap = c;
    }
}

char *px_manifest_format(px_manifest *m, size_t *len) {
    growbuf g = {malloc(4096), 0, 4096, 0};
    if (!g.p) return NULL;
    put(&g, "%s\nsamples %lld\nblock-rows %lld\n", MAGIC, (long long)m->samples,
        (long long)m->block_rows);
    for (int i = 0; i < m->n_inputs; i++) {
        const px_ds_input *in = &m->inputs[i];
        put(&g, "input %s %s [", in->name, px_rt_dtype_name(in->dtype));
        for (int d = 0; d < in->rank; d++) put(&g, "%s%lld", d ? "," : "", (long long)in->dims[d]);
        put(&g, "]\n");
    }
    for (int64_t s = 0; s < m->n_shards; s++) {
        const px_ds_shard *sh = &m->shards[s];
        put(&g, "shard %s %lld %016llx", sh->name, (long long)sh->rows,
            (unsigned long long)sh->checksums_hash);
        for (int i = 0; i < m->n_inputs; i++) put(&g, " %lld", (long long)sh->file_bytes[i]);
        put(&g, "\n");
    }
    if (!g.oom) m->hash = px_hash64(PX_HASH64_INIT, g.p, g.len);
    put(&g, "checksum %016llx\n", (unsigned long long)m->hash);
    if (g.oom) {
        free(g.p);
        return NULL;
    }
    *len = g.len;
    m->text_bytes = (int64_t)g.len;
    return g.p;
}
