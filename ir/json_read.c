#include "json_read.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void px_json_reader_init(px_json_reader *r, const char *text, size_t len) {
    r->start = r->p = text;
    r->end = text + len;
    r->depth = 0;
    r->first = 0;
    r->err[0] = '\0';
}

/* Records "line L, column C: message" for the reader's position; returns -1. */
static int fail(px_json_reader *r, const char *fmt, ...) {
    if (r->err[0]) return -1; /* keep the first error */
    int line = 1, col = 1;
    for (const char *q = r->start; q < r->p; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    int n = snprintf(r->err, sizeof r->err, "line %d, column %d: ", line, col);
    if (n < 0 || (size_t)n >= sizeof r->err) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err + n, sizeof r->err - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static void skip_space(px_json_reader *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

char px_json_peek(px_json_reader *r) {
    skip_space(r);
    return r->p < r->end ? *r->p : 0;
}

/* What the reader sees next, for messages. */
static const char *seen(px_json_reader *r) {
    static _Thread_local char buf[16];
    if (r->p >= r->end) return "the end of the file";
    unsigned char c = (unsigned char)*r->p;
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, sizeof buf, "'%c'", c);
    else
        snprintf(buf, sizeof buf, "byte 0x%02x", c);
    return buf;
}

static int expect(px_json_reader *r, char c) {
    if (px_json_peek(r) != c) return fail(r, "expected '%c', found %s", c, seen(r));
    r->p++;
    return 0;
}

static int literal(px_json_reader *r, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
        return fail(r, "expected a value, found %s", seen(r));
    r->p += n;
    return 0;
}

static int hex4(px_json_reader *r, unsigned *out) {
    if (r->end - r->p < 4) return fail(r, "a \\u escape needs 4 hex digits");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = r->p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return fail(r, "a \\u escape needs 4 hex digits");
        v = v * 16 + (unsigned)d;
    }
    r->p += 4;
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A string (the opening quote next); malloc'd, or NULL on an error. The
 * decoded text is never longer than the escaped one, so one allocation of
 * the raw length suffices. */
static char *read_string(px_json_reader *r) {
    if (expect(r, '"') != 0) return NULL;
    const char *q = r->p;
    while (q < r->end && *q != '"') q += (*q == '\\' && q + 1 < r->end) ? 2 : 1;
    if (q >= r->end) {
        fail(r, "string never closed");
        return NULL;
    }
    char *out = malloc((size_t)(q - r->p) + 1);
    if (!out) {
        fail(r, "out of memory");
        return NULL;
    }
    size_t n = 0;
    while (*r->p != '"') {
        unsigned char c = (unsigned char)*r->p;
        if (c < 0x20) {
            fail(r, "control character in a string");
            goto bad;
        }
        r->p++;
        if (c != '\\') {
            out[n++] = (char)c;
            continue;
        }
        char e = *r->p++;
        switch (e) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (hex4(r, &cp) != 0) goto bad;
            /* A surrogate pair is one code point; a lone surrogate becomes
             * U+FFFD, which fits in the 6 bytes its escape took. */
            if (cp >= 0xd800 && cp < 0xdc00 && r->end - r->p >= 6 && r->p[0] == '\\' &&
                r->p[1] == 'u') {
                const char *save = r->p;
                unsigned lo;
                r->p += 2;
                if (hex4(r, &lo) != 0) goto bad;
                if (lo >= 0xdc00 && lo < 0xe000)
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                else
                    r->p = save, cp = 0xfffd;
            } else if (cp >= 0xd800 && cp < 0xe000) {
                cp = 0xfffd;
            }
            n += put_utf8(out + n, cp);
            break;
        }
        default: fail(r, "unknown escape '\\%c' in a string", e); goto bad;
        }
    }
    r->p++; /* the closing quote */
    out[n] = '\0';
    return out;
bad:
    free(out);
    return NULL;
}

static int read_number(px_json_reader *r, double *out) {
    const char *q = r->p;
    if (q < r->end && *q == '-') q++;
    if (q >= r->end || !(*q >= '0' && *q <= '9'))
        return fail(r, "expected a value, found %s", seen(r));
    while (q < r->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' ||
                          *q == '+' || *q == '-'))
        q++;
    char buf[64];
    size_t len = (size_t)(q - r->p);
    if (len >= sizeof buf) return fail(r, "number longer than %zu characters", sizeof buf - 1);
    memcpy(buf, r->p, len);
    buf[len] = '\0';
    char *stop;
    *out = strtod(buf, &stop);
    if (*stop) return fail(r, "malformed number '%s'", buf);
    r->p = q;
    return 0;
}

static px_json *new_node(px_json_reader *r, px_json_kind kind) {
    px_json *v = calloc(1, sizeof *v);
    if (!v)
        fail(r, "out of memory");
    else
        v->kind = kind;
    return v;
}

static int append_item(px_json_reader *r, px_json *v, px_json *item, char *key) {
    if ((v->n & (v->n - 1)) == 0) { /* grow at powers of two */
        size_t cap = v->n ? v->n * 2 : 4;
        px_json **items = realloc(v->items, cap * sizeof *items);
        if (items) v->items = items;
        char **keys = v->kind == PX_JSON_OBJECT ? realloc(v->keys, cap * sizeof *keys) : NULL;
        if (keys) v->keys = keys;
        if (!items || (v->kind == PX_JSON_OBJECT && !keys)) return fail(r, "out of memory");
    }
    v->items[v->n] = item;
    if (v->kind == PX_JSON_OBJECT) v->keys[v->n] = key;
    v->n++;
    return 0;
}

int px_json_enter(px_json_reader *r, char open) {
    if (r->depth >= PX_JSON_MAX_DEPTH)
        return fail(r, "nested more than %d deep", PX_JSON_MAX_DEPTH);
    if (expect(r, open) != 0) return -1;
    r->depth++;
    r->first |= (uint64_t)1 << (r->depth - 1); /* no item yet: no comma before the next */
    return 0;
}

int px_json_next(px_json_reader *r, char close, char **key) {
    if (r->depth <= 0) return fail(r, "px_json_next outside a container");
    char c = px_json_peek(r);
    if (c == close) {
        r->p++;
        r->depth--;
        return 0;
    }
    uint64_t bit = (uint64_t)1 << (r->depth - 1);
    if (r->first & bit) {
        r->first &= ~bit;
    } else {
        if (expect(r, ',') != 0) return -1;
        if (px_json_peek(r) == close) return fail(r, "a trailing comma before '%c'", close);
    }
    if (key) {
        if (px_json_peek(r) != '"') return fail(r, "expected a key string, found %s", seen(r));
        *key = read_string(r);
        if (!*key) return -1;
        if (expect(r, ':') != 0) {
            free(*key);
            *key = NULL;
            return -1;
        }
    }
    if (px_json_peek(r) == 0) {
        if (key) {
            free(*key);
            *key = NULL;
        }
        return fail(r, "expected a value, found %s", seen(r));
    }
    return 1;
}

px_json *px_json_read(px_json_reader *r) {
    char c = px_json_peek(r);
    px_json *v = NULL;
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        v = new_node(r, c == '{' ? PX_JSON_OBJECT : PX_JSON_ARRAY);
        if (!v || px_json_enter(r, c) != 0) goto bad;
        for (;;) {
            char *key = NULL;
            int more = px_json_next(r, close, c == '{' ? &key : NULL);
            if (more < 0) goto bad;
            if (more == 0) break;
            px_json *item = px_json_read(r);
            if (!item || append_item(r, v, item, key) != 0) {
                px_json_free(item);
                free(key);
                goto bad;
            }
        }
        return v;
    }
    if (c == '"') {
        v = new_node(r, PX_JSON_STRING);
        if (!v || !(v->string = read_string(r))) goto bad;
        return v;
    }
    if (c == 't' || c == 'f') {
        v = new_node(r, PX_JSON_BOOL);
        if (!v || literal(r, c == 't' ? "true" : "false") != 0) goto bad;
        v->number = c == 't';
        return v;
    }
    if (c == 'n') {
        v = new_node(r, PX_JSON_NULL);
        if (!v || literal(r, "null") != 0) goto bad;
        return v;
    }
    v = new_node(r, PX_JSON_NUMBER);
    if (!v || read_number(r, &v->number) != 0) goto bad;
    return v;
bad:
    px_json_free(v);
    return NULL;
}

int px_json_skip(px_json_reader *r) {
    px_json *v = px_json_read(r);
    if (!v) return -1;
    px_json_free(v);
    return 0;
}

px_json *px_json_parse(const char *text, size_t len, char *err, size_t err_cap) {
    px_json_reader r;
    px_json_reader_init(&r, text, len);
    px_json *v = px_json_read(&r);
    if (v && px_json_peek(&r) != 0) {
        fail(&r, "unexpected %s after the value", seen(&r));
        px_json_free(v);
        v = NULL;
    }
    if (!v && err_cap) snprintf(err, err_cap, "%s", r.err);
    return v;
}

void px_json_free(px_json *v) {
    if (!v) return;
    for (size_t i = 0; i < v->n; i++) {
        px_json_free(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    free(v);
}

const px_json *px_json_get(const px_json *object, const char *key) {
    if (!object || object->kind != PX_JSON_OBJECT) return NULL;
    for (size_t i = 0; i < object->n; i++)
        if (strcmp(object->keys[i], key) == 0) return object->items[i];
    return NULL;
}

const px_json *px_json_get_kind(const px_json *object, const char *key, px_json_kind kind) {
    const px_json *v = px_json_get(object, key);
    return v && v->kind == kind ? v : NULL;
}

double px_json_number_or(const px_json *object, const char *key, double fallback) {
    const px_json *v = px_json_get_kind(object, key, PX_JSON_NUMBER);
    return v ? v->number : fallback;
}

const char *px_json_string_or(const px_json *object, const char *key, const char *fallback) {
    const px_json *v = px_json_get_kind(object, key, PX_JSON_STRING);
    return v ? v->string : fallback;
}
