#include "train_flags.h"

#include "data.h"
#include "eval_metrics.h"
#include "npy.h"
#include "out_paths.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Flags that take a value, in --help order. */
enum {
    F_DATA,
    F_STEPS,
    F_EPOCHS,
    F_SHUFFLE,
    F_SHUFFLE_BUFFER,
    F_LOG_EVERY,
    F_LOSSES,
    F_STATS,
    F_SAVE,
    F_CHECKPOINT,
    F_CHECKPOINT_EVERY,
    F_RESUME,
    F_WARMUP,
    F_DROPOUT_SEED,
    F_RANKS_PER_NODE,
    F_PARTITIONS,
    F_PARTITIONS_CACHE,
    F_STALL_TIMEOUT,
    F_WEIGHTS,
    F_LR,
    F_LR_SCHEDULE,
    F_LR_WARMUP,
    F_CLIP_GRAD_NORM,
    F_EVAL_DATA,
    F_EVAL_EVERY,
    F_EVAL_LOG,
    F_EVAL_METRICS,
    F_EVAL_SCORE,
    F_EVAL_LABEL,
    F_TRACE,
    F_THREADS,
    F_RUN_DIR,
    F_EVAL_MODE,
    F_EARLY_STOP,
    F_EARLY_STOP_METRIC,
    F_KEEP_BEST,
    F_DST,
    F_DST_EVERY,
    F_DST_FRACTION,
    F_DST_UNTIL,
    F_ACCUMULATE,
    F_SAVE_INFER,
    F_OUTPUTS,
    F_WIRE,
    F_SYNC_EVERY,
    F_LOCAL_SGD_AFTER,
    F_STALENESS,
    F_COUNT
};
static const char *const flag_names[F_COUNT] = {
    [F_DATA] = "--data",
    [F_STEPS] = "--steps",
    [F_EPOCHS] = "--epochs",
    [F_SHUFFLE] = "--shuffle",
    [F_SHUFFLE_BUFFER] = "--shuffle-buffer",
    [F_LOG_EVERY] = "--log-every",
    [F_LOSSES] = "--losses",
    [F_STATS] = "--stats",
    [F_SAVE] = "--save",
    [F_CHECKPOINT] = "--checkpoint",
    [F_CHECKPOINT_EVERY] = "--checkpoint-every",
    [F_RESUME] = "--resume",
    [F_WARMUP] = "--warmup-steps",
    [F_DROPOUT_SEED] = "--dropout-seed",
    [F_RANKS_PER_NODE] = "--ranks-per-node",
    [F_PARTITIONS] = "--partitions",
    [F_PARTITIONS_CACHE] = "--partitions-cache",
    [F_STALL_TIMEOUT] = "--stall-timeout",
    [F_WEIGHTS] = "--weights",
    [F_LR] = "--lr",
    [F_LR_SCHEDULE] = "--lr-schedule",
    [F_LR_WARMUP] = "--lr-warmup",
    [F_CLIP_GRAD_NORM] = "--clip-grad-norm",
    [F_EVAL_DATA] = "--eval-data",
    [F_EVAL_EVERY] = "--eval-every",
    [F_EVAL_LOG] = "--eval-log",
    [F_EVAL_METRICS] = "--eval-metrics",
    [F_EVAL_SCORE] = "--eval-score",
    [F_EVAL_LABEL] = "--eval-label",
    [F_TRACE] = "--trace",
    [F_THREADS] = "--threads",
    [F_RUN_DIR] = "--run-dir",
    [F_EVAL_MODE] = "--eval-mode",
    [F_EARLY_STOP] = "--early-stop",
    [F_EARLY_STOP_METRIC] = "--early-stop-metric",
    [F_KEEP_BEST] = "--keep-best",
    [F_DST] = "--dst",
    [F_DST_EVERY] = "--dst-every",
    [F_DST_FRACTION] = "--dst-fraction",
    [F_DST_UNTIL] = "--dst-until",
    [F_ACCUMULATE] = "--accumulate",
    [F_SAVE_INFER] = "--save-infer",
    [F_OUTPUTS] = "--outputs",
    [F_WIRE] = "--wire",
    [F_SYNC_EVERY] = "--sync-every",
    [F_LOCAL_SGD_AFTER] = "--local-sgd-after",
    [F_STALENESS] = "--staleness",
};

typedef struct parser {
    const char *argv0;
    FILE *err;
} parser;

static int bad(const parser *ps, const char *fmt, const char *a, const char *b) {
    if (ps->err) {
        fprintf(ps->err, "%s: ", ps->argv0);
        fprintf(ps->err, fmt, a, b);
        fputs(" (see --help)\n", ps->err);
    }
    return PX_FLAGS_BAD;
}

/* A whole number in [min, 10^15]. */
static int parse_count(const parser *ps, const char *flag, const char *v, int64_t min,
                       int64_t *out) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < min || x > 1000000000000000LL)
        return bad(ps,
                   min ? "%s needs a whole number of at least 1, not '%s'"
                       : "%s needs a whole number of at least 0, not '%s'",
                   flag, v);
    *out = x;
    return PX_FLAGS_OK;
}

static int parse_seed(const parser *ps, const char *flag, const char *v, uint64_t *out) {
    char *end;
    errno = 0;
    while (*v == ' ') v++;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end || *v == '-')
        return bad(ps, "%s needs a whole number from 0 to 2^64-1, not '%s'", flag, v);
    *out = x;
    return PX_FLAGS_OK;
}

static int parse_seconds(const parser *ps, const char *flag, const char *v, double *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    /* Below 0.1 s a healthy step is "stalled"; the ceiling keeps it in range
     * of the watchdog's clock arithmetic. */
    if (errno || end == v || *end || !isfinite(x) || x < 0 || (x > 0 && x < 0.1) || x > 1e9)
        return bad(ps, "%s needs a number of seconds from 0.1 to 1e9 (0: off), not '%s'", flag, v);
    *out = x;
    return PX_FLAGS_OK;
}

/* A finite number > 0 (a learning rate, a norm). */
static int parse_positive(const parser *ps, const char *flag, const char *v, double *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x <= 0)
        return bad(ps, "%s needs a number greater than 0, not '%s'", flag, v);
    *out = x;
    return PX_FLAGS_OK;
}

/* NAME[,NAME...] into a malloc'd list; empty names are refused. */
static int parse_names(const parser *ps, const char *flag, const char *v, int *n, char ***out) {
    for (const char *s = v;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (len == 0) return bad(ps, "%s: an empty name in '%s'", flag, v);
        char **grown = realloc(*out, sizeof(char *) * (size_t)(*n + 1));
        if (!grown || !(grown[*n] = strndup(s, len))) {
            if (grown) *out = grown;
            return bad(ps, "out of memory%s%s", "", "");
        }
        *out = grown;
        (*n)++;
        if (!comma) return PX_FLAGS_OK;
        s = comma + 1;
    }
}

/* NAME, NAME:min or NAME:max; the name is checked against the model's
 * outputs once they are known (px_train_metric_index). */
static int parse_metric(const parser *ps, const char *flag, const char *v, px_train_flags *f) {
    const char *colon = strrchr(v, ':');
    size_t len = strlen(v);
    if (colon && (!strcmp(colon, ":min") || !strcmp(colon, ":max"))) {
        f->metric_dir_given = 1;
        f->metric_max = !strcmp(colon, ":max");
        len = (size_t)(colon - v);
    }
    if (len == 0) return bad(ps, "%s needs NAME, NAME:min or NAME:max, not '%s'", flag, v);
    f->metric = v;
    f->metric_name = strndup(v, len);
    if (!f->metric_name) return bad(ps, "out of memory%s%s", "", "");
    return PX_FLAGS_OK;
}

static int set_value(const parser *ps, px_train_flags *f, int id, const char *v) {
    const char *flag = flag_names[id];
    int64_t n;
    int rc = PX_FLAGS_OK;
    switch (id) {
    case F_DATA: f->data = v; break;
    case F_LOSSES: f->losses = v; break;
    case F_STATS: f->stats = v; break;
    case F_SAVE: f->save = v; break;
    case F_CHECKPOINT: f->checkpoint = v; break;
    case F_RESUME: f->resume = v; break;
    case F_WEIGHTS: f->weights = v; break;
    case F_STEPS: rc = parse_count(ps, flag, v, 1, &f->steps); break;
    case F_EPOCHS: rc = parse_count(ps, flag, v, 1, &f->epochs); break;
    case F_LOG_EVERY: rc = parse_count(ps, flag, v, 0, &f->log_every); break;
    case F_CHECKPOINT_EVERY: rc = parse_count(ps, flag, v, 1, &f->checkpoint_every); break;
    case F_WARMUP: rc = parse_count(ps, flag, v, 0, &f->warmup_steps); break;
    case F_SHUFFLE_BUFFER: rc = parse_count(ps, flag, v, 0, &f->shuffle_buffer); break;
    case F_SHUFFLE:
        f->shuffle = 1;
        rc = parse_seed(ps, flag, v, &f->shuffle_seed);
        break;
    case F_DROPOUT_SEED:
        f->dropout_seed_given = 1;
        rc = parse_seed(ps, flag, v, &f->dropout_seed);
        break;
    case F_RANKS_PER_NODE:
        rc = parse_count(ps, flag, v, 1, &n);
        if (!rc && n > 1000000) rc = bad(ps, "%s: %s ranks per node is too many", flag, v);
        f->comm.ranks_per_node = (int)n;
        break;
    case F_PARTITIONS:
        if (!strcmp(v, "auto")) break;
        if (!strcmp(v, "search")) {
            f->comm.partitions_search = 1;
            break;
        }
        rc = parse_count(ps, flag, v, 1, &n);
        if (rc) return bad(ps, "%s takes auto, search or a count of at least 1, not '%s'", flag, v);
        if (n > 1000000) rc = bad(ps, "%s: %s partitions is too many", flag, v);
        f->comm.partitions_override = (int)n;
        break;
    case F_PARTITIONS_CACHE: f->partitions_cache = v; break;
    case F_STALL_TIMEOUT: rc = parse_seconds(ps, flag, v, &f->comm.stall_timeout_s); break;
    case F_LR:
        f->lr_given = 1;
        rc = parse_positive(ps, flag, v, &f->lr);
        break;
    case F_LR_SCHEDULE: f->lr_schedule = v; break;
    case F_LR_WARMUP: rc = parse_count(ps, flag, v, 0, &f->schedule.warmup); break;
    case F_CLIP_GRAD_NORM: rc = parse_positive(ps, flag, v, &f->clip_grad_norm); break;
    case F_EVAL_DATA: f->eval_data = v; break;
    case F_EVAL_EVERY: rc = parse_count(ps, flag, v, 1, &f->eval_every); break;
    case F_EVAL_LOG: f->eval_log = v; break;
    case F_EVAL_METRICS: f->eval_metrics = v; break;
    case F_EVAL_SCORE: f->eval_score = v; break;
    case F_EVAL_LABEL: f->eval_label = v; break;
    case F_TRACE: f->trace = v; break;
    case F_RUN_DIR: f->run_dir = v; break;
    case F_EVAL_MODE:
        if (!strcmp(v, "eval") || !strcmp(v, "train"))
            f->eval_train_mode = !strcmp(v, "train");
        else
            rc = bad(ps, "%s needs eval or train, not '%s'", flag, v);
        break;
    case F_EARLY_STOP: rc = parse_count(ps, flag, v, 1, &f->early_stop); break;
    case F_EARLY_STOP_METRIC: rc = parse_metric(ps, flag, v, f); break;
    case F_KEEP_BEST: f->keep_best = v; break;
    case F_SAVE_INFER: f->save_infer = v; break;
    case F_OUTPUTS: rc = parse_names(ps, flag, v, &f->n_outputs, &f->outputs); break;
    case F_ACCUMULATE:
        rc = parse_count(ps, flag, v, 1, &f->accumulate);
        if (!rc && f->accumulate > 1000000)
            rc = bad(ps, "%s: %s micro-batches is too many (at most 1000000)", flag, v);
        break;
    case F_THREADS:
        rc = parse_count(ps, flag, v, 1, &n);
        if (!rc && n > 256) rc = bad(ps, "%s: %s threads is too many (at most 256)", flag, v);
        f->threads = (int)n;
        break;
    case F_DST:
        f->dst.kind = px_dst_kind_from_name(v);
        if (f->dst.kind <= PX_DST_NONE) rc = bad(ps, "%s needs set or rigl, not '%s'", flag, v);
        break;
    case F_WIRE:
        f->comm.wire = px_wire_format_from_name(v);
        if (f->comm.wire < 0) rc = bad(ps, "%s needs fp32, bf16 or fp16, not '%s'", flag, v);
        break;
    case F_SYNC_EVERY: rc = parse_count(ps, flag, v, 1, &f->comm.sync_every); break;
    case F_LOCAL_SGD_AFTER: rc = parse_count(ps, flag, v, 0, &f->comm.local_sgd_after); break;
    case F_STALENESS: rc = parse_count(ps, flag, v, 0, &f->comm.staleness); break;
    case F_DST_EVERY: rc = parse_count(ps, flag, v, 1, &f->dst.every); break;
    case F_DST_UNTIL: rc = parse_count(ps, flag, v, 1, &f->dst.until); break;
    case F_DST_FRACTION:
        rc = parse_positive(ps, flag, v, &f->dst.fraction);
        if (!rc && f->dst.fraction > 1)
            rc = bad(ps, "%s needs a fraction in (0, 1], not '%s'", flag, v);
        break;
    }
    return rc;
}

static void set_defaults(px_train_flags *f) {
    memset(f, 0, sizeof *f);
    f->log_every = 10;
    f->accumulate = 1;
    f->warmup_steps = -1;
    f->shuffle_buffer = -1;
    f->dropout_seed = PX_DEFAULT_DROPOUT_SEED;
    f->comm.ranks_per_node = 0;
    f->comm.local_aggregation = 1;
    f->comm.prefetch = 1;
    f->comm.async_push = 1;
    f->comm.partitions_override = 0;
    f->comm.stall_timeout_s = 300;
}

/* --resume may be the --checkpoint being continued; every other pair of
 * named files must differ (px_find_path_collision). check_paths lists
 * --resume first, then the outputs, --checkpoint first among them. */
static int resume_and_checkpoint(int i, int j) {
    return i == 0 && j == 1;
}

int px_train_outputs(const px_train_flags *f, int save_external, px_named_path *out,
                     char data_names[PX_MODEL_OUTPUTS][PX_PATH_NAME_MAX]) {
    int n = 0;
    out[n++] = (px_named_path){"--checkpoint", f->checkpoint};
    out[n++] = (px_named_path){"--save", f->save};
    out[n++] = (px_named_path){"--keep-best", f->keep_best};
    out[n++] = (px_named_path){"--save-infer", f->save_infer};
    out[n++] = (px_named_path){"--losses", f->losses};
    out[n++] = (px_named_path){"--stats", f->stats};
    out[n++] = (px_named_path){"--eval-log", f->eval_log};
    out[n++] = (px_named_path){"--trace", f->trace};
    out[n++] = (px_named_path){"--run-dir's progress.csv", f->run_files[PX_RUN_PROGRESS]};
    out[n++] = (px_named_path){"--run-dir's run.json", f->run_files[PX_RUN_CONFIG]};
    out[n++] = (px_named_path){"--run-dir's compile.json", f->run_files[PX_RUN_COMPILE]};
    const char *models[PX_MODEL_OUTPUTS] = {f->save, f->keep_best, f->save_infer};
    static const char *const data_flags[PX_MODEL_OUTPUTS] = {
        "--save's external data", "--keep-best's external data", "--save-infer's external data"};
    for (int k = 0; k < PX_MODEL_OUTPUTS; k++) {
        int given = save_external && models[k];
        if (given) snprintf(data_names[k], PX_PATH_NAME_MAX, "%s.data", models[k]);
        out[n++] = (px_named_path){data_flags[k], given ? data_names[k] : NULL};
    }
    return n;
}

/* --run-dir DIR: the paths of its files; --losses, --stats and --eval-log
 * (with --eval-data) default to them. */
static int run_dir_paths(const parser *ps, px_train_flags *f) {
    if (!f->run_dir) return PX_FLAGS_OK;
    if (!*f->run_dir) return bad(ps, "--run-dir needs a folder, not ''%s%s", "", "");
    for (int i = 0; i < PX_RUN_FILES; i++) {
        if (i == PX_RUN_EVAL && !f->eval_data) continue;
        size_t n = strlen(f->run_dir) + strlen(px_run_file_name(i)) + 2;
        if (!(f->run_files[i] = malloc(n))) return bad(ps, "out of memory%s%s", "", "");
        snprintf(f->run_files[i], n, "%s/%s", f->run_dir, px_run_file_name(i));
    }
    if (!f->losses) f->losses = f->run_files[PX_RUN_LOSSES];
    if (!f->stats) f->stats = f->run_files[PX_RUN_STATS];
    if (!f->eval_log) f->eval_log = f->run_files[PX_RUN_EVAL];
    return PX_FLAGS_OK;
}

void px_train_flags_free(px_train_flags *f) {
    for (int i = 0; i < PX_RUN_FILES; i++) {
        free(f->run_files[i]);
        f->run_files[i] = NULL;
    }
    free(f->metric_name);
    f->metric_name = NULL;
    for (int i = 0; i < f->n_outputs; i++) free(f->outputs[i]);
    free(f->outputs);
    f->outputs = NULL;
    f->n_outputs = 0;
}

static int check_paths(const parser *ps, const px_train_flags *f) {
    px_named_path paths[1 + PX_TRAIN_OUTPUTS];
    char data_names[PX_MODEL_OUTPUTS][PX_PATH_NAME_MAX];
    paths[0] = (px_named_path){"--resume", f->resume};
    int n = 1 + px_train_outputs(f, f->save_external, paths + 1, data_names);
    for (int i = 0; i < n; i++)
        if (paths[i].path && !*paths[i].path)
            return bad(ps, "%s needs a file name, not ''%s", paths[i].flag, "");
    if (!*f->data) return bad(ps, "--data needs a folder, not ''%s%s", "", "");
    /* stat, not open: opening a FIFO would block before any check. */
    struct stat st;
    if (f->resume && stat(f->resume, &st) == 0 && !S_ISREG(st.st_mode))
        return bad(ps, "--resume %s is not a regular file (a FIFO, device or folder)%s", f->resume,
                   "");
    char msg[9000];
    /* Outputs go to regular files (or new ones) and character devices only. */
    for (int i = 1; i < n; i++)
        if (paths[i].path && px_output_kind_ok(paths[i].flag, paths[i].path, msg, sizeof msg))
            return bad(ps, "%s%s", msg, "");
    /* A checkpoint is a manifest with pieces next to it: no device can hold it. */
    if (f->checkpoint && px_is_char_device(f->checkpoint))
        return bad(ps,
                   "--checkpoint %s is a character device: a checkpoint is a file with pieces "
                   "next to it (FILE.<nonce>.<rank>); give it a path in a writable folder%s",
                   f->checkpoint, "");
    const char *models[3] = {f->save, f->keep_best, f->save_infer};
    const char *model_flags[3] = {"--save", "--keep-best", "--save-infer"};
    for (int k = 0; k < 3; k++)
        if (models[k] && f->save_external && px_is_char_device(models[k]))
            return bad(ps,
                       "%s %s is a character device: --save-external writes the weights to a "
                       "file next to the model (OUT.onnx.data); give it a path in a writable "
                       "folder",
                       model_flags[k], models[k]);
    if (px_find_path_collision(paths, n, resume_and_checkpoint, msg, sizeof msg))
        return bad(ps, "%s%s", msg, "");
    return PX_FLAGS_OK;
}

static int check_combinations(const parser *ps, px_train_flags *f, const int *seen) {
    if (f->steps && f->epochs) return bad(ps, "give --steps or --epochs, not both%s%s", "", "");
    if (f->partitions_cache && f->comm.partitions_override)
        return bad(ps, "--partitions-cache applies to --partitions auto or search, not a count%s%s",
                   "", "");
    if (f->shuffle_buffer >= 0 && !f->shuffle)
        return bad(ps, "--shuffle-buffer needs --shuffle SEED%s%s", "", "");
    if (f->checkpoint_every && !f->checkpoint)
        return bad(ps, "--checkpoint-every needs --checkpoint FILE%s%s", "", "");
    if (f->save_external && !f->save && !f->save_infer)
        return bad(ps, "--save-external needs --save OUT.onnx or --save-infer OUT.onnx%s%s", "",
                   "");
    if (f->save_infer && !f->n_outputs)
        return bad(ps,
                   "--save-infer needs --outputs NAME[,NAME...]: the values the served model "
                   "returns (e.g. the logits the loss is computed from)%s%s",
                   "", "");
    if (f->n_outputs && !f->save_infer)
        return bad(ps, "--outputs names what --save-infer OUT.onnx returns; give it too%s%s", "",
                   "");
    if (f->eval_every && !f->eval_data)
        return bad(ps, "--eval-every needs --eval-data DIR%s%s", "", "");
    if (f->eval_log && !f->eval_data)
        return bad(ps, "--eval-log needs --eval-data DIR%s%s", "", "");
    static const struct {
        int id;
        const char *name;
    } need_eval[] = {{F_EVAL_MODE, "--eval-mode"},
                     {F_EARLY_STOP, "--early-stop"},
                     {F_EARLY_STOP_METRIC, "--early-stop-metric"},
                     {F_KEEP_BEST, "--keep-best"}};
    for (size_t i = 0; i < sizeof need_eval / sizeof need_eval[0]; i++)
        if (seen[need_eval[i].id] && !f->eval_data)
            return bad(ps, "%s needs --eval-data DIR (it acts on validations)%s", need_eval[i].name,
                       "");
    if (f->eval_every_epoch && !f->eval_data)
        return bad(ps, "--eval-every-epoch needs --eval-data DIR%s%s", "", "");
    if (seen[F_EARLY_STOP_METRIC] && !f->early_stop && !f->keep_best)
        return bad(ps, "--early-stop-metric applies to --early-stop P or --keep-best OUT.onnx%s%s",
                   "", "");
    if (f->comm.wire_error_feedback && f->comm.wire == PX_WIRE_FP32)
        return bad(ps, "--wire-error-feedback needs --wire bf16 or fp16 (fp32 rounds nothing)%s%s",
                   "", "");
    if (seen[F_LOCAL_SGD_AFTER] && f->comm.sync_every < 2)
        return bad(ps, "--local-sgd-after needs --sync-every K with K of at least 2%s%s", "", "");
    if (!f->dst.kind && (f->dst.every || f->dst.fraction > 0 || f->dst.until))
        return bad(ps, "%s needs --dst set|rigl%s",
                   f->dst.every      ? "--dst-every"
                   : f->dst.fraction ? "--dst-fraction"
                                     : "--dst-until",
                   "");
    if ((f->eval_metrics || f->eval_score || f->eval_label) && !f->eval_data)
        return bad(ps, "%s needs --eval-data DIR%s",
                   f->eval_metrics ? "--eval-metrics"
                   : f->eval_score ? "--eval-score"
                                   : "--eval-label",
                   "");
    if ((f->eval_score || f->eval_label) && !f->eval_metrics)
        return bad(ps, "%s needs --eval-metrics LIST%s",
                   f->eval_score ? "--eval-score" : "--eval-label", "");
    if (f->eval_metrics) {
        px_eval_metrics m;
        char msg[300];
        int rc = px_eval_metrics_parse(&m, f->eval_metrics, msg, sizeof msg);
        if (rc) return bad(ps, "%s%s", msg, "");
    }
    char msg[300];
    if (f->lr_schedule && px_lr_schedule_parse(f->lr_schedule, &f->schedule, msg, sizeof msg))
        return bad(ps, "%s%s", msg, "");
    if (px_lr_schedule_check(&f->schedule, msg, sizeof msg)) return bad(ps, "%s%s", msg, "");
    return PX_FLAGS_OK;
}

int px_train_flags_parse(int argc, char **argv, px_train_flags *f, FILE *err) {
    parser ps = {argc > 0 ? argv[0] : "program", err};
    int seen[F_COUNT] = {0};
    set_defaults(f);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return PX_FLAGS_HELP;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--no-local-aggregation")) {
            f->comm.local_aggregation = 0;
            continue;
        }
        if (!strcmp(a, "--no-overlap")) {
            f->comm.prefetch = 0;
            f->comm.async_push = 0;
            continue;
        }
        if (!strcmp(a, "--save-external")) {
            f->save_external = 1;
            continue;
        }
        if (!strcmp(a, "--eval-every-epoch")) {
            f->eval_every_epoch = 1;
            continue;
        }
        if (!strcmp(a, "--wire-error-feedback")) {
            f->comm.wire_error_feedback = 1;
            continue;
        }
        if (!strcmp(a, "--allow-mode-change")) {
            f->allow_mode_change = 1;
            continue;
        }
        /* --flag VALUE or --flag=VALUE */
        const char *eq = strchr(a, '=');
        size_t len = eq && !strncmp(a, "--", 2) ? (size_t)(eq - a) : strlen(a);
        int id = -1;
        for (int k = 0; k < F_COUNT; k++)
            if (strlen(flag_names[k]) == len && !strncmp(a, flag_names[k], len)) id = k;
        if (id < 0) {
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(len < 100 ? len : 100), a);
            return bad(&ps, "unknown option '%s'%s", name, "");
        }
        if (seen[id]++) return bad(&ps, "'%s' is given twice%s", flag_names[id], "");
        const char *v;
        if (eq && len != strlen(a))
            v = eq + 1;
        else if (i + 1 < argc)
            v = argv[++i];
        else
            return bad(&ps, "option '%s' needs a value%s", flag_names[id], "");
        if (set_value(&ps, f, id, v)) return PX_FLAGS_BAD;
    }
    if (!f->data) return bad(&ps, "--data DIR is required%s%s", "", "");
    int rc = check_combinations(&ps, f, seen);
    if (!rc) rc = run_dir_paths(&ps, f);
    return rc ? rc : check_paths(&ps, f);
}

static void describe_model(FILE *out, const px_program_desc *p) {
    fprintf(out, "Compiled model: %s\n", p->model ? p->model : "(unknown)");
    fprintf(out, "  batch per rank: %lld (global batch = ranks x %lld)\n", (long long)p->batch,
            (long long)p->batch);
    fprintf(out, "  inputs (files in --data DIR):\n");
    for (int64_t i = 0; i < p->n_inputs; i++) {
        const px_io_desc *in = &p->inputs[i];
        char file[512], sample[256];
        px_data_file_name(file, sizeof file, "DIR", in->name, ".npy");
        px_shape_text(sample, sizeof sample, in->rank > 0 ? (int)in->rank - 1 : 0,
                      in->rank > 0 ? in->dims + 1 : in->dims);
        fprintf(out, "    %-20s %-8s samples of shape %-12s %s\n", in->name,
                px_rt_dtype_name((int)in->dtype), sample, file);
    }
    if (p->loss_output >= 0 && p->loss_output < p->n_outputs)
        fprintf(out, "  loss: %s\n", p->outputs[p->loss_output].name);
    if (p->optim) {
        const px_optim_desc *o = p->optim;
        fprintf(out, "  optimizer: %s, lr %g", px_optim_kind_name(o->kind), o->lr);
        if (o->kind == PX_OPTIM_MOMENTUM)
            fprintf(out, ", momentum %g%s", o->momentum, o->nesterov ? " (nesterov)" : "");
        if (o->kind == PX_OPTIM_ADAM || o->kind == PX_OPTIM_ADAMW)
            fprintf(out, ", beta1 %g, beta2 %g, epsilon %g", o->beta1, o->beta2, o->epsilon);
        if (o->kind == PX_OPTIM_RMSPROP)
            fprintf(out, ", alpha %g, epsilon %g", o->alpha, o->epsilon);
        if (o->kind == PX_OPTIM_ADAGRAD) fprintf(out, ", epsilon %g", o->epsilon);
        if (o->weight_decay) {
            int64_t spared = 0;
            for (int64_t v = 0; v < p->n_vars; v++) spared += p->vars[v].no_decay != 0;
            fprintf(out, ", %sweight decay %g", o->kind == PX_OPTIM_ADAMW ? "decoupled " : "",
                    o->weight_decay);
            if (spared)
                fprintf(out, " (not on %lld variable%s: --no-decay)", (long long)spared,
                        spared == 1 ? "" : "s");
        }
        fputc('\n', out);
    }
    int64_t params = 0, sparse = 0, ps = 0;
    for (int64_t v = 0; v < p->n_vars; v++) {
        params += p->vars[v].nbytes / 4;
        sparse += p->vars[v].var_class == PX_VAR_SPARSE;
        ps += p->vars[v].sync == PX_SYNC_PS;
    }
    fprintf(out,
            "  trainable variables: %lld (%lld parameters; %lld sparse, %lld dense; %lld on "
            "parameter servers), communication: %s\n",
            (long long)p->n_vars, (long long)params, (long long)sparse,
            (long long)(p->n_vars - sparse), (long long)ps, px_comm_mode_name(p->comm_mode));
}

void px_train_usage(FILE *out, const char *argv0, const px_program_desc *p) {
    fprintf(
        out,
        "usage: %s --data DIR [--steps N | --epochs N] [options]\n"
        "       mpirun -np R %s --data DIR ...   (synchronous data-parallel training)\n"
        "\n"
        "Trains the compiled model on the samples in DIR.\n"
        "  --data DIR            one <input-name>.npy (or .pb TensorProto) per graph input,\n"
        "                        samples along dim 0 ('/' and ':' in names are written '_');\n"
        "                        every rank must see the same files. Or a sharded dataset\n"
        "                        (DIR/manifest.txt, as parallaxc data writes): each rank reads\n"
        "                        only its share of the shards, in lanes (see docs/data.md)\n"
        "  --steps N             train N steps in all (a resumed run continues up to N)\n"
        "  --epochs N            train N passes over the data (default 1), counted from step 1\n"
        "                        also when resuming; an epoch is floor(samples / global batch)\n"
        "                        steps, a partial last batch is dropped\n"
        "  --shuffle SEED        permute the samples every epoch (the permutation depends only\n"
        "                        on SEED and the epoch; the same on every rank). A sharded\n"
        "                        dataset permutes its shards and passes each lane through a\n"
        "                        shuffle buffer\n"
        "  --shuffle-buffer N    samples in the shuffle buffers of a sharded dataset, over all\n"
        "                        ranks (default 65536; 0: permute the shards only)\n"
        "  --accumulate K        gradient accumulation: each step runs the model on K batches\n"
        "                        per rank and updates once with the mean of their gradients,\n"
        "                        as one step with a K times larger batch (global batch =\n"
        "                        K x ranks x batch; epochs, --steps and schedules count\n"
        "                        updates)\n"
        "  --log-every K         print step, loss (and other scalar outputs) as moving averages\n"
        "                        over about max(K, 20) steps, lr, epoch, samples/s, elapsed time\n"
        "                        and ETA every K steps and at the last (default 10; 0: quiet)\n"
        "  --losses FILE.csv     write 'step,loss' for every step, plus a column for every other\n"
        "                        scalar float output (e.g. accuracy) and the step's learning\n"
        "                        rate (lr); steps are counted from 1, values are means over\n"
        "                        ranks. With --resume, the lines of the steps up to the\n"
        "                        checkpoint's already in FILE are kept\n"
        "  --stats FILE.json     throughput, bytes sent/received per step and communication\n"
        "                        time (comm_hidden_fraction: share overlapped with compute)\n"
        "                        of every rank, and its CPU time per step (cpu_seconds_per_step:\n"
        "                        the process's and the communication thread's)\n"
        "  --save OUT.onnx       at the end, write the model with the trained weights (as ONNX\n"
        "                        external data in OUT.onnx.data when they reach 2 GiB)\n"
        "  --save-external       always write the weights to OUT.onnx.data (OUT.onnx of\n"
        "                        --save and --save-infer)\n"
        "  --save-infer OUT.onnx  at the end, write a model to serve: the compiled model as\n"
        "                        PyTorch's model.eval() runs it (Dropout the identity,\n"
        "                        BatchNorm on its running statistics), with the trained weights,\n"
        "                        cut down to what --outputs needs (no labels, no loss unless\n"
        "                        asked for); any ONNX runtime loads it\n"
        "  --outputs NAME[,NAME...]  the values --save-infer's model returns: outputs of the\n"
        "                        model or values inside it (the error for an unknown name\n"
        "                        lists the outputs and what the loss is computed from)\n"
        "  --checkpoint FILE     write the full training state (weights, optimizer state, step)\n"
        "                        at the end, atomically: FILE lists the pieces FILE.*.<rank>\n"
        "                        each shard writes; resumable on any number of ranks\n"
        "  --checkpoint-every K  also write it every K steps\n"
        "  --resume FILE         continue from a checkpoint: the same results, bit for bit, as\n"
        "                        a run that was never interrupted (give the same --shuffle and\n"
        "                        --dropout-seed)\n"
        "  --warmup-steps K      steps left out of the samples/s rate and the --stats traffic\n"
        "                        (default 2, or 22 when --partitions search measures\n"
        "                        partitions over several shards; fewer in runs that short)\n"
        "  --dropout-seed S      seed of the Dropout masks (default %llu)\n"
        "  --ranks-per-node K    treat every K consecutive ranks as one node (default: the real\n"
        "                        nodes); parameter-server shards and local aggregation are per "
        "node\n"
        "  --no-local-aggregation  push sparse gradients from every rank, unaggregated\n"
        "  --no-overlap          pull and push parameter-server rows where the step reads\n"
        "                        and updates them, on the main thread; by default each push\n"
        "                        leaves on the communication thread as soon as its row\n"
        "                        gradients are ready, and asks for the next step's rows,\n"
        "                        which arrive while the step ends (the same numbers either\n"
        "                        way)\n"
        "  --partitions N|auto|search  parameter-server partitions of the sparse variables:\n"
        "                        N for every one; auto (default) for those compiled auto: the\n"
        "                        count --resume's checkpoint or --partitions-cache recorded,\n"
        "                        else one per shard (pulls and pushes go by shard: more\n"
        "                        partitions would send nothing less), set up at the start so\n"
        "                        no row moves; search: time 1, 2, 4 and 8 per shard during\n"
        "                        the first steps, fit T(P) = a(P-1) + b/P + c and keep the\n"
        "                        best (the paper's search; rows move between counts)\n"
        "  --partitions-cache FILE  where --partitions search records its choice and\n"
        "                        --partitions auto reads it (for this model, rank count,\n"
        "                        batch and --ranks-per-node)\n"
        "  --stall-timeout S     end the job when a step makes no progress for S seconds\n"
        "                        (0.1 to 1e9, default 300; 0: never); 4 S between steps\n"
        "  --weights MODEL.onnx  read the initial weights from MODEL.onnx instead of the model\n"
        "                        compiled from (%s); it must have the same graph,\n"
        "                        initializer names, dtypes and shapes (e.g. one --save wrote)\n"
        "  --lr F                learning rate (default: the one compiled in)\n"
        "  --lr-schedule S       constant (default), step:EVERY:GAMMA (lr*GAMMA^floor(s/EVERY)),\n"
        "                        cosine:TOTAL_STEPS (lr*(1+cos(pi*(s-K)/(T-K)))/2, 0 from T on) "
        "or\n"
        "                        linear:TOTAL_STEPS (lr*(T-s)/(T-K)); s counts steps from 0\n"
        "  --lr-warmup K         steps s < K use lr*s/K (a LambdaLR with the same lambda)\n"
        "  --clip-grad-norm F    scale all gradients so their global L2 norm (dense and\n"
        "                        parameter-server rows together) is at most F, as\n"
        "                        torch.nn.utils.clip_grad_norm_\n"
        "  --eval-data DIR       validation samples (files as --data): the mean loss and the\n"
        "                        mean of every other scalar float output (e.g. accuracy) over\n"
        "                        its full global batches, without updating anything\n"
        "  --eval-every K        validate every K steps (default: after the last step)\n"
        "  --eval-every-epoch    validate at the end of every epoch (as well)\n"
        "  --eval-log FILE.csv   write 'step,loss,<output>...' of every validation\n"
        "  --eval-mode M         eval (default): validate as PyTorch's model.eval() does,\n"
        "                        Dropout the identity and BatchNorm on its running statistics;\n"
        "                        train: in training mode (Dropout drops, BatchNorm uses the\n"
        "                        batch's statistics). Either way validation updates nothing,\n"
        "                        running statistics included\n"
        "  --early-stop P        stop after P validations in a row without a better\n"
        "                        --early-stop-metric; --checkpoint and --save then hold the\n"
        "                        last state, --keep-best the best\n"
        "  --early-stop-metric NAME[:min|:max]  the validation value --early-stop and\n"
        "                        --keep-best compare (default: the loss, lower is better;\n"
        "                        another output needs :min or :max, e.g. accuracy:max)\n"
        "  --keep-best OUT.onnx  after each validation better than every earlier one of\n"
        "                        this run, write the model as --save does\n"
        "  --eval-metrics LIST   also compute auc, logloss and/or accuracy (comma-separated)\n"
        "                        exactly over the whole validation set (AUC by an exact sort\n"
        "                        on rank 0), from a per-sample score output and a label input;\n"
        "                        they follow the other columns of the log and --eval-log\n"
        "  --eval-score NAME[:logit|:prob]  the score output (default: the only float32 output\n"
        "                        of one value per sample besides the loss), a logit unless\n"
        "                        :prob says it is a probability\n"
        "  --eval-label NAME     the label input (default: the input 'label', else the only\n"
        "                        input of one number per sample); >= 0.5 counts as positive\n"
        "  --trace FILE.json     a timeline of every rank (Chrome trace events: open it in\n"
        "                        ui.perfetto.dev): data loading, step, optimizer, PS pull/push,\n"
        "                        AllReduce start/wait, validation\n"
        "  --run-dir DIR         write everything a report of the run needs into DIR (created\n"
        "                        if missing): run.json (the configuration), compile.json (what\n"
        "                        the compiler predicted), losses.csv, eval.csv (with\n"
        "                        --eval-data), progress.csv (rate and smoothed loss per step)\n"
        "                        and stats.json; --losses, --stats and --eval-log, when given,\n"
        "                        write where they say instead (run.json lists every file)\n"
        "  --threads N           compute threads of this rank (1 to 256): BLAS and the\n"
        "                        loss, softmax, reduction, gather and elementwise kernels;\n"
        "                        results are bit-identical for every N. Default: the CPUs\n"
        "                        this process may run on divided by the ranks that share\n"
        "                        them: those on its node (OMPI_COMM_WORLD_LOCAL_SIZE) or, when\n"
        "                        more, those on the same kernel (containers, namespaces), at\n"
        "                        least 1; OPENBLAS_NUM_THREADS or OMP_NUM_THREADS, when set,\n"
        "                        replace that default\n"
        "Dynamic sparse training (programs compiled with --sparsity; not exact across\n"
        "rank counts, but every rank changes the same masks at the same step):\n"
        "  --dst set|rigl        every K steps, drop the live weights (or blocks) of the\n"
        "                        smallest magnitude and grow as many: at random (set) or where\n"
        "                        the step's dense gradient is largest (rigl: computed on those\n"
        "                        steps only); grown weights start at zero\n"
        "  --dst-every K         steps between mask updates (default 100)\n"
        "  --dst-fraction F      fraction of the live weights changed, in (0, 1], decayed by\n"
        "                        a cosine: F/2 (1 + cos(pi t / S)) after step t (default 0.3)\n"
        "  --dst-until S         no mask update from step S on (default: 3/4 of the run)\n"
        "Relaxed synchronization (docs/relaxed_sync.md; none of these: exact, N ranks\n"
        "train as one rank with N times the batch):\n"
        "  --wire F              fp32 (default), bf16 or fp16: the format in which dense\n"
        "                        gradient buckets and parameter-server rows travel; sums,\n"
        "                        optimizer state and master weights stay float32\n"
        "  --wire-error-feedback each rank adds what rounding its gradients to 16 bits\n"
        "                        dropped to its next step's gradients (with --wire bf16|fp16)\n"
        "  --sync-every K        local SGD: each rank trains its own copy of the dense\n"
        "                        (AllReduce) variables and the copies are averaged every K\n"
        "                        steps (default 1: every step's gradients are averaged);\n"
        "                        parameter-server variables stay on their shards\n"
        "  --local-sgd-after S   train the first S steps exactly, then locally (with\n"
        "                        --sync-every)\n"
        "  --staleness S         a rank may read parameter-server rows it pulled up to S\n"
        "                        steps ago (they miss at most S pushes) instead of pulling\n"
        "                        them again (default 0: every pull reads the latest rows)\n"
        "  --allow-mode-change   resume a checkpoint written under another --wire,\n"
        "                        --sync-every or --staleness\n"
        "Validations, checkpoints and the end of the run average what local SGD let\n"
        "drift apart; a checkpoint also drops the rounding residuals and stale rows,\n"
        "so a resumed run continues as the uninterrupted one does.\n"
        "  --help                this text\n"
        "Environment (the same on every rank; rank 0's values decide):\n"
        "  PX_ALLREDUCE=auto|ring|doubling  algorithm of each dense gradient bucket; auto\n"
        "                        (default) picks by an alpha-beta model: recursive doubling\n"
        "                        when latency dominates, the ring when bandwidth does\n"
        "  PX_NET_LATENCY=S      the model's seconds per message (default 50e-6)\n"
        "  PX_NET_BANDWIDTH=B    the model's bytes per second per link (default 125e6, 1 Gbit/s)\n"
        "  PX_PUSH_INBOX_MB=F    each shard's receives for a sparse variable's pushed rows,\n"
        "                        posted a push ahead so that a sender's rows travel before the\n"
        "                        shard is ready (default 16 MiB; larger row sets follow\n"
        "                        when the shard gets to them)\n"
        "Bad flags exit with status 2, failures during the run with status 1.\n"
        "\n",
        argv0, argv0, (unsigned long long)PX_DEFAULT_DROPOUT_SEED,
        p->weights_path ? p->weights_path : "none");
    describe_model(out, p);
}
