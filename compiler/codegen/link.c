/* Links a generated object with the runtime library using the system C
 * compiler driver. The runtime is located relative to the running parallaxc
 * so that both the build tree and an installed tree work. */
#include "emit.h"

#include "file_atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#ifndef PX_RUNTIME_REL_BUILD
#error "PX_RUNTIME_REL_BUILD must be defined by the build"
#endif

/* Finds the folder holding libpx_main.a and libpx_runtime.a. */
static int find_runtime(char *out, size_t cap, px_diag *d) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return px_error(d, "cannot locate the running parallaxc: %s", strerror(errno));
    exe[n] = '\0';
    const char *dir = dirname(exe);
    const char *candidates[] = {PX_RUNTIME_REL_BUILD, PX_RUNTIME_REL_INSTALL};
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
        struct stat st;
        char probe[PATH_MAX + 32];
        snprintf(out, cap, "%s/%s", dir, candidates[i]);
        snprintf(probe, sizeof probe, "%s/libpx_runtime.a", out);
        if (stat(probe, &st) == 0) return 0;
    }
    return px_error(d,
                    "runtime library not found next to parallaxc (looked for libpx_runtime.a in "
                    "%s/%s and %s/%s)",
                    dir, PX_RUNTIME_REL_BUILD, dir, PX_RUNTIME_REL_INSTALL);
}

static int run_command(char *const argv[], px_diag *d) {
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
    if (rc) return px_error(d, "cannot run '%s': %s", argv[0], strerror(rc));
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return px_error(d, "waiting for '%s': %s", argv[0], strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        px_error(d, "the linker '%s' failed (status %d)", argv[0],
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return -1;
    }
    return 0;
}

int px_runtime_input_files(px_path_list *l, px_diag *d) {
    char dir[PATH_MAX], lib[PATH_MAX + 32];
    if (find_runtime(dir, sizeof dir, d)) return -1;
    static const char *const libs[] = {"libpx_main.a", "libpx_runtime.a"};
    for (int i = 0; i < 2; i++) {
        char real[PATH_MAX];
        snprintf(lib, sizeof lib, "%s/%s", dir, libs[i]);
        if (px_path_list_add(l, "the runtime library", realpath(lib, real) ? real : lib))
            return px_error(d, "out of memory listing the runtime");
    }
    return 0;
}

/* Runs the linker: out_path from obj_path and the runtime. */
static int link_to(const char *obj_path, const char *out_path, px_diag *d) {
    char dir[PATH_MAX], main_lib[PATH_MAX + 32], runtime[PATH_MAX + 32];
    if (find_runtime(dir, sizeof dir, d)) return -1;
    snprintf(main_lib, sizeof main_lib, "%s/libpx_main.a", dir);
    snprintf(runtime, sizeof runtime, "%s/libpx_runtime.a", dir);
    const char *cc = getenv("PX_CC");
    char libs[] = PX_RUNTIME_LINK_LIBS; /* space-separated, from the build */
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)(cc && *cc ? cc : "cc");
#ifdef PX_LLD_PATH
    /* The same program, linked by lld when the build found it and it is
     * still there: GNU ld spends seconds on a large model's tables. */
    if (access(PX_LLD_PATH, X_OK) == 0) argv[argc++] = "-fuse-ld=lld";
#endif
    argv[argc++] = "-o";
    argv[argc++] = (char *)out_path;
    argv[argc++] = (char *)obj_path;
    argv[argc++] = main_lib;
    argv[argc++] = runtime;
    for (char *tok = strtok(libs, " "); tok && argc < 60; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;
    return run_command(argv, d);
}

/* A device (-o /dev/null): the program is linked next to the object, then
 * its bytes are written to the device, whose write errors are reported. */
static int link_to_device(const char *obj_path, px_atomic_file *a, px_diag *d) {
    char exe[PATH_MAX + 8], err[4400];
    snprintf(exe, sizeof exe, "%s.exe", obj_path);
    int rc = link_to(obj_path, exe, d);
    FILE *in = rc ? NULL : fopen(exe, "rb");
    if (!rc && !in) rc = px_error(d, "cannot read the linked program %s: %s", exe, strerror(errno));
    char buf[65536];
    size_t n;
    while (in && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, a->f) != n) break;
    if (in) fclose(in);
    unlink(exe);
    if (rc) {
        px_atomic_abort(a);
        return -1;
    }
    if (px_atomic_commit(a, err, sizeof err)) return px_error(d, "-o: %s", err);
    return 0;
}

int px_link_program(const char *obj_path, const char *out_path, px_diag *d) {
    /* The output policy (common/file_atomic.h): a temporary next to the
     * program, renamed over it once linked, or a device written in place. */
    px_atomic_file a;
    char err[4400];
    if (px_atomic_open(&a, out_path, err, sizeof err)) return px_error(d, "-o: %s", err);
    if (a.device) return link_to_device(obj_path, &a, d);
    if (link_to(obj_path, a.tmp, d)) {
        px_atomic_abort(&a);
        return -1;
    }
    /* The linker may have written the temporary in place (mkstemp's 0600)
     * or made a new file; either way the program is executable, and on disk
     * before the rename. */
    mode_t mask = umask(0);
    umask(mask);
    int fd = open(a.tmp, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fchmod(fd, 0777 & ~mask) != 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        px_atomic_abort(&a);
        return px_error(d, "-o: cannot write %s: %s", out_path, strerror(e));
    }
    close(fd);
    if (px_atomic_commit(&a, err, sizeof err)) return px_error(d, "-o: %s", err);
    return 0;
}
