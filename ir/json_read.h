/* A small JSON reader for the files a training run writes (stats.json,
 * run.json, compile.json, the --trace timeline) and for the values of a
 * model's parallax.* metadata (passes/model_meta.c).
 *
 * Values are trees of px_json nodes (malloc'd; px_json_free). A reader
 * walks a buffer that need not end in NUL and never reads past its end.
 * Besides whole values it offers the steps to stream a large array one
 * element at a time (px_json_enter, px_json_next): a trace of millions of
 * events is summarized without holding it as a tree. Nesting is bounded
 * (PX_JSON_MAX_DEPTH); errors say what was expected at which line and
 * column. */
#ifndef PX_JSON_READ_H
#define PX_JSON_READ_H

#include <stddef.h>
#include <stdint.h>

#define PX_JSON_MAX_DEPTH 64

typedef enum px_json_kind {
    PX_JSON_NULL,
    PX_JSON_BOOL,
    PX_JSON_NUMBER,
    PX_JSON_STRING,
    PX_JSON_ARRAY,
    PX_JSON_OBJECT,
} px_json_kind;

typedef struct px_json px_json;
struct px_json {
    px_json_kind kind;
    double number;   /* NUMBER; BOOL: 0 or 1 */
    char *string;    /* STRING: NUL-terminated UTF-8 (an embedded \u0000 ends it) */
    size_t n;        /* ARRAY, OBJECT: number of items */
    px_json **items; /* ARRAY, OBJECT: the values */
    char **keys;     /* OBJECT: the keys, parallel to items */
};

typedef struct px_json_reader {
    const char *start, *p, *end;
    int depth;
    uint64_t first; /* bit d-1: the container at depth d has no item yet */
    char err[256];  /* set when a call fails */
} px_json_reader;

void px_json_reader_init(px_json_reader *r, const char *text, size_t len);

/* The next value, or NULL with r->err set. */
px_json *px_json_read(px_json_reader *r);
/* The whole buffer as one value (only white space after it). */
px_json *px_json_parse(const char *text, size_t len, char *err, size_t err_cap);
void px_json_free(px_json *v);

/* Streaming: px_json_enter consumes the '[' or '{' that must come next
 * (returns 0, or -1 naming what came instead). Then px_json_next returns
 * 1 when another item follows (for an object, its key is read into a
 * malloc'd *key, which the caller frees; pass NULL for arrays), 0 at the
 * closing bracket (consumed), -1 on an error. Read or skip each item's
 * value with px_json_read / px_json_skip. */
int px_json_enter(px_json_reader *r, char open);
int px_json_next(px_json_reader *r, char close, char **key);
int px_json_skip(px_json_reader *r);
/* The next non-space character, without consuming it; 0 at the end. */
char px_json_peek(px_json_reader *r);

/* Lookups that return NULL when the key is absent or the value is not of
 * the kind asked for. */
const px_json *px_json_get(const px_json *object, const char *key);
const px_json *px_json_get_kind(const px_json *object, const char *key, px_json_kind kind);
/* The number at key, or fallback when absent, null or not a number. */
double px_json_number_or(const px_json *object, const char *key, double fallback);
const char *px_json_string_or(const px_json *object, const char *key, const char *fallback);

#endif
