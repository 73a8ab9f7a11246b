/* Read-only views of the files a report reads. A view is mapped (a trace
 * may be large) and need not end in NUL. Only regular files are opened: a
 * FIFO or a device named as a run file would block or never end. */
#ifndef PX_REPORT_FILE_MAP_H
#define PX_REPORT_FILE_MAP_H

#include <stddef.h>

typedef struct px_file_view {
    const char *data; /* NULL for an empty file */
    size_t len;
} px_file_view;

/* 0, or -1 with a message ("cannot open X: ...") in err. */
int px_file_map(const char *path, px_file_view *view, char *err, size_t err_cap);
void px_file_unmap(px_file_view *view);

#endif
