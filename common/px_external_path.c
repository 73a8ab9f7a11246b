#include "px_external_path.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(char *err, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

/* realpath() follows symlinks, so a link pointing outside the folder is
 * caught the same way as "../x". */
int px_external_resolve(const char *base_dir, const char *what, const char *location,
                        char *real_file, char *err, size_t cap) {
    char real_base[PATH_MAX], joined[PATH_MAX];
    if (!location || !*location) return fail(err, cap, "%s: external data has no 'location'", what);
    if (location[0] == '/')
        return fail(err, cap,
                    "%s: external data location '%s' is an absolute path; it must be relative to "
                    "the model's folder",
                    what, location);
    if (!realpath(base_dir, real_base))
        return fail(err, cap, "%s: cannot resolve the model folder '%s': %s", what, base_dir,
                    strerror(errno));
    int k = snprintf(joined, sizeof joined, "%s/%s", real_base, location);
    if (k < 0 || (size_t)k >= sizeof joined)
        return fail(err, cap, "%s: external data path '%s' is too long", what, location);
    if (!realpath(joined, real_file))
        return fail(err, cap, "%s: cannot open external data file '%s' (in '%s'): %s", what,
                    location, base_dir, strerror(errno));
    size_t lb = strlen(real_base);
    int inside = strncmp(real_file, real_base, lb) == 0 &&
                 (real_file[lb] == '/' || (lb == 1 && real_base[0] == '/'));
    if (!inside)
        return fail(err, cap,
                    "%s: external data location '%s' resolves to '%s', outside the model's "
                    "folder '%s'",
                    what, location, real_file, real_base);
    return 0;
}

int px_read_fully(int fd, void *buf, size_t len, int64_t offset) {
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
