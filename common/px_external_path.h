/* ONNX external data, the rules the importer (ir/external_data.c) and a
 * program's weight reader (runtime/program/weights_source.c) share: where a
 * tensor's external file is, and reading it whole. common/: no dependencies,
 * compiled into both the compiler and the runtime. */
#ifndef PX_EXTERNAL_PATH_H
#define PX_EXTERNAL_PATH_H

#include <stddef.h>
#include <stdint.h>

/* Resolves an external-data `location` inside the model's folder base_dir
 * into real_file (PATH_MAX bytes, every link resolved). Refuses an empty or
 * absolute location and one that resolves, through ".." or a symlink,
 * outside the folder. what names the tensor in messages ("tensor 'W'").
 * Returns 0, or -1 with a one-line message in err. */
int px_external_resolve(const char *base_dir, const char *what, const char *location,
                        char *real_file, char *err, size_t cap);

/* pread()s exactly len bytes at offset (retrying short reads and EINTR).
 * Returns 0, or -1 at an error or the end of the file. */
int px_read_fully(int fd, void *buf, size_t len, int64_t offset);

#endif
