/* Command-line parsing for parallaxc. Parsing only checks and stores: it never
 * prints or exits; main.c reports the message and chooses the exit status. */
#ifndef PX_CLI_H
#define PX_CLI_H

#include "px_enums.h"
#include "train.h"

#include <stddef.h>

#define PX_VERSION_STRING "0.1.0"

/* Exit statuses of parallaxc. */
enum { PX_EXIT_OK = 0, PX_EXIT_FAILURE = 1, PX_EXIT_USAGE = 2 };

typedef enum px_command {
    PX_CMD_NONE = 0, /* bare `parallaxc --help` / `--version` */
    PX_CMD_COMPILE,
    PX_CMD_INSPECT,
} px_command;

typedef enum px_format {
    PX_FORMAT_TEXT = 0,
    PX_FORMAT_DOT,
    PX_FORMAT_JSON,
    PX_FORMAT_ONNX,
} px_format;

typedef enum px_stage {
    PX_STAGE_IMPORTED = 0,
    PX_STAGE_FOLDED,
    PX_STAGE_TRAINED,  /* forward + backward + update nodes */
    PX_STAGE_PARALLEL, /* + communication (AllReduce buckets, PS pull/push) */
} px_stage;

typedef struct px_cli {
    px_command cmd;
    int help;    /* --help given: print the help of cmd and exit 0 */
    int version; /* --version given */

    const char *model;  /* MODEL.onnx (borrowed from argv) */
    const char *output; /* -o: PROGRAM for compile, FILE ("-" = stdout) for inspect */

    /* Shape flags (both commands). Names point into argv or into strings owned
     * by this struct; free with px_cli_free. */
    px_bindings bindings;
    int any_shape_flag;

    /* --freeze NAME[,NAME...] (both commands), split at commas. */
    int n_freeze;
    char **freeze;

    /* inspect */
    int ranks;          /* >= 1 */
    int ranks_per_node; /* inspect: 0 = all ranks on one node */
    px_stage stage;
    int stage_given;
    px_format format;

    /* compile */
    const char *loss; /* NULL: the only scalar float output */
    px_optim_kind optimizer;
    double lr, momentum, beta1, beta2, epsilon, weight_decay, alpha;
    int nesterov;
    /* --no-decay PATTERN[,PATTERN...]: variables (fnmatch globs) without weight decay */
    int n_no_decay;
    char **no_decay;
    double bucket_mb; /* AllReduce bucket size in MiB */
    px_comm_mode comm;
    int partitions;    /* 0 = auto */
    int tp;            /* --tp K: ranks per tensor-parallel group (1: none) */
    int pp;            /* --pp S: pipeline stages (1: none) */
    int micro_batches; /* --micro-batches M (with --pp) */
    int infer;
    int show_graph; /* inspect --graph: list the graph after the summary */
    /* --outputs NAME[,NAME...] (with --infer): the outputs to compute. */
    int n_outputs;
    char **outputs;
    const char *emit_graph;
    px_format emit_format; /* from emit_graph's extension */
    /* --sparsity, --sparsity-pattern, --sparsity-init, --sparsity-seed,
     * --sparse-kernels (both commands); the target names are owned here. */
    px_sparsity_config sparsity;
} px_cli;

/* Parses argv. Returns 0, or -1 with a one-line message in err naming the
 * flag or value at fault (the caller prints it and exits PX_EXIT_USAGE).
 * Always call px_cli_free afterwards. Does not touch the file system. */
int px_cli_parse(int argc, char **argv, px_cli *cli, char *err, size_t err_cap);
void px_cli_free(px_cli *cli);

/* Help texts (for stdout on --help; the top-level one also after usage errors). */
const char *px_cli_help(px_command cmd);

const char *px_stage_name(px_stage s);
const char *px_format_name(px_format f);

/* The training configuration the flags describe (shared by compile and
 * inspect). */
void px_train_config_from_cli(const px_cli *cli, px_train_config *cfg);

#endif
