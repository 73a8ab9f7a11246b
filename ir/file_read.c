#include "file_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

unsigned char *px_read_regular_file(const char *path, const char *what, size_t *len, px_diag *d) {
    unsigned char *buf = NULL;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; fstat refuses it. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        px_error(d, "cannot open %s '%s': %s", what, path, strerror(errno));
        goto cleanup;
    }
    if (!S_ISREG(st.st_mode)) {
        px_error(d, "%s '%s' is not a regular file", what, path);
        goto cleanup;
    }
    size_t size = (size_t)st.st_size;
    buf = malloc(size + 1);
    if (!buf) {
        px_error(d, "out of memory reading %s '%s' (%zu bytes)", what, path, size);
        goto cleanup;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t k = read(fd, buf + got, size - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            px_error(d, "cannot read %s '%s': %s", what, path,
                     k < 0 ? strerror(errno) : "file shrank while being read");
            free(buf);
            buf = NULL;
            goto cleanup;
        }
        got += (size_t)k;
    }
    buf[size] = 0;
    *len = size;
cleanup:
    if (fd >= 0) close(fd);
    return buf;
}
