/* JSON string escaping for the files the runtime writes (--trace,
 * --run-dir). */
#ifndef PX_JSON_ESCAPE_H
#define PX_JSON_ESCAPE_H

/* The text that stands for byte c inside a JSON string: c itself, or an
 * escape for quotes, backslashes and control characters; in buf (8 bytes). */
const char *px_json_char(unsigned char c, char buf[8]);

#endif
