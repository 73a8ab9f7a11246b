#include "file_in.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int px_open_regular_why(const char *path, struct stat *st, char *why, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 || fstat(fd, st) != 0) {
        int e = errno;
        snprintf(why, cap, "%s", strerror(e));
        if (fd >= 0) close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        snprintf(why, cap, "not a regular file (a FIFO, device or folder)");
        close(fd);
        errno = EINVAL;
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

int px_open_regular(const char *path, const char *what, struct stat *st, char *err, size_t cap) {
    char why[256];
    int fd = px_open_regular_why(path, st, why, sizeof why);
    if (fd >= 0) return fd;
    int e = errno;
    if (e == EINVAL)
        snprintf(err, cap, "%s %s is %s", what, path, why);
    else
        snprintf(err, cap, "cannot open %s %s: %s", what, path, why);
    errno = e;
    return -1;
}
