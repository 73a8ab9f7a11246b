#include "run_dir.h"

#include "file_atomic.h"
#include "text_escape.h"
#include "px_enums.h"
#include "sync_mode.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char *const file_names[PX_RUN_FILES] = {
    [PX_RUN_CONFIG] = "run.json",       [PX_RUN_COMPILE] = "compile.json",
    [PX_RUN_LOSSES] = "losses.csv",     [PX_RUN_EVAL] = "eval.csv",
    [PX_RUN_PROGRESS] = "progress.csv", [PX_RUN_STATS] = "stats.json",
};

const char *px_run_file_name(int file) {
    return file >= 0 && file < PX_RUN_FILES ? file_names[file] : "?";
}

int px_run_dir_create(const char *dir, char *err, size_t cap) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        snprintf(err, cap, "--run-dir: the path is too long");
        return -1;
    }
    /* every prefix ending before a '/', then the whole path */
    for (char *s = path + 1;; s++) {
        int end = *s == '\0';
        if (*s != '/' && !end) continue;
        *s = '\0';
        struct stat st;
        if (mkdir(path, 0777) != 0 && errno != EEXIST) {
            snprintf(err, cap, "--run-dir %s: cannot create %s: %s", dir, path, strerror(errno));
            return -1;
        }
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
            snprintf(err, cap, "--run-dir %s: %s is not a folder", dir, path);
            return -1;
        }
        if (end) return 0;
        *s = '/';
    }
}

static void json_number(FILE *f, double v) {
    if (isfinite(v))
        fprintf(f, "%.17g", v);
    else
        fputs("null", f);
}

/* A file's path as run.json gives it: its name when it is in the run
 * directory, else the path as given. */
static const char *file_entry(const char *path, const char *run_dir) {
    size_t n = strlen(run_dir);
    if (path && !strncmp(path, run_dir, n) && path[n] == '/' && !strchr(path + n + 1, '/'))
        return path + n + 1;
    return path;
}

static void optimizer(FILE *f, const px_run_config *c) {
    const px_optim_desc *o = c->p->optim;
    fputs("{\"name\": ", f);
    px_json_string(f, px_optim_kind_name(o->kind));
    fputs(", \"lr\": ", f);
    json_number(f, c->lr);
    fputs(", \"compiled_lr\": ", f);
    json_number(f, o->lr);
    fprintf(f, ", \"momentum\": %.17g, \"nesterov\": %s, \"beta1\": %.17g, \"beta2\": %.17g",
            o->momentum, o->nesterov ? "true" : "false", o->beta1, o->beta2);
    fprintf(f, ", \"epsilon\": %.17g, \"weight_decay\": %.17g, \"alpha\": %.17g", o->epsilon,
            o->weight_decay, o->alpha);
    fputs(", \"lr_schedule\": ", f);
    px_json_string(f, c->lr_schedule ? c->lr_schedule : "constant");
    fprintf(f, ", \"lr_warmup\": %lld, \"clip_grad_norm\": ", (long long)c->lr_warmup);
    if (c->clip_grad_norm > 0)
        json_number(f, c->clip_grad_norm);
    else
        fputs("null", f);
    fputc('}', f);
}

static void validation(FILE *f, const px_run_config *c) {
    if (!c->eval_data) {
        fputs("null", f);
        return;
    }
    fputs("{\"data\": ", f);
    px_json_string(f, c->eval_data);
    fputs(", \"every\": ", f);
    if (c->eval_every)
        fprintf(f, "%lld", (long long)c->eval_every);
    else
        fputs("null", f);
    fprintf(f, ", \"every_epoch\": %s, \"mode\": ", c->eval_every_epoch ? "true" : "false");
    px_json_string(f, c->eval_mode);
    fputs(", \"metric\": ", f);
    px_json_string(f, c->metric);
    fprintf(f, ", \"higher_is_better\": %s, \"early_stop\": ",
            c->metric_higher_is_better ? "true" : "false");
    if (c->early_stop)
        fprintf(f, "%lld", (long long)c->early_stop);
    else
        fputs("null", f);
    fputs(", \"keep_best\": ", f);
    px_json_string(f, c->keep_best);
    fputs(", \"best\": ", f);
    if (c->has_best) {
        fprintf(f, "{\"step\": %lld, \"value\": ", (long long)c->best_step);
        json_number(f, c->best_value);
        fputc('}', f);
    } else {
        fputs("null", f);
    }
    fputc('}', f);
}

static void write_config(FILE *f, const char *run_dir, const px_run_config *c) {
    fputs("{\"format\": \"parallax-run\", \"version\": 1, \"status\": ", f);
    px_json_string(f, c->status);
    fputs(",\n \"argv\": [", f);
    for (int i = 0; i < c->argc; i++) {
        if (i) fputs(", ", f);
        px_json_string(f, c->argv[i]);
    }
    fputs("],\n \"model\": ", f);
    px_json_string(f, c->p->model);
    fputs(", \"resumed_from\": ", f);
    px_json_string(f, c->resume);
    fprintf(f, ",\n \"started\": %.3f, \"finished\": ", c->started);
    if (c->finished > 0)
        fprintf(f, "%.3f", c->finished);
    else
        fputs("null", f);
    fprintf(f,
            ",\n \"ranks\": %d, \"threads_per_rank\": %d, \"batch_per_rank\": %lld, "
            "\"accumulate\": %lld, \"global_batch\": %lld,\n \"samples\": %lld, "
            "\"steps_per_epoch\": %lld, \"epochs\": %lld, \"first_step\": %lld, "
            "\"last_step\": %lld, \"steps_done\": %lld,\n \"shuffle_seed\": ",
            c->ranks, c->threads_per_rank, (long long)c->batch_per_rank, (long long)c->accumulate,
            (long long)c->global_batch, (long long)c->samples, (long long)c->steps_per_epoch,
            (long long)c->epochs, (long long)c->first_step, (long long)c->last_step,
            (long long)c->steps_done);
    if (c->shuffle)
        fprintf(f, "%llu", (unsigned long long)c->shuffle_seed);
    else
        fputs("null", f);
    fprintf(f, ", \"dropout_seed\": %llu, \"comm\": ", (unsigned long long)c->dropout_seed);
    px_json_string(f, px_comm_mode_name(c->p->comm_mode));
    px_comm_opts exact = {0};
    fputs(", ", f);
    px_sync_mode_json(f, c->comm ? c->comm : &exact);
    fputs(",\n \"optimizer\": ", f);
    optimizer(f, c);
    fputs(",\n \"validation\": ", f);
    validation(f, c);
    fputs(",\n \"files\": {", f);
    for (int i = 0; i < PX_RUN_FILES; i++) {
        fprintf(f, "%s\"%.*s\": ", i ? ", " : "", (int)strcspn(file_names[i], "."), file_names[i]);
        px_json_string(f, file_entry(c->files[i], run_dir));
    }
    const char *named[] = {"trace", "save", "save_infer", "checkpoint"};
    const char *paths[] = {c->trace, c->save, c->save_infer, c->checkpoint};
    for (int i = 0; i < 4; i++) {
        fprintf(f, ", \"%s\": ", named[i]);
        px_json_string(f, file_entry(paths[i], run_dir));
    }
    fputs("}}\n", f);
}

static int write_atomic(const char *path, const char *what, void (*body)(FILE *, const void *),
                        const void *ctx, char *err, size_t cap) {
    px_atomic_file a;
    char why[4400];
    if (px_atomic_open(&a, path, why, sizeof why)) {
        snprintf(err, cap, "--run-dir %s: %s", what, why);
        return -1;
    }
    body(a.f, ctx);
    if (px_atomic_commit(&a, why, sizeof why)) {
        snprintf(err, cap, "--run-dir %s: %s", what, why);
        return -1;
    }
    return 0;
}

typedef struct config_ctx {
    const char *run_dir;
    const px_run_config *c;
} config_ctx;

static void config_body(FILE *f, const void *ctx) {
    const config_ctx *x = ctx;
    write_config(f, x->run_dir, x->c);
}

int px_run_config_write(const char *path, const char *run_dir, const px_run_config *c, char *err,
                        size_t cap) {
    config_ctx x = {run_dir, c};
    return write_atomic(path, "run.json", config_body, &x, err, cap);
}

static void compile_body(FILE *f, const void *ctx) {
    const px_program_desc *p = ctx;
    fputs(p->compile_info ? p->compile_info : "null", f);
    fputc('\n', f);
}

int px_run_compile_write(const char *path, const px_program_desc *p, char *err, size_t cap) {
    return write_atomic(path, "compile.json", compile_body, p, err, cap);
}
