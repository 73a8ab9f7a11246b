/* Diagnostics: library code reports errors into a px_diag and returns a
 * non-zero status; only the driver decides whether to print and exit. */
#ifndef PX_DIAG_H
#define PX_DIAG_H

#include <stddef.h>

#define PX_DIAG_CAP 16384

typedef struct px_diag {
    int errors;             /* number of errors recorded */
    size_t len;             /* bytes used in text */
    char text[PX_DIAG_CAP]; /* newline-separated messages, NUL-terminated */
} px_diag;

void px_diag_init(px_diag *d);
/* Appends "error: <message>\n" and returns -1 so callers can `return px_error(...)`. */
int px_error(px_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends "warning: <message>\n" (the error count is not touched). */
void px_warning(px_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends a free-form note line (context for the previous error). */
void px_note(px_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int px_diag_failed(const px_diag *d);
/* The first line of d's text without its "error: " prefix, into out (cap
 * bytes): the reason to show where a failure is reported, not fatal. */
void px_diag_first_line(const px_diag *d, char *out, size_t cap);
/* A diag of its own for a step whose failure is a reason to show, not an
 * error (16 KiB: allocated, not on the stack): why (cap bytes) emptied, or
 * NULL with "out of memory" in why. px_diag_scratch_end frees it, first
 * putting its first line in why when the step failed. */
px_diag *px_diag_scratch(char *why, size_t cap);
void px_diag_scratch_end(px_diag *d, int failed, char *why, size_t cap);

#endif
