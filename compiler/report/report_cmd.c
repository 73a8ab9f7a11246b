#include "report_cmd.h"
#include "report_html.h"
#include "run_read.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char px_report_help[] =
    "usage: parallaxc report RUN_DIR [-o REPORT.html]\n"
    "\n"
    "Writes one self-contained HTML page (inline SVG, no script, nothing fetched) about\n"
    "a training run: the loss and validation curves, other metrics, the learning rate,\n"
    "samples/s, the bytes each rank sent and received per step by kind against the\n"
    "compiler's prediction, communication hidden behind compute and exposed, memory\n"
    "per rank predicted and measured, and time per rank and thread from the trace.\n"
    "\n"
    "RUN_DIR is what the program's --run-dir DIR wrote (add --trace DIR/trace.json for\n"
    "the timeline), or a folder holding losses.csv, eval.csv, stats.json and trace.json\n"
    "written with --losses, --eval-log, --stats and --trace. Charts whose files are\n"
    "missing say so.\n"
    "\n"
    "  -o, --output FILE   the page to write (default RUN_DIR/report.html; '-': standard\n"
    "                      output); written to a temporary file and renamed into place\n"
    "  --help              this text\n";

typedef struct report_args {
    const char *dir, *output;
    int help;
} report_args;

static int parse(int argc, char **argv, report_args *a, px_diag *d) {
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            a->help = 1;
            return 0;
        }
        if (strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return px_error(d, "report: %s expects a file", arg);
            if (a->output) return px_error(d, "report: %s is given more than once", arg);
            a->output = argv[++i];
        } else if (strncmp(arg, "--output=", 9) == 0) {
            if (a->output) return px_error(d, "report: --output is given more than once");
            if (!arg[9]) return px_error(d, "report: --output expects a file");
            a->output = arg + 9;
        } else if (arg[0] == '-' && arg[1]) {
            return px_error(d, "report: unknown option '%s'", arg);
        } else {
            if (a->dir)
                return px_error(d, "report: two run directories given: '%s' and '%s'", a->dir, arg);
            if (!arg[0]) return px_error(d, "report: empty run directory name");
            a->dir = arg;
        }
    }
    if (!a->dir) return px_error(d, "report: no run directory given (parallaxc report RUN_DIR)");
    return 0;
}

/* Writes the page to path through a temporary file in the same folder,
 * renamed into place, so that a failed write leaves nothing half written. */
static int write_atomically(const char *path, const px_run *run, const char *dir, px_diag *d) {
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return px_error(d, "report: -o %s is a directory: name the .html file to write", path);
        /* Never replace a file the report is made from. */
        for (int f = 0; f < PX_RF_COUNT; f++) {
            struct stat in;
            if (run->found[f] && stat(run->path[f], &in) == 0 && in.st_dev == st.st_dev &&
                in.st_ino == st.st_ino)
                return px_error(d, "report: -o %s is the run's %s, which the report reads", path,
                                px_run_file_default((px_run_file)f));
        }
    }
    char *copy = strdup(path);
    if (!copy) return px_error(d, "out of memory");
    const char *folder = dirname(copy);
    size_t n = strlen(folder) + 32;
    char *tmp = malloc(n);
    if (!tmp) {
        free(copy);
        return px_error(d, "out of memory");
    }
    snprintf(tmp, n, "%s/.report.tmp.XXXXXX", folder);
    free(copy);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int rc = px_error(d, "report: cannot write %s: %s", path, strerror(errno));
        free(tmp);
        return rc;
    }
    /* mkstemp makes the file 0600; a report is as readable as any new file. */
    mode_t mask = umask(0);
    umask(mask);
    int rc = fchmod(fd, 0666 & ~mask);
    FILE *f = rc == 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        close(fd);
        rc = -1;
    } else {
        rc = px_report_write_html(f, run, dir);
        if (fclose(f) != 0) rc = -1;
    }
    if (rc == 0 && rename(tmp, path) != 0) rc = -1;
    if (rc != 0) {
        px_error(d, "report: cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

int px_report_command(int argc, char **argv, px_diag *d) {
    report_args a;
    if (parse(argc, argv, &a, d) != 0) return PX_REPORT_USAGE;
    if (a.help) {
        fputs(px_report_help, stdout);
        return PX_REPORT_OK;
    }
    struct stat st;
    if (stat(a.dir, &st) != 0) {
        px_error(d, "report: cannot open run directory '%s': %s", a.dir, strerror(errno));
        return PX_REPORT_USAGE;
    }
    px_run run;
    if (px_run_read(a.dir, &run, d) != 0) return PX_REPORT_FAILED;
    int rc;
    if (a.output && strcmp(a.output, "-") == 0) {
        rc = px_report_write_html(stdout, &run, a.dir);
        if (rc != 0) px_error(d, "report: error writing standard output: %s", strerror(errno));
    } else if (a.output) {
        rc = write_atomically(a.output, &run, a.dir, d);
    } else {
        size_t n = strlen(a.dir) + sizeof "/report.html";
        char *out = malloc(n);
        if (!out) {
            px_run_free(&run);
            px_error(d, "out of memory");
            return PX_REPORT_FAILED;
        }
        snprintf(out, n, "%s/report.html", a.dir);
        rc = write_atomically(out, &run, a.dir, d);
        free(out);
    }
    px_run_free(&run);
    return rc == 0 ? PX_REPORT_OK : PX_REPORT_FAILED;
}
