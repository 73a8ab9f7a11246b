/* Reading a whole input file safely: the file must be a regular file (a FIFO,
 * a device or a directory is refused, never waited on). */
#ifndef PX_FILE_READ_H
#define PX_FILE_READ_H

#include "diag.h"

#include <stddef.h>

/* Reads path into a new buffer (caller frees; one spare byte past *len, NUL).
 * what names the file in messages ("model", "tensor file"). NULL on error. */
unsigned char *px_read_regular_file(const char *path, const char *what, size_t *len, px_diag *d);

#endif
