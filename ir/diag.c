#include "diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void px_diag_init(px_diag *d) {
    d->errors = 0;
    d->len = 0;
    d->text[0] = '\0';
}

static void append(px_diag *d, const char *prefix, const char *fmt, va_list ap) {
    if (!d) return;
    size_t room = PX_DIAG_CAP - d->len;
    if (room <= 1) return;
    int n = snprintf(d->text + d->len, room, "%s", prefix);
    if (n < 0) return;
    d->len += (size_t)n < room ? (size_t)n : room - 1;
    room = PX_DIAG_CAP - d->len;
    n = vsnprintf(d->text + d->len, room, fmt, ap);
    if (n < 0) return;
    d->len += (size_t)n < room ? (size_t)n : room - 1;
    if (d->len + 1 < PX_DIAG_CAP) {
        d->text[d->len++] = '\n';
        d->text[d->len] = '\0';
    } else {
        /* Out of room: mark the truncation rather than dropping it silently. */
        memcpy(d->text + PX_DIAG_CAP - 16, "\n[truncated]\n", 14);
        d->len = PX_DIAG_CAP - 2;
    }
}

int px_error(px_diag *d, const char *fmt, ...) {
    if (d) d->errors++;
    va_list ap;
    va_start(ap, fmt);
    append(d, "error: ", fmt, ap);
    va_end(ap);
    return -1;
}

void px_warning(px_diag *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    append(d, "warning: ", fmt, ap);
    va_end(ap);
}

void px_note(px_diag *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    append(d, "  note: ", fmt, ap);
    va_end(ap);
}

int px_diag_failed(const px_diag *d) {
    return d && d->errors > 0;
}

void px_diag_first_line(const px_diag *d, char *out, size_t cap) {
    if (!cap) return;
    const char *msg = strncmp(d->text, "error: ", 7) == 0 ? d->text + 7 : d->text;
    snprintf(out, cap, "%.*s", (int)strcspn(msg, "\n"), msg);
}

px_diag *px_diag_scratch(char *why, size_t cap) {
    if (cap) why[0] = '\0';
    px_diag *d = malloc(sizeof *d);
    if (d)
        px_diag_init(d);
    else if (cap)
        snprintf(why, cap, "out of memory");
    return d;
}

void px_diag_scratch_end(px_diag *d, int failed, char *why, size_t cap) {
    if (failed) px_diag_first_line(d, why, cap);
    free(d);
}
