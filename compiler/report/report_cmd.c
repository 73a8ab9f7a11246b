#include "report_cmd.h"
#include "report_html.h"
#include "run_read.h"

#include "file_atomic.h"
#include "out_paths.h"

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

/* Writes the page as every output is written (common/file_atomic.h): a
 * temporary renamed over the file, so that a failed write leaves nothing
 * half written, or a device written in place. */
static int write_atomically(const char *path, const px_run *run, const char *dir, px_diag *d) {
    px_atomic_file a;
    char err[4400];
    /* Never over a file the report was made from (common/out_paths.h). */
    px_named_path out = {"-o", path}, ins[PX_RF_COUNT];
    char names[PX_RF_COUNT][64];
    int n = 0;
    for (int f = 0; f < PX_RF_COUNT; f++) {
        if (!run->found[f]) continue;
        snprintf(names[n], sizeof names[n], "the run's %s", px_run_file_default((px_run_file)f));
        ins[n] = (px_named_path){names[n], run->path[f]};
        n++;
    }
    if (px_find_input_clash(&out, 1, ins, n, err, sizeof err))
        return px_error(d, "report: %s", err);
    if (px_atomic_open(&a, path, err, sizeof err)) return px_error(d, "report: -o: %s", err);
    if (px_report_write_html(a.f, run, dir) != 0) {
        px_atomic_abort(&a);
        return px_error(d, "report: cannot write %s: %s", path, strerror(errno));
    }
    if (px_atomic_commit(&a, err, sizeof err)) return px_error(d, "report: %s", err);
    return 0;
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
