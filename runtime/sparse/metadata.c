/* The "parallax.sparsity" metadata of a saved model (metadata.h). */
#include "metadata.h"
#include "masked.h"

#include "px_kernel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable string. */
typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void put(text *t, const char *s, size_t n) {
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (t->len + n + 1 > cap) cap *= 2;
        char *grown = realloc(t->s, cap);
        if (!grown) px_rt_fail("out of memory for the sparsity metadata");
        t->s = grown;
        t->cap = cap;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static void putf(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(text *t, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    put(t, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* A JSON string (names are ONNX names: escape quotes, backslashes and
 * control characters). */
static void put_json_string(text *t, const char *s) {
    put(t, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            putf(t, "\\%c", c);
        else if (c < 0x20)
            putf(t, "\\u%04x", c);
        else
            put(t, (const char *)&c, 1);
    }
    put(t, "\"", 1);
}

static void put_base64(text *t, const unsigned char *b, size_t n) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)b[i] << 16 | (i + 1 < n ? (unsigned)b[i + 1] << 8 : 0) |
                     (i + 2 < n ? b[i + 2] : 0);
        char q[4] = {digits[v >> 18 & 63], digits[v >> 12 & 63],
                     i + 1 < n ? digits[v >> 6 & 63] : '=', i + 2 < n ? digits[v & 63] : '='};
        put(t, q, 4);
    }
}

char *px_sparse_metadata_json(void) {
    int64_t n = px_sparse_count();
    if (!n) return NULL;
    text t = {0};
    put(&t, "{\"version\": 1, \"weights\": [", 27);
    for (int64_t i = 0; i < n; i++) {
        const px_masked *m = px_sparse_get(i);
        const px_masked_desc *d = m->d;
        char pattern[64];
        if (d->pattern == PX_PATTERN_BLOCK)
            snprintf(pattern, sizeof pattern, "block:%lldx%lld", (long long)d->pa,
                     (long long)d->pb);
        else if (d->pattern == PX_PATTERN_NM)
            snprintf(pattern, sizeof pattern, "%lld:%lld", (long long)d->pa, (long long)d->pb);
        else
            snprintf(pattern, sizeof pattern, "unstructured");
        size_t bytes = (size_t)(m->numel + 7) / 8;
        unsigned char *bits = calloc(bytes + 1, 1);
        if (!bits) px_rt_fail("out of memory for the sparsity metadata of '%s'", m->name);
        px_masked_bits(m, bits);
        put(&t, i ? ", {\"name\": " : "{\"name\": ", i ? 11 : 9);
        put_json_string(&t, m->name);
        putf(&t,
             ", \"sparsity\": %.17g, \"pattern\": \"%s\", \"live\": %lld, \"total\": %lld, "
             "\"mask\": \"",
             1.0 - (double)d->nnz / (double)m->numel, pattern, (long long)d->nnz,
             (long long)m->numel);
        put_base64(&t, bits, bytes);
        put(&t, "\"}", 2);
        free(bits);
    }
    put(&t, "]}", 2);
    return t.s;
}
