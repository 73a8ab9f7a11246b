#include "out_paths.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int px_path_list_add(px_path_list *l, const char *flag, const char *path) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        px_named_path *grown = realloc(l->items, sizeof *grown * (size_t)cap);
        if (!grown) return -1;
        l->items = grown;
        l->cap = cap;
    }
    char *f = strdup(flag), *p = strdup(path);
    if (!f || !p) {
        free(f);
        free(p);
        return -1;
    }
    l->items[l->n++] = (px_named_path){f, p};
    return 0;
}

void px_path_list_free(px_path_list *l) {
    for (int i = 0; i < l->n; i++) {
        free((char *)l->items[i].flag);
        free((char *)l->items[i].path);
    }
    free(l->items);
    memset(l, 0, sizeof *l);
}

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
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea != eb) return 0; /* one exists, the other not */
    char ra[PATH_MAX + 256], rb[PATH_MAX + 256];
    return resolved(a, ra, sizeof ra) == 0 && resolved(b, rb, sizeof rb) == 0 &&
           strcmp(ra, rb) == 0;
}

int px_is_char_device(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

int px_output_kind_ok(const char *flag, const char *path, char *msg, size_t cap) {
    struct stat st;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)) return 0;
    const char *what = S_ISDIR(st.st_mode)    ? "a folder"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                                              : "not a regular file";
    snprintf(msg, cap,
             "%s %s is %s: an output is written to a regular file (replaced whole, "
             "atomically), a new file, or a character device such as /dev/null",
             flag, path, what);
    return -1;
}

int px_find_path_collision(const px_named_path *p, int n, int (*allowed)(int i, int j), char *msg,
                           size_t cap) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!p[i].path || !p[j].path || (allowed && allowed(i, j))) continue;
            if (!px_same_file(p[i].path, p[j].path) || px_is_char_device(p[i].path)) continue;
            snprintf(msg, cap, "%s %s and %s %s name the same file: give them different paths",
                     p[i].flag, p[i].path, p[j].flag, p[j].path);
            return 1;
        }
    return 0;
}

int px_find_input_clash(const px_named_path *outs, int n_out, const px_named_path *ins, int n_in,
                        char *msg, size_t cap) {
    for (int i = 0; i < n_out; i++) {
        if (!outs[i].path) continue;
        for (int j = 0; j < n_in; j++) {
            if (!ins[j].path || !px_same_file(outs[i].path, ins[j].path)) continue;
            snprintf(msg, cap,
                     "%s %s is one of the inputs (%s %s): an output never replaces an input; give "
                     "it another path",
                     outs[i].flag, outs[i].path, ins[j].flag, ins[j].path);
            return 1;
        }
    }
    return 0;
}

int px_self_path(char *out, size_t cap) {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return -1;
    buf[n] = '\0';
    int k = snprintf(out, cap, "%s", buf);
    return k < 0 || (size_t)k >= cap ? -1 : 0;
}
