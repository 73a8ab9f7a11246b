#include "losses_csv.h"

#include "file_atomic.h"
#include "out_paths.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The kept lines of an earlier run: those with a step up to keep_through,
 * in order, stopping at the first line that does not continue the count
 * (every_step) or does not ascend. */
static char *kept_lines(const char *path, const char *header, int64_t keep_through, int every_step,
                        size_t *len) {
    *len = 0;
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char line[4096];
    char *kept = NULL;
    size_t cap = 0, hlen = strlen(header);
    int64_t last = 0;
    if (!fgets(line, sizeof line, f) || strncmp(line, header, hlen) || strcmp(line + hlen, "\n")) {
        fclose(f);
        return NULL;
    }
    while (fgets(line, sizeof line, f)) {
        char *end;
        long long step = strtoll(line, &end, 10);
        size_t n = strlen(line);
        if (step > keep_through || (every_step ? step != last + 1 : step <= last) || *end != ',' ||
            n == 0 || line[n - 1] != '\n')
            break;
        if (*len + n > cap) {
            cap = (cap ? cap * 2 : 4096) + n;
            char *grown = realloc(kept, cap);
            if (!grown) break;
            kept = grown;
        }
        memcpy(kept + *len, line, n);
        *len += n;
        last = step;
    }
    fclose(f);
    return kept;
}

FILE *px_csv_log_open(const char *path, const char *flag, const char *header, int64_t keep_through,
                      int every_step, char *err, size_t cap) {
    size_t len = 0;
    /* A device (/dev/null, a terminal) is written in place, and nothing is
     * read back from it. */
    int device = px_is_char_device(path);
    char *kept = keep_through > 0 && !device
                     ? kept_lines(path, header, keep_through, every_step, &len)
                     : NULL;
    /* The header and the kept lines go to a temporary renamed over the file
     * only once they are on disk: a full disk or a planted symlink cannot
     * cost the earlier run's lines. */
    px_atomic_file a;
    char why[4400];
    if (px_atomic_open(&a, path, why, sizeof why)) {
        snprintf(err, cap, "%s: %s", flag, why);
        free(kept);
        return NULL;
    }
    fprintf(a.f, "%s\n", header);
    if (a.device) return a.f; /* kept open: write errors are reported at close */
    if (len) fwrite(kept, 1, len, a.f);
    free(kept);
    if (px_atomic_commit(&a, why, sizeof why)) {
        snprintf(err, cap, "%s: %s%s", flag, why,
                 access(path, F_OK) == 0 ? " (the file is unchanged)" : "");
        return NULL;
    }
    /* Appended to from here on; O_NOFOLLOW: the name renamed into place a
     * moment ago is still ours, never a symlink planted since. */
    int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "a");
    if (!f) {
        snprintf(err, cap, "cannot write %s %s: %s", flag, path, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    return f;
}

int px_csv_log_close(FILE *f, const char *flag, const char *path, char *err, size_t cap) {
    /* A write that failed earlier (a full disk) leaves the error flag set
     * though fclose itself may succeed. */
    int failed = fflush(f) != 0 || ferror(f);
    int saved = errno;
    if (fclose(f) && !failed) {
        failed = 1;
        saved = errno;
    }
    if (!failed) return 0;
    snprintf(err, cap, "cannot write %s %s: %s", flag, path,
             saved ? strerror(saved) : "a write failed");
    return -1;
}

void px_csv_log_add(FILE *f, int64_t step, const double *vals, int n) {
    fprintf(f, "%lld", (long long)step);
    for (int i = 0; i < n; i++) fprintf(f, ",%.9g", vals[i]);
    fputc('\n', f);
}
