/* parallaxc: the only place that prints diagnostics and chooses exit
 * statuses. 0 = success, 1 = the model (or an output file) is at fault,
 * 2 = the command line is at fault. */
#include "cli.h"
#include "command_files.h"
#include "compile_cmd.h"
#include "data_main.h"
#include "graph_release.h"
#include "heap_pages.h"
#include "inspect.h"
#include "plan_cmd.h"
#include "report_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Checks up front that MODEL names a readable file, so a typo in the path is
 * a usage error (exit 2) rather than a model error. */
static int check_model_file(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "parallaxc: cannot open model '%s': %s\n", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        fprintf(stderr, "parallaxc: model '%s' is a directory, not an .onnx file\n", path);
        return -1;
    }
    /* A FIFO or device would block the fopen below (and the import). */
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "parallaxc: model '%s' is not a regular file\n", path);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "parallaxc: cannot open model '%s': %s\n", path, strerror(errno));
        return -1;
    }
    fclose(f);
    return 0;
}

/* A command with its own parser (argv[1] names it): its exit status, its
 * messages on stderr. */
static int own_parser(int (*command)(int, char **, px_diag *), int argc, char **argv,
                      px_diag *diag) {
    px_diag_init(diag);
    int status = command(argc - 1, argv + 1, diag);
    fputs(diag->text, stderr);
    if (status == PX_EXIT_USAGE) fprintf(stderr, "Try 'parallaxc %s --help'.\n", argv[1]);
    return status;
}

int main(int argc, char **argv) {
    static px_cli cli;
    static px_diag diag;
    char err[1024];
    int status = PX_EXIT_OK;

    _Static_assert((int)PX_REPORT_OK == PX_EXIT_OK && (int)PX_REPORT_FAILED == PX_EXIT_FAILURE &&
                       (int)PX_REPORT_USAGE == PX_EXIT_USAGE,
                   "report's exit statuses are parallaxc's");
    /* `report` reads a run directory, not a model, and `plan` takes a
     * cluster's description besides compile's flags: each parses its own. */
    if (argc >= 2 && strcmp(argv[1], "report") == 0)
        return own_parser(px_report_command, argc, argv, &diag);
    if (argc >= 2 && strcmp(argv[1], "plan") == 0) {
        status = own_parser(px_plan_command, argc, argv, &diag);
        goto done;
    }
    /* `parallaxc data` converts datasets: its own flags and help
     * (tools/data), no model. */
    if (argc > 1 && !strcmp(argv[1], "data")) return px_data_main(argc - 1, argv + 1);
    if (px_cli_parse(argc, argv, &cli, err, sizeof err) != 0) {
        fprintf(stderr, "parallaxc: %s\n", err);
        fprintf(stderr, "Try 'parallaxc%s%s --help'.\n", cli.cmd == PX_CMD_NONE ? "" : " ",
                cli.cmd == PX_CMD_COMPILE   ? "compile"
                : cli.cmd == PX_CMD_INSPECT ? "inspect"
                                            : "");
        status = PX_EXIT_USAGE;
        goto done;
    }
    if (cli.version) {
        printf("parallaxc %s\n", PX_VERSION_STRING);
        goto done;
    }
    if (cli.help) {
        fputs(px_cli_help(cli.cmd), stdout);
        goto done;
    }
    if (check_model_file(cli.model) != 0) {
        status = PX_EXIT_USAGE;
        goto done;
    }

    /* Large graphs build far faster on huge pages (compiler/heap_pages.c). */
    px_heap_use_huge_pages();
    /* The process ends with the command: its graph is left to the exit
     * (compiler/graph_release.c). */
    px_graph_release_at_exit();
    px_diag_init(&diag);
    /* Outputs never replace an input or a device (common/out_paths.h). */
    if (px_check_command_files(&cli, &diag) != 0) {
        fputs(diag.text, stderr);
        status = PX_EXIT_USAGE;
        goto done;
    }
    switch (cli.cmd) {
    case PX_CMD_COMPILE:
        if (px_compile_command(&cli, &diag) != 0) {
            fputs(diag.text, stderr);
            if (!px_diag_failed(&diag)) fputs("parallaxc: compile failed\n", stderr);
            status = PX_EXIT_FAILURE;
        } else if (!px_diag_failed(&diag)) {
            fputs(diag.text, stderr); /* the passes' warnings (a rebound constant) */
        }
        break;
    case PX_CMD_INSPECT:
        if (px_inspect(&cli, &diag) != 0) {
            fputs(diag.text, stderr);
            if (!px_diag_failed(&diag)) fputs("parallaxc: inspect failed\n", stderr);
            status = PX_EXIT_FAILURE;
        }
        break;
    case PX_CMD_NONE: break;
    }

done:
    if (fflush(stdout) != 0 && status == PX_EXIT_OK) {
        fprintf(stderr, "parallaxc: error writing standard output: %s\n", strerror(errno));
        status = PX_EXIT_FAILURE;
    }
    px_cli_free(&cli);
    return status;
}
