#include "file_map.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int px_file_map(const char *path, px_file_view *view, char *err, size_t err_cap) {
    view->data = NULL;
    view->len = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, err_cap, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, err_cap, "%s is not a regular file", path);
        close(fd);
        return -1;
    }
    if (st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            snprintf(err, err_cap, "cannot read %s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        view->data = p;
        view->len = (size_t)st.st_size;
    }
    close(fd);
    return 0;
}

void px_file_unmap(px_file_view *view) {
    if (view->data) munmap((void *)view->data, view->len);
    view->data = NULL;
    view->len = 0;
}
