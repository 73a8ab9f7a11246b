/* --run-dir DIR: one folder with everything a report of the run needs
 * (docs/training.md, "Run directory", defines the layout for its readers:
 * `parallaxc report`, parallax.read_run). Rank 0 writes it. */
#ifndef PX_RUN_DIR_H
#define PX_RUN_DIR_H

#include "px_program.h"
#include "px_train.h"

#include <stddef.h>
#include <stdint.h>

/* The files, in run_files[] order of px_train_flags. */
enum {
    PX_RUN_CONFIG = 0, /* run.json */
    PX_RUN_COMPILE,    /* compile.json */
    PX_RUN_LOSSES,     /* losses.csv (--losses) */
    PX_RUN_EVAL,       /* eval.csv (--eval-log), with --eval-data */
    PX_RUN_PROGRESS,   /* progress.csv */
    PX_RUN_STATS,      /* stats.json (--stats) */
    PX_RUN_FILES
};
const char *px_run_file_name(int file);

/* Creates DIR and any missing parents (mode 0777 less the umask). 0, or -1
 * with a message naming --run-dir. */
int px_run_dir_create(const char *dir, char *err, size_t cap);

/* run.json: the run's configuration and outcome, one JSON object. */
typedef struct px_run_config {
    const char *status; /* "running", "finished", "stopped_early" */
    int argc;
    char **argv;
    const px_program_desc *p;
    int ranks, threads_per_rank;
    int64_t batch_per_rank, accumulate, global_batch; /* global: samples per update */
    int64_t samples, steps_per_epoch, first_step, last_step, epochs;
    int64_t steps_done; /* the last step trained so far (0: none) */
    double lr;          /* the base learning rate (--lr or the compiled one) */
    const char *lr_schedule;
    int64_t lr_warmup;
    double clip_grad_norm; /* 0: off */
    int shuffle;
    uint64_t shuffle_seed, dropout_seed;
    const char *resume; /* NULL: a fresh run */
    /* validation (eval_data NULL: none) */
    const char *eval_data;
    int64_t eval_every; /* 0: not by steps */
    int eval_every_epoch;
    const char *eval_mode; /* "eval" or "train" */
    int64_t early_stop;    /* patience in validations; 0: off */
    const char *metric;    /* what early stopping and --keep-best compare */
    int metric_higher_is_better;
    int has_best;
    int64_t best_step;
    double best_value;
    const char *keep_best; /* NULL: none */
    /* where each file went: run_files, or the flag's own path */
    const char *files[PX_RUN_FILES];
    const char *trace, *save, *save_infer, *checkpoint;
    const px_comm_opts *comm; /* the synchronization mode (NULL: exact) */
    double started, finished; /* Unix time (finished 0: not yet) */
} px_run_config;

/* Writes path atomically; -1 with a message in err. */
int px_run_config_write(const char *path, const char *run_dir, const px_run_config *c, char *err,
                        size_t cap);
/* compile.json: p->compile_info as it is ("null" when the program has none). */
int px_run_compile_write(const char *path, const px_program_desc *p, char *err, size_t cap);

#endif
