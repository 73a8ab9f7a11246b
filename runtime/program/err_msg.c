#include "err_msg.h"

#include <stdarg.h>
#include <stdio.h>

int px_err(char *err, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}
