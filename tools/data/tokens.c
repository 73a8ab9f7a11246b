/* parallaxc data tokens: a text corpus into fixed-length windows of word
 * ids for a language model. Two passes over the files: the first counts
 * the words (split at white space), the second writes the windows. The
 * vocabulary is <unk> (0), <eos> (1, ends every line), then the V-2 most
 * frequent words (ties in byte order), written to DIR/vocab.txt one word a
 * line (the id is the line number from 0). Each window of L+1 consecutive
 * ids (windows start every L ids) gives one sample: tokens = its first L,
 * targets = its last L. Counting keeps at most 2^21 distinct words: when
 * more come, the rarest are dropped (their counts restart if they come
 * back), so the vocabulary is exact whenever the corpus has fewer distinct
 * words, and the frequent words survive otherwise. */
#include "data_main.h"

#include "data_job.h"
#include "file_atomic.h"
#include "hash64.h"
#include "line_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS ((int64_t)1 << 21)

typedef struct word {
    uint64_t hash;
    int64_t off; /* in the arena; -1: empty slot */
    int64_t len, count, id;
} word;

typedef struct vocab {
    word *slot;
    int64_t cap, used;
    char *arena;
    int64_t arena_len, arena_cap;
} vocab;

typedef struct tokens_cfg {
    int64_t vocab_size, window;
    char names[2][PX_MANIFEST_NAME_MAX + 1];
} tokens_cfg;

static const char help[] =
    "usage: parallaxc data tokens IN.txt... -o DIR --vocab V [options]\n"
    "\n"
    "Converts a text corpus into windows of word ids for a language model: words are\n"
    "split at white space; ids are <unk> 0, <eos> 1 (after every line), then the V-2\n"
    "most frequent words (DIR/vocab.txt lists them, one a line). Every L ids start a\n"
    "window of L+1: tokens = its first L ids, targets = its last L (int64 [L] each).\n"
    "  --vocab V              vocabulary size, <unk> and <eos> included (at least 3)\n"
    "  --window L             ids per sample (default 32)\n"
    "  --names A,B            the two inputs' names (default tokens,targets)\n";

static int vocab_init(vocab *v, int64_t cap) {
    memset(v, 0, sizeof *v);
    v->cap = cap;
    v->slot = malloc(sizeof *v->slot * (size_t)cap);
    if (!v->slot) return -1;
    for (int64_t i = 0; i < cap; i++) v->slot[i].off = -1;
    return 0;
}

static void vocab_free(vocab *v) {
    free(v->slot);
    free(v->arena);
    memset(v, 0, sizeof *v);
}

static word *find(vocab *v, const char *s, int64_t len, uint64_t h) {
    for (int64_t i = (int64_t)(h & (uint64_t)(v->cap - 1));; i = (i + 1) & (v->cap - 1)) {
        word *w = &v->slot[i];
        if (w->off < 0 || (w->hash == h && w->len == len && !memcmp(v->arena + w->off, s, len)))
            return w;
    }
}

static int insert(vocab *v, word *w, const char *s, int64_t len, uint64_t h) {
    if (v->arena_len + len > v->arena_cap) {
        int64_t c = 2 * v->arena_cap + len + (1 << 20);
        char *grown = realloc(v->arena, (size_t)c);
        if (!grown) return -1;
        v->arena = grown;
        v->arena_cap = c;
    }
    memcpy(v->arena + v->arena_len, s, (size_t)len);
    *w = (word){h, v->arena_len, len, 0, 0};
    v->arena_len += len;
    v->used++;
    return 0;
}

/* Keeps the words counted more than the smallest threshold that frees at
 * least half of the table. */
static int prune(vocab *v) {
    int64_t threshold = 1, kept;
    for (;; threshold *= 2) {
        kept = 0;
        for (int64_t i = 0; i < v->cap; i++)
            kept += v->slot[i].off >= 0 && v->slot[i].count > threshold;
        if (kept <= v->used / 2) break;
    }
    vocab fresh;
    if (vocab_init(&fresh, v->cap)) return -1;
    for (int64_t i = 0; i < v->cap; i++) {
        word *w = &v->slot[i];
        if (w->off < 0 || w->count <= threshold) continue;
        word *to = find(&fresh, v->arena + w->off, w->len, w->hash);
        if (insert(&fresh, to, v->arena + w->off, w->len, w->hash)) {
            vocab_free(&fresh);
            return -1;
        }
        to->count = w->count;
    }
    vocab_free(v);
    *v = fresh;
    return 0;
}

static int count_word(vocab *v, const char *s, int64_t len) {
    uint64_t h = px_hash64(PX_HASH64_INIT, s, (size_t)len);
    word *w = find(v, s, len, h);
    if (w->off < 0) {
        if (v->used == MAX_WORDS) {
            if (prune(v)) return -1;
            w = find(v, s, len, h);
        }
        if (insert(v, w, s, len, h)) return -1;
    }
    w->count++;
    return 0;
}

static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Calls fn for every word of the files, then for the end of each line
 * (s NULL). */
typedef int (*word_fn)(void *ctx, const char *s, int64_t len);

static int each_word(px_data_job *j, px_lines **lines, int64_t done0, word_fn fn, void *ctx,
                     char *err, size_t cap) {
    int64_t done = done0;
    for (int f = 0; f < j->n_files; f++) {
        px_lines *l = lines[f];
        if (px_lines_rewind(l, err, cap)) return -1;
        char *s;
        size_t len;
        int got;
        while ((got = px_lines_next(l, &s, &len, err, cap)) == 1) {
            j->lines++;
            for (size_t i = 0; i < len;) {
                while (i < len && is_space(s[i])) i++;
                size_t b = i;
                while (i < len && !is_space(s[i])) i++;
                if (i > b && fn(ctx, s + b, (int64_t)(i - b))) goto failed;
            }
            if (fn(ctx, NULL, 0)) goto failed;
            px_progress_update(&j->prog, done + px_lines_file_read(l), j->lines, 0);
        }
        if (got < 0) return -1;
        done += px_lines_file_size(l);
    }
    return 0;
failed: /* a failed write said why; counting fails only for memory */
    if (!err[0]) snprintf(err, cap, "out of memory counting words");
    return -1;
}

static int count_fn(void *ctx, const char *s, int64_t len) {
    return s ? count_word(ctx, s, len) : 0;
}

static int by_count(const void *a, const void *b, void *arena) {
    const word *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    int64_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp((char *)arena + x->off, (char *)arena + y->off, (size_t)n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static void *sort_arena;
static int by_count_global(const void *a, const void *b) {
    return by_count(a, b, sort_arena);
}

/* Gives the V-2 most frequent words their ids (2...) and writes vocab.txt. */
static int build_vocab(vocab *v, const tokens_cfg *t, const char *path, char *err, size_t cap) {
    word *all = malloc(sizeof *all * (size_t)(v->used + 1));
    if (!all) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    int64_t n = 0;
    for (int64_t i = 0; i < v->cap; i++)
        if (v->slot[i].off >= 0) all[n++] = v->slot[i];
    sort_arena = v->arena;
    qsort(all, (size_t)n, sizeof *all, by_count_global);
    int64_t keep = n < t->vocab_size - 2 ? n : t->vocab_size - 2;
    px_atomic_file af;
    if (px_atomic_open(&af, path, err, cap)) {
        free(all);
        return -1;
    }
    fputs("<unk>\n<eos>\n", af.f);
    for (int64_t k = 0; k < keep; k++) {
        find(v, v->arena + all[k].off, all[k].len, all[k].hash)->id = k + 2;
        fwrite(v->arena + all[k].off, 1, (size_t)all[k].len, af.f);
        fputc('\n', af.f);
    }
    free(all);
    if (ferror(af.f)) {
        px_atomic_abort(&af);
        snprintf(err, cap, "cannot write %s", path);
        return -1;
    }
    return px_atomic_commit(&af, err, cap);
}

typedef struct windows {
    px_data_job *j;
    vocab *v;
    int64_t L, fill, n;
    int64_t *buf; /* L + 1 ids */
    char *err;
    size_t cap;
} windows;

static int window_fn(void *ctx, const char *s, int64_t len) {
    windows *wn = ctx;
    int64_t id = 1; /* <eos> */
    if (s) {
        word *w = find(wn->v, s, len, px_hash64(PX_HASH64_INIT, s, (size_t)len));
        id = w->off >= 0 ? w->id : 0;
    }
    wn->buf[wn->fill++] = id;
    if (wn->fill <= wn->L) return 0;
    px_dataset_writer *w = px_data_job_route(wn->j, 0, wn->n++);
    memcpy(px_writer_row(w, 0), wn->buf, sizeof(int64_t) * (size_t)wn->L);
    memcpy(px_writer_row(w, 1), wn->buf + 1, sizeof(int64_t) * (size_t)wn->L);
    wn->buf[0] = wn->buf[wn->L];
    wn->fill = 1;
    return px_writer_commit(w, wn->err, wn->cap);
}

static int convert(px_data_job *j, tokens_cfg *t, char *err, size_t cap) {
    px_lines **lines = calloc((size_t)j->n_files, sizeof *lines);
    vocab v;
    memset(&v, 0, sizeof v);
    err[0] = '\0';
    windows wn = {j,   &v, t->window, 0, 0, malloc(sizeof(int64_t) * (size_t)(t->window + 1)),
                  err, cap};
    int rc = lines && wn.buf && vocab_init(&v, 2 * MAX_WORDS) == 0 ? 0 : -1;
    if (rc) snprintf(err, cap, "out of memory");
    int64_t total = 0;
    for (int f = 0; f < j->n_files && !rc; f++) {
        rc = px_lines_open(&lines[f], j->files[f], err, cap);
        if (!rc) total += px_lines_file_size(lines[f]);
    }
    px_ds_input in[2];
    memset(in, 0, sizeof in);
    for (int k = 0; k < 2; k++) {
        snprintf(in[k].name, sizeof in[k].name, "%s", t->names[k]);
        in[k].dtype = 7;
        in[k].rank = 1;
        in[k].dims[0] = t->window;
        in[k].sample_bytes = 8 * t->window;
    }
    char vocab_path[4200];
    snprintf(vocab_path, sizeof vocab_path, "%s/vocab.txt", j->out);
    px_progress_start(&j->prog, 2 * total, j->progress);
    if (!rc) rc = each_word(j, lines, 0, count_fn, &v, err, cap);
    if (!j->n_splits) j->own_file = "vocab.txt"; /* inside the dataset's folder */
    if (!rc) rc = px_data_job_open(j, in, 2, err, cap);
    if (!rc) rc = build_vocab(&v, t, vocab_path, err, cap);
    j->lines = 0;
    if (!rc) rc = each_word(j, lines, total, window_fn, &wn, err, cap);
    for (int f = 0; lines && f < j->n_files; f++) {
        if (lines[f]) j->bytes_in += px_lines_text_read(lines[f]);
        px_lines_close(lines[f]);
    }
    free(lines);
    free(wn.buf);
    vocab_free(&v);
    if (!rc) return px_data_job_finish(j, err, cap);
    px_data_job_abort(j);
    return -1;
}

static int tokens_flag(void *ctx, const char *flag, const char *v, char *err, size_t cap) {
    tokens_cfg *t = ctx;
    if (!strcmp(flag, "--vocab")) {
        if (px_data_parse_count(v, 3, (int64_t)1 << 40, &t->vocab_size) == 0) return 0;
        snprintf(err, cap, "--vocab needs a size of at least 3, not '%s'", v);
        return -1;
    }
    if (!strcmp(flag, "--window")) {
        if (px_data_parse_count(v, 1, 1 << 20, &t->window) == 0) return 0;
        snprintf(err, cap, "--window needs a length of at least 1, not '%s'", v);
        return -1;
    }
    const char *comma = strchr(v, ',');
    if (comma && !strchr(comma + 1, ',') && comma - v <= PX_MANIFEST_NAME_MAX) {
        snprintf(t->names[0], sizeof t->names[0], "%.*s", (int)(comma - v), v);
        snprintf(t->names[1], sizeof t->names[1], "%.255s", comma + 1);
        if (px_manifest_input_name_ok(t->names[0]) && px_manifest_input_name_ok(t->names[1]) &&
            strcmp(t->names[0], t->names[1]))
            return 0;
    }
    snprintf(err, cap, "--names needs two different input names A,B, not '%s'", v);
    return -1;
}

static int tokens_check(void *ctx, px_data_job *j, char *err, size_t cap) {
    if (!((tokens_cfg *)ctx)->vocab_size) {
        snprintf(err, cap, "--vocab V is required (the vocabulary size)");
        return -1;
    }
    if (j->by_file) {
        snprintf(err, cap, "--split by file does not apply to tokens: give fractions");
        return -1;
    }
    if (j->threads > 1) {
        snprintf(err, cap, "--threads %d: tokens converts on one thread", j->threads);
        return -1;
    }
    return 0;
}

static int tokens_convert(void *ctx, px_data_job *j, char *err, size_t cap) {
    return convert(j, ctx, err, cap);
}

int px_data_tokens(int argc, char **argv) {
    tokens_cfg t = {0, 32, {"tokens", "targets"}};
    static const char *const valued[] = {"--vocab", "--window", "--names", NULL};
    const px_data_cmd cmd = {"tokens",    help,         valued,        NULL,
                             tokens_flag, tokens_check, tokens_convert};
    return px_data_run(&cmd, &t, argc, argv);
}
