#include "text_escape.h"

#include <string.h>

static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD in UTF-8 */

int px_utf8_len(const char *s) {
    const unsigned char *u = (const unsigned char *)s;
    unsigned c = u[0];
    if (c < 0x80) return 1;
    int len;
    unsigned min, cp;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, min = 0x80, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, min = 0x800, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0; /* continuation byte, C0/C1 overlong lead, or > U+10FFFF lead */
    }
    /* The NUL terminator is not a continuation byte, so this never reads past it. */
    for (int i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (u[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

const char *px_json_escape_next(const char *s, size_t *used, char buf[16]) {
    static const char hex[] = "0123456789abcdef";
    unsigned char c = (unsigned char)s[0];
    int n = px_utf8_len(s);
    *used = n ? (size_t)n : 1;
    if (!n) return "\\ufffd"; /* not UTF-8 */
    switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\b': return "\\b";
    case '\f': return "\\f";
    default: break;
    }
    if (c < 0x20) {
        memcpy(buf, "\\u00", 4);
        buf[4] = hex[c >> 4], buf[5] = hex[c & 15], buf[6] = '\0';
        return buf;
    }
    memcpy(buf, s, (size_t)n);
    buf[n] = '\0';
    return buf;
}

void px_json_string(FILE *f, const char *s) {
    if (!s) {
        fputs("null", f);
        return;
    }
    char buf[16];
    size_t used;
    fputc('"', f);
    for (; *s; s += used) fputs(px_json_escape_next(s, &used, buf), f);
    fputc('"', f);
}

size_t px_utf8_text(char *buf, size_t cap, const char *s) {
    size_t len = 0;
    for (const char *p = s; *p;) {
        int k = px_utf8_len(p);
        const char *piece = k ? p : replacement;
        size_t n = k ? (size_t)k : sizeof replacement - 1;
        for (size_t i = 0; i < n; i++, len++)
            if (len + 1 < cap) buf[len] = piece[i];
        p += k ? k : 1;
    }
    if (cap) buf[len < cap ? len : cap - 1] = '\0';
    return len;
}
