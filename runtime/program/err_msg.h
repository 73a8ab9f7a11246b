/* Library code reports failures as a message in a caller's buffer and a
 * status: px_err formats the message and returns -1, so a failing check is
 * one line: `return px_err(err, cap, "...", ...);`. */
#ifndef PX_ERR_MSG_H
#define PX_ERR_MSG_H

#include <stddef.h>

int px_err(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
