/* _GNU_SOURCE (mkdtemp, realpath) comes from the build */
#include "plan_calibrate.h"

#include "json_read.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* A measurement shorter than this is repeated with more steps: timer and
 * scheduler noise would dominate it. */
#define MIN_MEASURED_SECONDS 0.5
#define PROBE_STEPS 12
#define MAX_STEPS 5000
/* Timed runs of that length; the median is kept. On a machine other work
 * shares, one run can land on a busy moment (seen: a cached step 3.4x the
 * next minute's), and the cache would keep it. */
#define TIMED_RUNS 3

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

static uint64_t key_hash(const char *model, const char *data_dir, char *const *flags, int n_flags,
                         int threads) {
    char path[PATH_MAX];
    struct stat st = {0};
    uint64_t h = 14695981039346656037ull;
    const char *m = realpath(model, path) ? path : model;
    h = fnv1a(h, m, strlen(m) + 1);
    if (stat(model, &st) == 0) {
        h = fnv1a(h, &st.st_size, sizeof st.st_size);
        h = fnv1a(h, &st.st_mtim, sizeof st.st_mtim);
    }
    const char *dd = realpath(data_dir, path) ? path : data_dir;
    h = fnv1a(h, dd, strlen(dd) + 1);
    for (int i = 0; i < n_flags; i++) h = fnv1a(h, flags[i], strlen(flags[i]) + 1);
    return fnv1a(h, &threads, sizeof threads);
}

static int cache_file(uint64_t key, char *out, size_t cap) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[PATH_MAX];
    if (xdg && xdg[0])
        snprintf(dir, sizeof dir, "%s/parallax", xdg);
    else if (home && home[0])
        snprintf(dir, sizeof dir, "%s/.cache/parallax", home);
    else
        return -1;
    /* best effort: mkdir -p of the last two levels */
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    if (slash) *slash = '\0', mkdir(parent, 0755);
    mkdir(dir, 0755);
    snprintf(out, cap, "%.900s/plan-%016" PRIx64 ".json", dir, key);
    return 0;
}

/* The whole file, NUL-terminated (malloc'd), or NULL. */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            char *nb = realloc(buf, cap = 2 * cap + 8192);
            if (!nb) break;
            buf = nb;
        }
        size_t got = fread(buf + n, 1, 4096, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    if (buf) buf[n] = '\0', *len = n;
    return buf;
}

/* A number of the JSON object in path, or -1. */
static double json_number(const char *path, const char *key) {
    size_t len = 0;
    char *text = read_file(path, &len), err[128];
    if (!text) return -1;
    px_json *v = px_json_parse(text, len, err, sizeof err);
    double x = v ? px_json_number_or(v, key, -1) : -1;
    px_json_free(v);
    free(text);
    return x;
}

/* Runs argv with stdout and stderr appended to log; 0 when it exits 0. */
static int run_logged(char *const argv[], const char *log, px_diag *d) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) return px_error(d, "plan: cannot run '%s': %s", argv[0], strerror(rc));
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return px_error(d, "plan: waiting for '%s': %s", argv[0], strerror(errno));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    size_t len = 0;
    char *text = read_file(log, &len);
    const char *tail = text ? (len > 1200 ? text + len - 1200 : text) : "";
    px_error(d, "plan: the calibration's %s failed (status %d):\n%s", argv[1] ? argv[1] : argv[0],
             WIFEXITED(status) ? WEXITSTATUS(status) : -1, tail);
    free(text);
    return -1;
}

/* Compiles the model into dir/prog and times it; *seconds per step. */
static int measure(const char *model, const char *data_dir, char *const *flags, int n_flags,
                   int threads, const char *dir, double *seconds, px_diag *d) {
    char exe[PATH_MAX], prog[PATH_MAX + 16], log[PATH_MAX + 16], stats[PATH_MAX + 16];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return px_error(d, "plan: cannot locate the running parallaxc: %s", strerror(errno));
    exe[n] = '\0';
    snprintf(prog, sizeof prog, "%s/prog", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    snprintf(stats, sizeof stats, "%s/stats.json", dir);
    char **argv = calloc((size_t)n_flags + 16, sizeof *argv);
    if (!argv) return px_error(d, "plan: out of memory");
    int a = 0, rc = -1;
    argv[a++] = exe;
    argv[a++] = "compile";
    argv[a++] = (char *)model;
    argv[a++] = "-o";
    argv[a++] = prog;
    for (int i = 0; i < n_flags; i++) argv[a++] = flags[i];
    argv[a] = NULL;
    if (run_logged(argv, log, d) != 0) goto done;
    char steps_text[32], threads_text[32];
    snprintf(threads_text, sizeof threads_text, "%d", threads);
    double runs[TIMED_RUNS];
    int timed = 0;
    for (int steps = PROBE_STEPS;;) {
        snprintf(steps_text, sizeof steps_text, "%d", steps);
        char *run[] = {prog, "--data",    (char *)data_dir, "--steps", steps_text, "--log-every",
                       "0",  "--threads", threads_text,     "--stats", stats,      NULL};
        if (run_logged(run, log, d) != 0) goto done;
        double counted = json_number(stats, "counted_seconds");
        double k = json_number(stats, "counted_steps");
        if (!(counted > 0) || !(k >= 1)) {
            px_error(d, "plan: the calibration run's --stats (%s) has no counted steps", stats);
            goto done;
        }
        if (counted >= MIN_MEASURED_SECONDS || steps >= MAX_STEPS) {
            runs[timed++] = counted / k;
            if (timed == TIMED_RUNS) break;
            continue;
        }
        int more = (int)(steps * 1.5 * MIN_MEASURED_SECONDS / counted) + 1;
        steps = more < MAX_STEPS ? more : MAX_STEPS;
    }
    /* the median of the timed runs */
    for (int i = 1; i < timed; i++)
        for (int j = i; j > 0 && runs[j] < runs[j - 1]; j--) {
            double t = runs[j];
            runs[j] = runs[j - 1];
            runs[j - 1] = t;
        }
    *seconds = runs[timed / 2];
    rc = 0;
done:
    free(argv);
    return rc;
}

/* The temporary folder and the files in it (the program, its log and
 * stats, whatever compile wrote next to the program). */
static void remove_tree(const char *dir) {
    DIR *dh = opendir(dir);
    if (dh) {
        struct dirent *e;
        char path[PATH_MAX + 300];
        while ((e = readdir(dh)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                unlink(path);
            }
        closedir(dh);
    }
    rmdir(dir);
}

int px_plan_calibrate(const char *model, const char *data_dir, char *const *flags, int n_flags,
                      int threads, int recalibrate, px_calibration *out, px_diag *d) {
    memset(out, 0, sizeof *out);
    out->threads = threads;
    uint64_t key = key_hash(model, data_dir, flags, n_flags, threads);
    int have_cache = cache_file(key, out->cache_path, sizeof out->cache_path) == 0;
    if (have_cache && !recalibrate) {
        double s = json_number(out->cache_path, "step_seconds");
        double t = json_number(out->cache_path, "threads");
        if (s > 0 && t == threads) {
            out->step_seconds = s;
            out->cached = 1;
            return 0;
        }
    }
    char dir[] = "/tmp/parallax-plan.XXXXXX";
    if (!mkdtemp(dir))
        return px_error(d, "plan: cannot make a temporary folder: %s", strerror(errno));
    int rc = measure(model, data_dir, flags, n_flags, threads, dir, &out->step_seconds, d);
    remove_tree(dir);
    if (rc != 0) return -1;
    if (have_cache) {
        FILE *f = fopen(out->cache_path, "w");
        if (f) {
            fprintf(f, "{\"threads\": %d, \"step_seconds\": %.9g}\n", threads, out->step_seconds);
            if (fclose(f) != 0) remove(out->cache_path);
        } else {
            out->cache_path[0] = '\0';
        }
    }
    return 0;
}
