/* Command line of a training program (design.md §3 "Generated program"). */
#ifndef PX_TRAIN_FLAGS_H
#define PX_TRAIN_FLAGS_H

#include "lr_schedule.h"
#include "out_paths.h"
#include "run_dir.h"
#include "px_train.h"
#include "sparse/dst.h"

#include <stdint.h>
#include <stdio.h>

/* --dropout-seed when none is given: runs are reproducible by default. */
#define PX_DEFAULT_DROPOUT_SEED 20190325ULL

typedef struct px_train_flags {
    const char *data;
    int64_t steps;  /* total steps (0: not given) */
    int64_t epochs; /* 0: not given; neither given: 1 epoch */
    int shuffle;
    uint64_t shuffle_seed;
    int64_t shuffle_buffer;       /* --shuffle-buffer N (-1: not given) */
    const char *partitions_cache; /* --partitions-cache FILE */
    int64_t log_every;            /* 0: quiet */
    const char *losses, *stats, *save, *checkpoint, *resume;
    const char *weights;      /* --weights: the model to read the initial weights from */
    int save_external;        /* --save-external: weights in OUT.onnx.data */
    int64_t checkpoint_every; /* 0: only at the end */
    int64_t warmup_steps;     /* -1: default */
    int dropout_seed_given;
    uint64_t dropout_seed;
    px_comm_opts comm;
    /* run-time training settings (no recompiling) */
    int lr_given; /* --lr */
    double lr;
    const char *lr_schedule;  /* --lr-schedule spec (NULL: constant) */
    px_lr_schedule schedule;  /* parsed, with --lr-warmup */
    double clip_grad_norm;    /* --clip-grad-norm (0: off) */
    const char *eval_data;    /* --eval-data DIR */
    int64_t eval_every;       /* --eval-every K (0: only after the last step) */
    const char *eval_log;     /* --eval-log FILE.csv */
    int eval_train_mode;      /* --eval-mode train (default eval: as model.eval()) */
    int eval_every_epoch;     /* --eval-every-epoch */
    int64_t early_stop;       /* --early-stop P: validations without improvement (0: off) */
    const char *metric;       /* --early-stop-metric NAME[:min|:max] as given (NULL: loss) */
    char *metric_name;        /* its NAME (malloc'd; NULL: the loss) */
    int metric_max;           /* 1: higher is better (:max) */
    int metric_dir_given;     /* :min or :max was given */
    const char *keep_best;    /* --keep-best OUT.onnx */
    const char *eval_metrics; /* --eval-metrics auc,logloss,accuracy */
    const char *eval_score;   /* --eval-score NAME[:logit|:prob] */
    const char *eval_label;   /* --eval-label NAME */
    const char *trace;        /* --trace FILE.json */
    int threads;              /* --threads N (0: not given, the default rule) */
    int64_t accumulate;       /* --accumulate K: micro-batches per update (default 1) */
    const char *save_infer;   /* --save-infer OUT.onnx */
    int n_outputs;            /* --outputs NAME[,NAME...], split (malloc'd) */
    char **outputs;
    /* --run-dir DIR: the files of run_dir.h inside it (malloc'd; NULL: no
     * run directory). --losses, --stats and --eval-log default to theirs. */
    const char *run_dir;
    char *run_files[PX_RUN_FILES];
    px_dst_opts dst; /* --dst, --dst-every, --dst-fraction, --dst-until */
    /* --wire, --wire-error-feedback, --sync-every, --local-sgd-after and
     * --staleness are in comm; --allow-mode-change: resume a checkpoint
     * written under other ones. */
    int allow_mode_change;
} px_train_flags;

enum { PX_FLAGS_OK = 0, PX_FLAGS_HELP = 1, PX_FLAGS_BAD = 2 };

/* Parses argv. Messages about bad flags go to `err` (NULL: silent, for the
 * ranks other than 0). Returns PX_FLAGS_OK, PX_FLAGS_HELP or PX_FLAGS_BAD. */
int px_train_flags_parse(int argc, char **argv, px_train_flags *f, FILE *err);

/* The files a run writes, named by their flags, into out (PX_TRAIN_OUTPUTS
 * entries; path NULL where not given): --checkpoint first, then --save,
 * --keep-best, --save-infer, the logs, the run directory's files and, with
 * save_external, the external data of the three models (OUT.onnx.data,
 * spelled out in data_names). The one list of the checks of out_paths.h.
 * Returns the count. */
#define PX_MODEL_OUTPUTS 3
#define PX_TRAIN_OUTPUTS (11 + PX_MODEL_OUTPUTS)
#define PX_PATH_NAME_MAX 4200
int px_train_outputs(
    const px_train_flags *f, int save_external, px_named_path *out,
    char data_names[PX_MODEL_OUTPUTS]
                   [PX_PATH_NAME_MAX]); /* Frees what px_train_flags_parse allocated. */
void px_train_flags_free(px_train_flags *f);
/* --help: every flag and what the compiled model expects. */
void px_train_usage(FILE *out, const char *argv0, const px_program_desc *p);

#endif
