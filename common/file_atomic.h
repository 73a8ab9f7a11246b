/* Writing an output, the one way the compiler and a generated program
 * write every file (out_paths.h has the checks that come first):
 *
 *   - a regular file, or a path where nothing is yet, appears whole or not
 *     at all: written to a new temporary PATH.tmp.<pid>.XXXXXX in the same
 *     folder (mkstemp: created exclusively, never through a planted
 *     symlink), flushed to disk, then renamed over PATH, so a crash or a
 *     failed write never leaves a half-written checkpoint or model where a
 *     good one was. The temporary is removed on failure, at exit and on
 *     SIGTERM/SIGINT/SIGHUP (temp_registry.h); one left by a killed writer
 *     (its pid gone) is removed by the next write of the same PATH;
 *   - a character device (/dev/null, /dev/full, a terminal) is written in
 *     place: no temporary, no rename (renaming over it would replace the
 *     device with a file), and its write errors are reported;
 *   - anything else (a folder, FIFO, socket, block device) is refused. */
#ifndef PX_FILE_ATOMIC_H
#define PX_FILE_ATOMIC_H

#include <stddef.h>
#include <stdio.h>

typedef struct px_atomic_file {
    FILE *f;
    char path[4096];
    char tmp[4110]; /* "" when writing to a device */
    int temp_slot;  /* in the temp registry; -1: not registered */
    int device;     /* 1: path is a character device, written in place */
} px_atomic_file;

/* Creates the temporary for PATH (or opens the device PATH) for writing;
 * -1 with a message in err. */
int px_atomic_open(px_atomic_file *a, const char *path, char *err, size_t cap);
/* Flushes, fsyncs, closes and renames the temporary over the path (and
 * fsyncs the folder). On failure removes the temporary: -1 with a message. */
int px_atomic_commit(px_atomic_file *a, char *err, size_t cap);
/* The same, renaming the temporary to another path (a name known only once
 * the contents are written, as checkpoint pieces named by their hash); not
 * for a device. */
int px_atomic_commit_as(px_atomic_file *a, const char *path, char *err, size_t cap);
/* Gives up: closes and removes the temporary; the old file stays. */
void px_atomic_abort(px_atomic_file *a);

/* Whether path could be written: a character device that may be opened
 * for writing, or a regular file or nothing in a folder that exists and is
 * writable. 0, or -1 with a message (used to fail before training). */
int px_check_writable(const char *path, char *err, size_t cap);

#endif
