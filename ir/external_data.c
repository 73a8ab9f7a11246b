#include "external_data.h"
#include "px_external_path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Resolves ref->location inside base_dir into real_file (PATH_MAX bytes):
 * the rule of common/px_external_path.c, shared with the runtime. */
static int resolve_inside(const char *base_dir, const char *name, const char *location,
                          char *real_file, px_diag *d) {
    char what[300], err[3 * PATH_MAX];
    snprintf(what, sizeof what, "tensor '%s'", name);
    if (px_external_resolve(base_dir, what, location, real_file, err, sizeof err))
        return px_error(d, "%s", err);
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
        if (px_read_fully(fd, buf, t->nbytes, ref->offset)) {
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
