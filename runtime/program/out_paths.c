#include "out_paths.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* realpath of the folder + "/" + last component; 0 on success. */
static int resolved(const char *path, char *out, size_t cap) {
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX], real[PATH_MAX];
    const char *base = slash ? slash + 1 : path;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (!realpath(dir, real)) return -1;
    int n = snprintf(out, cap, "%s/%s", real, base);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int px_same_file(const char *a, const char *b) {
    if (strcmp(a, b) == 0) return 1;
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char ra[PATH_MAX + 256], rb[PATH_MAX + 256];
    return resolved(a, ra, sizeof ra) == 0 && resolved(b, rb, sizeof rb) == 0 &&
           strcmp(ra, rb) == 0;
}

int px_find_path_collision(const px_named_path *p, int n, int (*allowed)(int i, int j), char *msg,
                           size_t cap) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!p[i].path || !p[j].path || (allowed && allowed(i, j))) continue;
            if (!px_same_file(p[i].path, p[j].path)) continue;
            snprintf(msg, cap, "%s %s and %s %s name the same file: give them different paths",
                     p[i].flag, p[i].path, p[j].flag, p[j].path);
            return 1;
        }
    return 0;
}
