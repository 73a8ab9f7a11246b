#include "line_pipeline.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Text per chunk: a chunk is cut before the line that would pass it (a
 * longer line gets a chunk of its own). */
#define CHUNK_TEXT ((size_t)2 << 20)

enum { SLOT_FREE, SLOT_FILLING, SLOT_FILLED, SLOT_PARSING, SLOT_PARSED };

typedef struct bad_note {
    int64_t index; /* the line within the chunk */
    char msg[512];
} bad_note;

typedef struct chunk {
    int state;
    int64_t seq;
    int file;
    int64_t first_line; /* the file's line number of the chunk's first line */
    int64_t n_lines;
    char *text; /* the lines, each ended by '\0' */
    size_t text_len, text_cap;
    size_t *start; /* n_lines + 1 offsets into text */
    int64_t line_cap;
    unsigned char *rows; /* n_lines rows of row_bytes: the parsed samples */
    unsigned char *bad;  /* per line: 1 when it did not parse */
    size_t rows_cap;
    bad_note *notes;
    int64_t n_notes, notes_cap;
    int64_t bytes_done; /* input bytes read when the chunk was cut (the progress) */
} chunk;

typedef struct pipeline {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    chunk *slots;
    int n_slots;
    int64_t next_fill, next_parse; /* sequence numbers */
    int reading_done, stop, failed;
    char read_err[1024];
    px_data_job *j;
    px_lines **files;
    int skip_header;
    px_line_parser parse;
    void *ctx;
    int n_inputs;
    size_t row_bytes, in_bytes[256], in_off[256];
    int64_t text_bytes; /* the files' text (summary) */
} pipeline;

static chunk *slot_of(pipeline *p, int64_t seq) {
    return &p->slots[seq % p->n_slots];
}

/* The reader's next slot, once the writer has freed it; NULL on a stop. */
static chunk *claim_slot(pipeline *p) {
    pthread_mutex_lock(&p->mu);
    chunk *c = slot_of(p, p->next_fill);
    while (!p->stop && c->state != SLOT_FREE) pthread_cond_wait(&p->cv, &p->mu);
    if (p->stop) c = NULL;
    if (c) {
        c->state = SLOT_FILLING;
        c->seq = p->next_fill;
    }
    pthread_mutex_unlock(&p->mu);
    if (c) c->n_lines = 0, c->text_len = 0;
    return c;
}

static void post_slot(pipeline *p, chunk *c) {
    pthread_mutex_lock(&p->mu);
    c->state = SLOT_FILLED;
    p->next_fill++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static int grow(void **buf, size_t *cap, size_t need, size_t unit) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 1;
    while (c < need) c *= 2;
    void *g = realloc(*buf, c * unit);
    if (!g) return -1;
    *buf = g;
    *cap = c;
    return 0;
}

/* Adds one line to c: -1 out of memory. */
static int append_line(chunk *c, const char *s, size_t len) {
    size_t lines = (size_t)c->line_cap;
    if (grow((void **)&c->start, &lines, (size_t)c->n_lines + 2, sizeof *c->start) ||
        grow((void **)&c->text, &c->text_cap, c->text_len + len + 1, 1))
        return -1;
    c->line_cap = (int64_t)lines;
    c->start[c->n_lines++] = c->text_len;
    memcpy(c->text + c->text_len, s, len);
    c->text[c->text_len + len] = '\0';
    c->text_len += len + 1;
    c->start[c->n_lines] = c->text_len;
    return 0;
}

static void *reader_main(void *arg) {
    pipeline *p = arg;
    px_data_job *j = p->j;
    int64_t done_files = 0;
    chunk *c = NULL;
    for (int f = 0; f < j->n_files; f++) {
        px_lines *l = p->files[f];
        char *s;
        size_t len;
        int got;
        while ((got = px_lines_next(l, &s, &len, p->read_err, sizeof p->read_err)) == 1) {
            if (p->skip_header && px_lines_number(l) == 1) continue;
            if (c && c->n_lines && c->text_len + len + 1 > CHUNK_TEXT) {
                post_slot(p, c);
                c = NULL;
            }
            if (!c && !(c = claim_slot(p))) goto end;
            if (!c->n_lines) {
                c->file = f;
                c->first_line = px_lines_number(l);
            }
            if (append_line(c, s, len)) {
                snprintf(p->read_err, sizeof p->read_err, "out of memory");
                got = -1;
                break;
            }
            c->bytes_done = done_files + px_lines_file_read(l);
        }
        if (got < 0) {
            pthread_mutex_lock(&p->mu);
            p->failed = 1;
            pthread_mutex_unlock(&p->mu);
            goto end;
        }
        if (c && c->n_lines) { /* a chunk holds one file's lines */
            post_slot(p, c);
            c = NULL;
        }
        done_files += px_lines_file_size(l);
        p->text_bytes += px_lines_text_read(l);
    }
end:
    pthread_mutex_lock(&p->mu);
    if (c) c->state = SLOT_FREE; /* claimed, never posted */
    p->reading_done = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Parses every line of c into its rows; bad lines get a note. */
static int parse_chunk(pipeline *p, chunk *c) {
    if (grow((void **)&c->rows, &c->rows_cap, (size_t)c->n_lines * p->row_bytes + 1, 1)) return -1;
    unsigned char *bad = realloc(c->bad, (size_t)c->n_lines + 1);
    if (!bad) return -1;
    c->bad = bad;
    c->n_notes = 0;
    unsigned char *row[256];
    for (int64_t k = 0; k < c->n_lines; k++) {
        for (int i = 0; i < p->n_inputs; i++)
            row[i] = c->rows + (size_t)k * p->row_bytes + p->in_off[i];
        char msg[512];
        const char *s = c->text + c->start[k];
        c->bad[k] = (unsigned char)(p->parse(p->ctx, row, s, c->start[k + 1] - c->start[k] - 1, msg,
                                             sizeof msg) != 0);
        if (!c->bad[k]) continue;
        size_t notes = (size_t)c->notes_cap;
        if (grow((void **)&c->notes, &notes, (size_t)c->n_notes + 1, sizeof *c->notes)) return -1;
        c->notes_cap = (int64_t)notes;
        c->notes[c->n_notes].index = k;
        memcpy(c->notes[c->n_notes++].msg, msg, sizeof msg);
    }
    return 0;
}

static void *parser_main(void *arg) {
    pipeline *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        chunk *c = slot_of(p, p->next_parse);
        while (!p->stop && !(c->state == SLOT_FILLED && c->seq == p->next_parse) &&
               !(p->reading_done && p->next_parse >= p->next_fill)) {
            pthread_cond_wait(&p->cv, &p->mu);
            c = slot_of(p, p->next_parse);
        }
        if (p->stop || (p->reading_done && p->next_parse >= p->next_fill)) break;
        c->state = SLOT_PARSING;
        p->next_parse++;
        pthread_mutex_unlock(&p->mu);
        int rc = parse_chunk(p, c);
        pthread_mutex_lock(&p->mu);
        if (rc) { /* out of memory: every line of the chunk unparsed */
            p->failed = p->stop = 1;
            snprintf(p->read_err, sizeof p->read_err, "out of memory parsing lines");
        }
        c->state = SLOT_PARSED;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* The writer's side of chunk c, in input order: as the one-thread loop. */
static int take_chunk(pipeline *p, const chunk *c, char *err, size_t cap) {
    px_data_job *j = p->j;
    const bad_note *note = c->notes;
    const char *path = px_lines_path(p->files[c->file]);
    for (int64_t k = 0; k < c->n_lines; k++) {
        j->lines++;
        px_dataset_writer *w = px_data_job_route(j, c->file, j->lines);
        if (c->bad[k]) {
            if (px_data_bad_line(j, path, c->first_line + k, note->msg, err, cap)) return -1;
            note++;
            continue;
        }
        const unsigned char *row = c->rows + (size_t)k * p->row_bytes;
        for (int i = 0; i < p->n_inputs; i++)
            memcpy(px_writer_row(w, i), row + p->in_off[i], p->in_bytes[i]);
        if (px_writer_commit(w, err, cap)) return -1;
    }
    px_progress_update(&j->prog, c->bytes_done, j->lines, j->bad);
    return 0;
}

int px_lines_pipeline(px_data_job *j, px_lines **files, const px_ds_input *inputs, int n_inputs,
                      px_line_parser parse, void *ctx, int skip_header, char *err, size_t cap) {
    pipeline p;
    memset(&p, 0, sizeof p);
    if (n_inputs > 256) {
        snprintf(err, cap, "more than 256 inputs");
        return -1;
    }
    p.j = j;
    p.files = files;
    p.skip_header = skip_header;
    p.parse = parse;
    p.ctx = ctx;
    p.n_inputs = n_inputs;
    for (int i = 0; i < n_inputs; i++) {
        p.in_off[i] = p.row_bytes;
        p.in_bytes[i] = (size_t)inputs[i].sample_bytes;
        p.row_bytes += p.in_bytes[i];
    }
    int n_threads = j->threads;
    p.n_slots = n_threads + 4;
    p.slots = calloc((size_t)p.n_slots, sizeof *p.slots);
    pthread_t *tid = calloc((size_t)n_threads + 1, sizeof *tid);
    if (!p.slots || !tid) {
        free(p.slots);
        free(tid);
        snprintf(err, cap, "out of memory");
        return -1;
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    int started = 0, rc = 0;
    if (pthread_create(&tid[0], NULL, reader_main, &p) == 0) started++;
    for (int t = 0; started == t + 1 && t < n_threads; t++)
        if (pthread_create(&tid[t + 1], NULL, parser_main, &p) == 0) started++;
    if (started < n_threads + 1) {
        snprintf(err, cap, "cannot start %d threads (--threads)", n_threads + 1);
        rc = -1;
    }
    for (int64_t seq = 0; !rc; seq++) {
        chunk *c = slot_of(&p, seq);
        pthread_mutex_lock(&p.mu);
        while (!p.stop && !(c->state == SLOT_PARSED && c->seq == seq) &&
               !(p.reading_done && seq >= p.next_fill))
            pthread_cond_wait(&p.cv, &p.mu);
        int end = p.stop || (p.reading_done && seq >= p.next_fill);
        pthread_mutex_unlock(&p.mu);
        if (end) break;
        rc = take_chunk(&p, c, err, cap);
        pthread_mutex_lock(&p.mu);
        c->state = SLOT_FREE;
        pthread_cond_broadcast(&p.cv);
        pthread_mutex_unlock(&p.mu);
    }
    pthread_mutex_lock(&p.mu);
    p.stop = 1;
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.mu);
    for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
    if (!rc && p.failed) {
        snprintf(err, cap, "%s", p.read_err);
        rc = -1;
    }
    j->bytes_in += p.text_bytes;
    for (int s = 0; s < p.n_slots; s++) {
        chunk *c = &p.slots[s];
        free(c->text);
        free(c->start);
        free(c->rows);
        free(c->bad);
        free(c->notes);
    }
    free(p.slots);
    free(tid);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.cv);
    return rc;
}
