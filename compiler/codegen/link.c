/* Links a generated object with the runtime library using the system C
 * compiler driver. The runtime is located relative to the running parallaxc
 * so that both the build tree and an installed tree work. */
#include "emit.h"

#include <errno.h>
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

int px_link_program(const char *obj_path, const char *out_path, px_diag *d) {
    char dir[PATH_MAX], main_lib[PATH_MAX + 32], runtime[PATH_MAX + 32];
    if (find_runtime(dir, sizeof dir, d)) return -1;
    snprintf(main_lib, sizeof main_lib, "%s/libpx_main.a", dir);
    snprintf(runtime, sizeof runtime, "%s/libpx_runtime.a", dir);
    const char *cc = getenv("PX_CC");
    char libs[] = PX_RUNTIME_LINK_LIBS; /* space-separated, from the build */
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)(cc && *cc ? cc : "cc");
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
