#include "external_data.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Resolves ref->location inside base_dir into real_file (PATH_MAX bytes).
 * realpath() follows symlinks, so a link pointing outside the folder is
 * caught the same way as "../x". */
static int resolve_inside(const char *base_dir, const char *name, const char *location,
                          char *real_file, px_diag *d) {
    char real_base[PATH_MAX], joined[PATH_MAX];
    if (!location || !*location)
        return px_error(d, "tensor '%s': external data has no 'location'", name);
    if (location[0] == '/')
        return px_error(d,
                        "tensor '%s': external data location '%s' is an absolute path; it must be "
                        "relative to the model's folder",
                        name, location);
    if (!realpath(base_dir, real_base))
        return px_error(d, "tensor '%s': cannot resolve the model folder '%s': %s", name, base_dir,
                        strerror(errno));
    int k = snprintf(joined, sizeof joined, "%s/%s", real_base, location);
    if (k < 0 || (size_t)k >= sizeof joined)
        return px_error(d, "tensor '%s': external data path '%s' is too long", name, location);
    if (!realpath(joined, real_file))
        return px_error(d, "tensor '%s': cannot open external data file '%s' (in '%s'): %s", name,
                        location, base_dir, strerror(errno));
    size_t lb = strlen(real_base);
    int inside = strncmp(real_file, real_base, lb) == 0 &&
                 (real_file[lb] == '/' || (lb == 1 && real_base[0] == '/'));
    if (!inside)
        return px_error(d,
                        "tensor '%s': external data location '%s' resolves to '%s', outside the "
                        "model's folder '%s'",
                        name, location, real_file, real_base);
    return 0;
}

static int read_fully(int fd, void *buf, size_t len, int64_t offset) {
    char *p = buf;
    while (len > 0) {
        ssize_t got = pread(fd, p, len, (off_t)offset);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        p += got;
        len -= (size_t)got;
        offset += got;
    }
    return 0;
}

int px_external_data_load(const char *base_dir, const char *name, const px_external_ref *ref,
                          px_tensor *t, px_diag *d) {
    char real_file[PATH_MAX];
    int rc = -1, fd = -1;
    void *buf = NULL;
    if (!base_dir)
        return px_error(
            d,
            "tensor '%s' keeps its data in external file '%s', but the model was loaded "
            "from memory without a folder to resolve it against",
            name, ref->location ? ref->location : "?");
    if (resolve_inside(base_dir, name, ref->location, real_file, d)) return -1;

    /* realpath resolved every link: O_NOFOLLOW refuses one planted since;
     * O_NONBLOCK keeps a FIFO from blocking open() (fstat refuses it). */
    fd = open(real_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        px_error(d, "tensor '%s': cannot open external data file '%s': %s", name, real_file,
                 strerror(errno));
        goto cleanup;
    }
    if (!S_ISREG(st.st_mode)) {
        px_error(d, "tensor '%s': external data '%s' is not a regular file", name, real_file);
        goto cleanup;
    }
    int64_t size = (int64_t)st.st_size;
    if (ref->offset < 0 || ref->offset > size) {
        px_error(d, "tensor '%s': external data offset %lld is outside '%s' (%lld bytes)", name,
                 (long long)ref->offset, ref->location, (long long)size);
        goto cleanup;
    }
    int64_t length = ref->length >= 0 ? ref->length : size - ref->offset;
    if (length > size - ref->offset) {
        px_error(d,
                 "tensor '%s': external data range [%lld, %lld + %lld) runs past the end of '%s' "
                 "(%lld bytes)",
                 name, (long long)ref->offset, (long long)ref->offset, (long long)length,
                 ref->location, (long long)size);
        goto cleanup;
    }
    if ((uint64_t)length != (uint64_t)t->nbytes) {
        char sbuf[256];
        px_error(d, "tensor '%s': external data holds %lld bytes but a %s tensor %s needs %zu",
                 name, (long long)length, px_dtype_name(t->dtype),
                 px_shape_str(&t->shape, sbuf, sizeof sbuf), t->nbytes);
        goto cleanup;
    }

    if (t->nbytes >= PX_EXTERNAL_MMAP_MIN) {
        long page = sysconf(_SC_PAGESIZE);
        if (page <= 0) page = 4096;
        int64_t aligned = ref->offset - ref->offset % page;
        size_t map_off = (size_t)(ref->offset - aligned);
        size_t map_len = map_off + t->nbytes;
        /* Private + writable: passes may edit weights in place without ever
         * touching the file; NORESERVE keeps huge maps from being refused. */
        void *p = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd,
                       (off_t)aligned);
        if (p == MAP_FAILED) {
            px_error(d, "tensor '%s': cannot map %zu bytes of '%s': %s", name, t->nbytes, real_file,
                     strerror(errno));
            goto cleanup;
        }
        t->data = (char *)p + map_off;
        t->storage = PX_STORAGE_MMAP;
        t->map_off = map_off;
        t->map_len = map_len;
    } else {
        buf = malloc(t->nbytes);
        if (!buf) {
            px_error(d, "tensor '%s': out of memory reading %zu bytes", name, t->nbytes);
            goto cleanup;
        }
        if (read_fully(fd, buf, t->nbytes, ref->offset)) {
            px_error(d, "tensor '%s': cannot read %zu bytes at offset %lld of '%s'", name,
                     t->nbytes, (long long)ref->offset, real_file);
            goto cleanup;
        }
        t->data = buf;
        t->storage = PX_STORAGE_MALLOC;
        buf = NULL;
    }
    rc = 0;
cleanup:
    free(buf);
    if (fd >= 0) close(fd);
    return rc;
}
