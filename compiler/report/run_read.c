#include "run_read.h"
#include "file_map.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const defaults[PX_RF_COUNT] = {
    [PX_RF_RUN] = "run.json",     [PX_RF_COMPILE] = "compile.json",  [PX_RF_LOSSES] = "losses.csv",
    [PX_RF_EVAL] = "eval.csv",    [PX_RF_PROGRESS] = "progress.csv", [PX_RF_STATS] = "stats.json",
    [PX_RF_TRACE] = "trace.json",
};
static const char *const keys[PX_RF_COUNT] = {
    [PX_RF_RUN] = "run",     [PX_RF_COMPILE] = "compile",   [PX_RF_LOSSES] = "losses",
    [PX_RF_EVAL] = "eval",   [PX_RF_PROGRESS] = "progress", [PX_RF_STATS] = "stats",
    [PX_RF_TRACE] = "trace",
};

const char *px_run_file_default(px_run_file f) {
    return defaults[f];
}

const char *px_run_file_key(px_run_file f) {
    return keys[f];
}

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* Where file f is: run.json's "files" entry (a name inside DIR, another
 * path as given; null: not written), else its usual name inside DIR.
 * NULL with *none set when run.json says it was not written. */
static char *locate(const char *dir, const px_json *files, px_run_file f, int *none) {
    const px_json *entry = px_json_get(files, keys[f]);
    *none = 0;
    if (entry && entry->kind == PX_JSON_NULL) {
        *none = 1;
        return NULL;
    }
    if (entry && entry->kind == PX_JSON_STRING && entry->string[0])
        return strchr(entry->string, '/') ? strdup(entry->string) : join(dir, entry->string);
    return join(dir, defaults[f]);
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Reads file f (at run->path[f]) into run. */
static int read_one(px_run *run, px_run_file f, px_diag *d) {
    px_file_view v;
    char err[512];
    if (px_file_map(run->path[f], &v, err, sizeof err) != 0) return px_error(d, "%s", err);
    int rc = 0;
    switch (f) {
    case PX_RF_RUN:
    case PX_RF_COMPILE:
    case PX_RF_STATS: {
        px_json *doc = px_json_parse(v.data, v.len, err, sizeof err);
        if (!doc || doc->kind != PX_JSON_OBJECT) {
            rc = px_error(d, "%s: %s", run->path[f], doc ? "not a JSON object" : err);
            px_json_free(doc);
            break;
        }
        *(f == PX_RF_RUN ? &run->run : f == PX_RF_COMPILE ? &run->compile : &run->stats) = doc;
        break;
    }
    case PX_RF_LOSSES:
    case PX_RF_EVAL:
    case PX_RF_PROGRESS: {
        px_csv *c = f == PX_RF_LOSSES ? &run->losses
                    : f == PX_RF_EVAL ? &run->eval
                                      : &run->progress;
        if (px_csv_parse(v.data, v.len, c, err, sizeof err) != 0)
            rc = px_error(d, "%s: %s", run->path[f], err);
        else if (px_csv_col(c, "step") < 0)
            rc = px_error(d, "%s: no 'step' column", run->path[f]);
        break;
    }
    case PX_RF_TRACE:
        if (px_trace_summarize(v.data, v.len, &run->trace, err, sizeof err) != 0)
            rc = px_error(d, "%s: %s", run->path[f], err);
        break;
    case PX_RF_COUNT: break;
    }
    px_file_unmap(&v);
    if (rc == 0) run->found[f] = 1;
    return rc;
}

int px_run_read(const char *dir, px_run *run, px_diag *d) {
    memset(run, 0, sizeof *run);
    struct stat st;
    if (stat(dir, &st) != 0)
        return px_error(d, "cannot open run directory '%s': %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return px_error(d, "'%s' is not a directory: give the folder of --run-dir", dir);
    if (!(run->path[PX_RF_RUN] = join(dir, defaults[PX_RF_RUN]))) goto oom;
    if (exists(run->path[PX_RF_RUN]) && read_one(run, PX_RF_RUN, d) != 0) goto bad;
    const px_json *files = px_json_get_kind(run->run, "files", PX_JSON_OBJECT);
    int any = run->found[PX_RF_RUN];
    for (int f = PX_RF_RUN + 1; f < PX_RF_COUNT; f++) {
        int none;
        run->path[f] = locate(dir, files, (px_run_file)f, &none);
        if (none) continue;
        if (!run->path[f]) goto oom;
        if (!exists(run->path[f])) continue;
        if (read_one(run, (px_run_file)f, d) != 0) goto bad;
        any = 1;
    }
    if (!any) {
        px_error(d, "'%s' holds none of the files of a run (run.json, losses.csv, stats.json, ...)",
                 dir);
        px_note(d,
                "write them with the program's --run-dir %s (and --trace %s/trace.json for "
                "the timeline)",
                dir, dir);
        goto bad;
    }
    return 0;
oom:
    px_error(d, "out of memory");
bad:
    px_run_free(run);
    return -1;
}

void px_run_free(px_run *run) {
    for (int f = 0; f < PX_RF_COUNT; f++) free(run->path[f]);
    px_json_free(run->run);
    px_json_free(run->compile);
    px_json_free(run->stats);
    px_csv_free(&run->losses);
    px_csv_free(&run->eval);
    px_csv_free(&run->progress);
    px_trace_summary_free(&run->trace);
    memset(run, 0, sizeof *run);
}
