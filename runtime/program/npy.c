#include "npy.h"

#include "file_atomic.h"
#include "file_in.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int px_npy_load(const char *path, px_array *a, char *err, size_t cap) {
    memset(a, 0, sizeof *a);
    struct stat st;
    int fd = px_open_regular(path, "data file", &st, err, cap);
    if (fd < 0) return -1;
    if (st.st_size < 10) {
        close(fd);
        snprintf(err, cap, "%s: not a .npy file (too short)", path);
        return -1;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, cap, "cannot map %s: %s", path, strerror(errno));
        return -1;
    }
    size_t len = (size_t)st.st_size, off;
    if (px_npy_header_parse(map, len, a, &off, path, err, cap)) {
        munmap(map, len);
        return -1;
    }
    if (a->nbytes > len - off) {
        snprintf(err, cap, "%s: truncated .npy data: %zu bytes of data expected, %zu present", path,
                 a->nbytes, len - off);
        munmap(map, len);
        return -1;
    }
    a->map = map;
    a->map_len = len;
    a->data = (char *)map + off;
    return 0;
}

int px_npy_save(const char *path, int dtype, int rank, const int64_t *dims, const void *data,
                char *err, size_t cap) {
    unsigned char hdr[PX_NPY_HEADER_ROOM];
    size_t hlen = px_npy_header_format(hdr, sizeof hdr, dtype, rank, dims, 0);
    if (!hlen) {
        snprintf(err, cap, "%s: cannot write dtype %s as .npy", path, px_rt_dtype_name(dtype));
        return -1;
    }
    int64_t numel = 1;
    for (int i = 0; i < rank; i++) numel *= dims[i];
    px_atomic_file af;
    if (px_atomic_open(&af, path, err, cap)) return -1;
    size_t nbytes = (size_t)numel * px_rt_dtype_size(dtype);
    int ok = fwrite(hdr, 1, hlen, af.f) == hlen &&
             (nbytes == 0 || fwrite(data, 1, nbytes, af.f) == nbytes);
    if (!ok) {
        snprintf(err, cap, "cannot write %s: %s", path, strerror(errno));
        px_atomic_abort(&af);
        return -1;
    }
    return px_atomic_commit(&af, err, cap);
}

void px_array_free(px_array *a) {
    if (a->map)
        munmap(a->map, a->map_len);
    else
        free(a->data);
    memset(a, 0, sizeof *a);
}
