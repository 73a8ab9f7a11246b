/* Names in a model (inputs, outputs, nodes, initializers) may hold any
 * bytes; the JSON and CSV files the compiler and a generated program write
 * must stay valid UTF-8 (JSON cannot carry raw bytes). Every JSON and CSV
 * writer goes through these:
 *   - valid UTF-8 is written as it is; a byte that is not part of valid
 *     UTF-8 becomes U+FFFD (the replacement character);
 *   - JSON strings escape quotes, backslashes and control characters. */
#ifndef PX_TEXT_ESCAPE_H
#define PX_TEXT_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* Bytes of the valid UTF-8 character at s (1 to 4), or 0 when s does not
 * start one (overlong forms, surrogates, past U+10FFFF). Reads past s[0]
 * only while the bytes continue the character (never past a NUL). */
int px_utf8_len(const char *s);

/* The JSON text for the next character of s (s[0] not NUL), in buf (at
 * least 16 bytes); *used: the bytes of s it stands for. */
const char *px_json_escape_next(const char *s, size_t *used, char buf[16]);
/* s as a JSON string, with its quotes; NULL as null. */
void px_json_string(FILE *f, const char *s);
/* s into buf (cap bytes, always NUL-terminated, cut short when it does not
 * fit) with each byte outside valid UTF-8 replaced by U+FFFD; returns the
 * length it needs. For CSV fields and other plain text. */
size_t px_utf8_text(char *buf, size_t cap, const char *s);

#endif
