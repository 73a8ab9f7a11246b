#include "file_atomic.h"

#include "out_paths.h"
#include "temp_registry.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void folder_of(const char *path, char *out, size_t cap) {
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    snprintf(out, cap, "%s", dirname(copy));
}

/* Removes temporaries PATH.tmp.<pid>.XXXXXX left by writers that died
 * without cleaning up (SIGKILL cannot be caught): those whose pid no longer
 * runs on this machine. */
static void remove_stale_temps(const char *path) {
    char dir[4096], copy[4096], prefix[4200];
    folder_of(path, dir, sizeof dir);
    snprintf(copy, sizeof copy, "%s", path);
    int n = snprintf(prefix, sizeof prefix, "%s.tmp.", basename(copy));
    if (n < 0 || (size_t)n >= sizeof prefix) return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, (size_t)n) != 0) continue;
        char *end;
        long pid = strtol(e->d_name + n, &end, 10);
        if (end == e->d_name + n || *end != '.' || strlen(end) != 7 || pid <= 0) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to judge */
        char stale[8400];
        snprintf(stale, sizeof stale, "%s/%s", dir, e->d_name);
        unlink(stale);
    }
    closedir(d);
}

/* A character device: opened in place (O_NOCTTY: a terminal does not
 * become the controlling one). */
static int open_device(px_atomic_file *a, char *err, size_t cap) {
    int fd = open(a->path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0 || !(a->f = fdopen(fd, "wb"))) {
        snprintf(err, cap, "cannot write %s: %s", a->path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    a->device = 1;
    return 0;
}

int px_atomic_open(px_atomic_file *a, const char *path, char *err, size_t cap) {
    memset(a, 0, sizeof *a);
    a->temp_slot = -1;
    if (strlen(path) >= sizeof a->path) {
        snprintf(err, cap, "path too long: %.200s...", path);
        return -1;
    }
    snprintf(a->path, sizeof a->path, "%s", path);
    if (px_is_char_device(path)) return open_device(a, err, cap);
    char why[4400];
    if (px_output_kind_ok("output", path, why, sizeof why)) {
        snprintf(err, cap, "%s", why);
        return -1;
    }
    remove_stale_temps(path);
    /* The pid in the name lets a later writer tell a dead writer's leftover. */
    int k = snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%d.XXXXXX", path, (int)getpid());
    if (k < 0 || (size_t)k >= sizeof a->tmp) {
        snprintf(err, cap, "path too long: %.200s...", path);
        a->tmp[0] = '\0';
        return -1;
    }
    /* mkstemp: O_CREAT|O_EXCL with a fresh name, so a symlink planted at a
     * predictable temp name cannot redirect the write. */
    int fd = mkstemp(a->tmp);
    if (fd < 0) {
        snprintf(err, cap, "cannot write %s: cannot create a temporary file next to it: %s", path,
                 strerror(errno));
        a->tmp[0] = '\0';
        return -1;
    }
    a->temp_slot = px_temp_remember(a->tmp);
    /* mkstemp makes 0600; the final file gets the usual 0666 & ~umask. */
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        snprintf(err, cap, "cannot write %s: %s", a->tmp, strerror(errno));
        close(fd);
        px_atomic_abort(a);
        return -1;
    }
    return 0;
}

/* Flushes and closes a device; its write errors (a full /dev/full) are
 * reported. */
static int commit_device(px_atomic_file *a, char *err, size_t cap) {
    int saved = errno; /* the error of an earlier failed write, if any */
    int ok = !ferror(a->f);
    if (fflush(a->f) != 0) {
        ok = 0;
        saved = errno;
    }
    if (fclose(a->f) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    a->f = NULL;
    if (ok) return 0;
    snprintf(err, cap, "cannot write %s: %s", a->path, saved ? strerror(saved) : "a write failed");
    return -1;
}

int px_atomic_commit(px_atomic_file *a, char *err, size_t cap) {
    if (a->device) return commit_device(a, err, cap);
    int ok = fflush(a->f) == 0 && !ferror(a->f);
    int saved = errno;
    if (ok && fsync(fileno(a->f))) {
        ok = 0;
        saved = errno;
    }
    if (fclose(a->f) && ok) {
        ok = 0;
        saved = errno;
    }
    a->f = NULL;
    if (ok && rename(a->tmp, a->path)) {
        ok = 0;
        saved = errno;
    }
    if (!ok) {
        snprintf(err, cap, "cannot write %s: %s", a->path, strerror(saved));
        px_atomic_abort(a);
        return -1;
    }
    px_temp_forget(a->temp_slot);
    a->temp_slot = -1;
    a->tmp[0] = '\0';
    /* The rename itself is durable only once the folder is synced. */
    char dir[4096];
    folder_of(a->path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    return 0;
}

int px_atomic_commit_as(px_atomic_file *a, const char *path, char *err, size_t cap) {
    if (a->device) {
        snprintf(err, cap, "cannot write %s: %s is a device, not a file to rename", path, a->path);
        px_atomic_abort(a);
        return -1;
    }
    if (strlen(path) >= sizeof a->path) {
        snprintf(err, cap, "path too long: %.200s...", path);
        px_atomic_abort(a);
        return -1;
    }
    snprintf(a->path, sizeof a->path, "%s", path);
    return px_atomic_commit(a, err, cap);
}

void px_atomic_abort(px_atomic_file *a) {
    if (a->f) fclose(a->f);
    a->f = NULL;
    if (a->tmp[0]) unlink(a->tmp);
    a->tmp[0] = '\0';
    px_temp_forget(a->temp_slot);
    a->temp_slot = -1;
}

int px_check_writable(const char *path, char *err, size_t cap) {
    char dir[4096];
    struct stat st;
    if (px_is_char_device(path)) {
        if (access(path, W_OK) == 0) return 0;
        snprintf(err, cap, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    if (px_output_kind_ok("output", path, err, cap)) return -1;
    folder_of(path, dir, sizeof dir);
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
        snprintf(err, cap, "cannot write %s: folder '%s' does not exist", path, dir);
        return -1;
    }
    if (access(dir, W_OK)) {
        snprintf(err, cap, "cannot write %s: folder '%s' is not writable", path, dir);
        return -1;
    }
    return 0;
}
