/* Opening an input file (data, checkpoint) for reading: it must be a regular
 * file, checked on the open descriptor, and opening never waits (a FIFO given
 * as data would otherwise block the job forever before the watchdog runs). */
#ifndef PX_FILE_IN_H
#define PX_FILE_IN_H

#include <stddef.h>
#include <sys/stat.h>

/* Opens path read-only (O_NONBLOCK, O_CLOEXEC) and fstats it into *st.
 * what names the file in messages ("data file", "checkpoint"). Returns the
 * descriptor (blocking again, for plain reads), or -1 with a message. */
int px_open_regular(const char *path, const char *what, struct stat *st, char *err, size_t cap);
/* The same, with only the reason in why ("No such file or directory", "not
 * a regular file (a FIFO, device or folder)"), for callers that name the
 * file themselves. */
int px_open_regular_why(const char *path, struct stat *st, char *why, size_t cap);

#endif
