#include "json_escape.h"

#include <stdio.h>

const char *px_json_char(unsigned char c, char buf[8]) {
    if (c == '"' || c == '\\')
        snprintf(buf, 8, "\\%c", c);
    else if (c < 0x20)
        snprintf(buf, 8, "\\u%04x", c);
    else
        snprintf(buf, 8, "%c", c);
    return buf;
}
