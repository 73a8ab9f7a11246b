/* The training loop of a generated program (design.md §3 and §4). */
#include "train.h"

#include "blas_reserve.h"
#include "checkpoint.h"
#include "data_source.h"
#include "eval.h"
#include "file_atomic.h"
#include "flags_agree.h"
#include "hash64.h"
#include "kernels/thread_pool.h"
#include "losses_csv.h"
#include "lr_schedule.h"
#include "metrics.h"
#include "next_batch.h"
#include "partition_cache.h"
#include "px_kernel.h"
#include "px_trace.h"
#include "px_train.h"
#include "px_weights.h"
#include "rank_threads.h"
#include "run_dir.h"
#include "save_infer.h"
#include "save_onnx.h"
#include "sparse/dst.h"
#include "sparse/masked.h"
#include "sparse/sparse_stats.h"
#include "sync_mode.h"
#include "tp_slabs.h"
#include "train_flags.h"
#include "trace_write.h"
#include "train_stats.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double unix_time(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

/* For failures every rank has found at the same point (so no rank is left
 * waiting): one message from rank 0, a clean MPI shutdown, the status. */
static void exit_all(int status) __attribute__((noreturn));
static void exit_all(int status) {
    fflush(stdout);
    px_comm_finalize();
    exit(status);
}

static void fail_all(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail_all(const char *fmt, ...) {
    if (px_comm_rank() == 0) {
        va_list ap;
        va_start(ap, fmt);
        fflush(stdout);
        fputs("error: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    exit_all(1);
}

/* A check every rank makes at the same point of the setup (the data, the
 * weights): when some rank failed, the lowest of them says why, once, and
 * every rank ends with status 1; no MPI_Abort, whose banner would bury the
 * message. Collective. */
static void setup_check(int failed, const char *msg) {
    int64_t first = px_comm_min_i64(failed ? px_comm_rank() : INT64_MAX);
    if (first == INT64_MAX) return;
    if (first == px_comm_rank()) {
        fflush(stdout);
        fprintf(stderr, "error: %s\n", msg);
    }
    exit_all(1);
}

static int64_t numel_of(int64_t rank, const int64_t *dims) {
    int64_t n = 1;
    for (int64_t i = 0; i < rank; i++) n *= dims[i];
    return n;
}

/* The descriptor comes from the compiler; a broken one is an internal error. */
static void check_program(const px_program_desc *p) {
    if (p->abi != PX_PROGRAM_ABI)
        px_rt_fail("internal error: program descriptor ABI %lld, runtime ABI %d", (long long)p->abi,
                   PX_PROGRAM_ABI);
    if (!p->optim) px_rt_fail("internal error: training program without an optimizer");
    if (p->optim->kind < 0 || p->optim->kind >= PX_OPTIM_COUNT)
        px_rt_fail("internal error: unknown optimizer kind %lld", (long long)p->optim->kind);
    if (p->loss_output < 0 || p->loss_output >= p->n_outputs)
        px_rt_fail("internal error: loss output %lld of %lld", (long long)p->loss_output,
                   (long long)p->n_outputs);
    const px_io_desc *loss = &p->outputs[p->loss_output];
    if (loss->dtype != 1 || loss->nbytes != 4)
        px_rt_fail("internal error: the loss '%s' is not a float32 scalar", loss->name);
    if (p->batch < 1) px_rt_fail("internal error: batch %lld", (long long)p->batch);
    for (int64_t i = 0; i < p->n_inputs; i++) {
        const px_io_desc *in = &p->inputs[i];
        if (in->rank < 1 || in->dims[0] != p->batch)
            px_rt_fail("internal error: input '%s' does not have the batch (%lld) as dim 0",
                       in->name, (long long)p->batch);
    }
    for (int64_t v = 0; v < p->n_vars; v++) {
        const px_var_desc *d = &p->vars[v];
        if (d->dtype != 1 || d->nbytes != 4 * numel_of(d->rank, d->dims))
            px_rt_fail("internal error: variable '%s' is not a float32 array of its shape",
                       d->name);
    }
}

/* Optimizer state of the replicated variables (PS variables keep theirs on
 * the shards), zeroed as PyTorch's optimizers start. */
static void alloc_slots(const px_program_desc *p) {
    px_optim_setup(p);
    int n_slots = px_optim_n_slots(p->optim->kind);
    px_train.slots = calloc((size_t)p->n_vars * PX_OPTIM_MAX_SLOTS + 1, sizeof(float *));
    if (!px_train.slots) px_rt_fail("out of memory for optimizer state");
    for (int64_t v = 0; v < p->n_vars; v++) {
        /* masked weights keep theirs packed (runtime/sparse/masked.h);
         * --pp: another stage's variables are not held here */
        if (p->vars[v].sync == PX_SYNC_PS || px_sparse_of_var(v) >= 0 || !px_var_held(p, v))
            continue;
        for (int k = 0; k < n_slots; k++) {
            float *s = calloc((size_t)(p->vars[v].nbytes / 4) + 1, sizeof(float));
            if (!s) px_rt_fail("out of memory for the optimizer state of '%s'", p->vars[v].name);
            px_train.slots[v * PX_OPTIM_MAX_SLOTS + k] = s;
        }
    }
}

static void free_slots(const px_program_desc *p) {
    for (int64_t i = 0; px_train.slots && i < p->n_vars * PX_OPTIM_MAX_SLOTS; i++)
        free(px_train.slots[i]);
    free(px_train.slots);
    px_train.slots = NULL;
}

/* Fails before any training when an output could not be written at the end
 * (the run directory is created first). */
static void check_outputs_writable(const px_train_flags *f) {
    char err[4400];
    if (f->run_dir && px_run_dir_create(f->run_dir, err, sizeof err)) px_rt_fail("%s", err);
    px_named_path outs[PX_TRAIN_OUTPUTS];
    char data_names[PX_MODEL_OUTPUTS][PX_PATH_NAME_MAX];
    int n = px_train_outputs(f, 0, outs, data_names);
    for (int i = 0; i < n; i++)
        if (outs[i].path && px_check_writable(outs[i].path, err, sizeof err))
            px_rt_fail("%s: %s", outs[i].flag, err);
}

/* No output of the run may be one of its inputs (out_paths.h): the program
 * itself, the model its weights come from and that model's external data,
 * the data and evaluation files, the checkpoint being resumed and its
 * pieces (which --checkpoint may continue: it writes new pieces and
 * replaces the manifest only once they are whole). Every rank checks, before
 * anything is written; one that finds a clash names it, and every rank
 * stops (status 2, a bad command line). */
static void check_outputs_are_not_inputs(const px_program_desc *p, const px_train_flags *f,
                                         int rank, const char *argv0) {
    px_path_list ins = {0};
    char self[4096], msg[9000] = "";
    int oom = px_self_path(self, sizeof self) == 0 && px_path_list_add(&ins, "the program", self);
    oom = oom || px_weights_input_files(f->weights ? "--weights" : "the model's weights", &ins) ||
          px_data_input_files(p, f->data, "--data", &ins) ||
          (f->eval_data && px_data_input_files(p, f->eval_data, "--eval-data", &ins));
    px_named_path outs[PX_TRAIN_OUTPUTS];
    char data_names[PX_MODEL_OUTPUTS][PX_PATH_NAME_MAX];
    /* The whole model's size: --save-infer's is at most that. */
    int external = px_save_is_external(p, p->onnx_base_bytes, NULL, f->save_external);
    int n = px_train_outputs(f, external, outs, data_names);
    int clash = !oom && px_find_input_clash(outs, n, ins.items, ins.n, msg, sizeof msg);
    const char *models[3] = {f->save, f->keep_best, f->save_infer};
    const char *model_flags[3] = {"--save", "--keep-best", "--save-infer"};
    for (int k = 0; k < 3 && !clash; k++)
        if (models[k] && px_is_char_device(models[k]) &&
            px_save_is_external(p, p->onnx_base_bytes, NULL, 0)) {
            /* OUT.onnx.data would be a file next to the device */
            snprintf(msg, sizeof msg,
                     "%s %s is a character device, and the model's weights need external data "
                     "(at least 2 GiB), a file next to it: give a path in a writable folder",
                     model_flags[k], models[k]);
            clash = 1;
        }
    if (!oom && !clash && f->resume) {
        /* The same check against the resumed checkpoint, but --checkpoint
         * may be it. */
        px_path_list ck = {0};
        oom = px_checkpoint_input_files(f->resume, &ck);
        int from = f->checkpoint && px_same_file(f->checkpoint, f->resume) ? 1 : 0;
        clash = !oom && px_find_input_clash(outs + from, n - from, ck.items, ck.n, msg, sizeof msg);
        px_path_list_free(&ck);
    }
    px_path_list_free(&ins);
    if (oom) px_rt_fail("out of memory checking the run's files");
    int64_t first = px_comm_min_i64(clash ? rank : INT64_MAX);
    if (first == INT64_MAX) return;
    if (rank == first) {
        fflush(stdout);
        fprintf(stderr, "%s: %s\n", argv0, msg);
    }
    exit_all(2);
}

/* Every rank must train on the same data; compares each input's fingerprint
 * with rank 0's (a sharded dataset's: its manifest). Returns the combined
 * fingerprint. */
static uint64_t check_same_data(const px_source *src, const px_program_desc *p) {
    uint64_t all = px_hash64_u64(PX_HASH64_INIT, (uint64_t)src->samples);
    if (src->shards) {
        uint64_t h = px_source_fingerprint(src, 0);
        int r = px_comm_first_mismatch(h);
        if (r >= 0)
            fail_all("rank %d reads another dataset than rank 0 (its %s/manifest.txt differs): "
                     "every rank must see the same files",
                     r, src->dir);
        return px_hash64_u64(all, h);
    }
    for (int64_t i = 0; i < p->n_inputs; i++) {
        uint64_t h = px_source_fingerprint(src, i);
        int r = px_comm_first_mismatch(h);
        if (r >= 0) /* every rank knows r: one message, a clean exit */
            fail_all("rank %d reads different data for input '%s' than rank 0 (sample count, "
                     "shape or contents of %s differ): every rank must see the same files",
                     r, p->inputs[i].name, px_source_path(src, i));
        all = px_hash64_u64(all, h);
    }
    return all;
}

typedef struct run {
    const px_program_desc *p;
    px_train_flags fl;
    const char *argv0;
    int rank, ranks;
    /* The batch is split by data-parallel rank: with --tp K, the K ranks of
     * a tensor-parallel group read the same rows (rank / K of ranks / K). */
    int data_rank, data_ranks;
    px_source src;
    uint64_t data_fingerprint;
    int64_t start, total; /* steps [start, total) are trained */
    int64_t warmup;
    FILE *losses;
    px_metrics metrics;  /* the loss and the other scalar float outputs */
    double *vals;        /* their values of the current step (means over ranks), then
                            the step's learning rate (the --losses line) */
    double *smoothed;    /* their exponential moving averages (the progress line) */
    double *micro_vals;  /* --accumulate: one micro-batch's values */
    int64_t accumulate;  /* micro-batches per step (--accumulate; 1: none) */
    int64_t smoothed_n;  /* steps averaged so far */
    double step_seconds; /* moving average of a step's time (the progress rate) */
    int64_t timed_n;
    int evaluating; /* --eval-data given */
    px_eval eval;
    px_eval_metrics ranking; /* --eval-metrics (ranking.n 0: none) */
    int metric;              /* index of --early-stop-metric among the validation's values: the
                                metrics, then the --eval-metrics ones */
    int has_best;            /* a validation was done */
    int64_t best_step;       /* the best validation so far: after this step */
    double best_value;       /* its metric */
    int64_t stale;           /* validations since the best */
    int stopped_early;       /* --early-stop ended the run */
    px_infer_plan infer;     /* --save-infer's model */
    FILE *eval_log;
    FILE *progress; /* --run-dir's progress.csv */
    double t_start; /* when the first step began (elapsed time, ETA) */
    double started; /* Unix time of the start (run.json) */
    int argc;
    char **argv;
} run;

static void resume(run *r) {
    px_ckpt_state st;
    px_checkpoint_read(r->fl.resume, r->p, &st);
    const px_train_flags *f = &r->fl;
    /* Every rank read the same file (or px_checkpoint_read failed). */
    if (st.shuffle != f->shuffle || (st.shuffle && st.shuffle_seed != f->shuffle_seed)) {
        char was[64] = "without --shuffle";
        if (st.shuffle)
            snprintf(was, sizeof was, "with --shuffle %llu", (unsigned long long)st.shuffle_seed);
        fail_all("checkpoint %s was written by a run %s: resume with the same setting (the data "
                 "order depends on it)",
                 f->resume, was);
    }
    if (st.shuffle && st.shuffle_buffer != r->src.opts.shuffle_buffer)
        fail_all("checkpoint %s was written by a run with --shuffle-buffer %lld; this run uses "
                 "%lld: resume with the same setting (the data order depends on it)",
                 f->resume, (long long)st.shuffle_buffer, (long long)r->src.opts.shuffle_buffer);
    if (st.dropout_seed != f->dropout_seed)
        fail_all("checkpoint %s was written by a run with --dropout-seed %llu; this run uses %llu: "
                 "resume with the same seed",
                 f->resume, (unsigned long long)st.dropout_seed,
                 (unsigned long long)f->dropout_seed);
    px_comm_opts was = {.wire = (int)st.wire,
                        .wire_error_feedback = (int)st.error_feedback,
                        .sync_every = st.sync_every,
                        .local_sgd_after = st.local_sgd_after,
                        .staleness = st.staleness};
    if (px_sync_mode_differs(&was, &f->comm)) {
        char was_name[256], now_name[256], was_flags[256], now_flags[256];
        px_sync_mode_name(&was, was_name, sizeof was_name);
        px_sync_mode_name(&f->comm, now_name, sizeof now_name);
        px_sync_mode_flags(&was, was_flags, sizeof was_flags);
        px_sync_mode_flags(&f->comm, now_flags, sizeof now_flags);
        if (!f->allow_mode_change)
            fail_all("checkpoint %s was written under synchronization '%s' (%s); this run asks "
                     "for '%s' (%s): resume with the same --wire, --wire-error-feedback, "
                     "--sync-every, --local-sgd-after and --staleness, or give "
                     "--allow-mode-change",
                     f->resume, was_name, was_flags[0] ? was_flags : "no relaxed flag", now_name,
                     now_flags[0] ? now_flags : "no relaxed flag");
        if (r->rank == 0)
            fprintf(stderr,
                    "note: checkpoint %s was written under synchronization '%s'; continuing "
                    "under '%s' (--allow-mode-change)\n",
                    f->resume, was_name, now_name);
    }
    if (r->rank == 0 && (st.samples != r->src.samples || st.global_batch != r->src.global_batch ||
                         st.data_fingerprint != r->data_fingerprint))
        fprintf(stderr,
                "note: checkpoint %s was written with other data or another global batch (%lld "
                "samples, global batch %lld; now %lld and %lld): training continues at step "
                "%lld, but not as the interrupted run would have\n",
                f->resume, (long long)st.samples, (long long)st.global_batch,
                (long long)r->src.samples, (long long)r->src.global_batch, (long long)st.step + 1);
    r->start = st.step;
}

/* The automatic partition count the shards use now (0: none). */
static int64_t partitions_in_use(void) {
    px_comm_stats st;
    px_comm_get_stats(&st);
    return st.partitions_chosen;
}

/* --partitions auto: start the automatic variables at the count measured
 * before, the checkpoint's (--resume) or the cache's, so the shards are
 * set up in their final layout and no row moves. Rank 0 decides (the
 * files may be on its disk only) and tells the others. */
static void choose_start_partitions(run *r) {
    px_comm_opts *o = &r->fl.comm;
    if (o->partitions_override || o->partitions_search) return;
    int64_t parts = 0;
    if (r->rank == 0 && r->fl.resume) {
        px_ckpt_state st;
        px_checkpoint_peek(r->fl.resume, &st);
        parts = st.partitions;
    }
    if (r->rank == 0 && !parts && r->fl.partitions_cache) {
        char err[4400] = "";
        uint64_t key = px_partition_cache_key(r->p, r->ranks, o->ranks_per_node);
        int rc = px_partition_cache_read(r->fl.partitions_cache, key, &parts, err, sizeof err);
        if (rc < 0) px_rt_fail("%s", err);
        if (rc == 0 && err[0]) fprintf(stderr, "%s\n", err);
    }
    o->partitions_start = (int64_t)px_comm_bcast_u64((uint64_t)parts);
}

/* After --partitions search: its choice into --partitions-cache (rank 0). */
static void save_partition_choice(const run *r) {
    if (r->rank != 0 || !r->fl.comm.partitions_search || !r->fl.partitions_cache) return;
    int64_t parts = partitions_in_use();
    if (parts <= 0) return; /* the search did not finish */
    char err[4400];
    uint64_t key = px_partition_cache_key(r->p, r->ranks, r->fl.comm.ranks_per_node);
    if (px_partition_cache_write(r->fl.partitions_cache, key, parts, err, sizeof err))
        px_rt_fail("%s", err);
}

static px_ckpt_state state_after(const run *r, int64_t steps_done) {
    px_ckpt_state st = {
        .step = steps_done,
        .shuffle = r->fl.shuffle,
        .shuffle_seed = r->fl.shuffle_seed,
        .epoch = px_source_epoch(&r->src, steps_done),
        .samples = r->src.samples,
        .global_batch = r->src.global_batch,
        .data_fingerprint = r->data_fingerprint,
        .dropout_seed = r->fl.dropout_seed,
        .shuffle_buffer = r->src.opts.shuffle_buffer,
        .partitions = partitions_in_use(),
        .wire = r->fl.comm.wire,
        .error_feedback = r->fl.comm.wire_error_feedback,
        .sync_every = r->fl.comm.sync_every > 1 ? r->fl.comm.sync_every : 0,
        .local_sgd_after = r->fl.comm.sync_every > 1 ? r->fl.comm.local_sgd_after : 0,
        .staleness = r->fl.comm.staleness,
    };
    return st;
}

/* Loads and checks the data, fixes the step range. */
static void prepare(run *r) {
    const px_program_desc *p = r->p;
    char err[8192];
    px_source_opts so = {r->data_rank,  r->data_ranks,      r->accumulate,
                         r->fl.shuffle, r->fl.shuffle_seed, r->fl.shuffle_buffer};
    setup_check(px_source_open(&r->src, p, r->fl.data, &so, err, sizeof err) != 0, err);
    r->data_fingerprint = check_same_data(&r->src, p);
    /* A step's batch: the micro-batches of every rank. */
    int64_t global_batch = r->accumulate * (int64_t)r->data_ranks * p->batch;
    int64_t samples = r->src.samples;
    if (p->n_inputs == 0) {
        /* Nothing to read: every step is the same; only --steps makes sense. */
        if (!r->fl.steps) {
            if (r->rank == 0)
                fprintf(stderr, "%s: the model has no inputs: give --steps N\n", r->argv0);
            exit_all(2);
        }
        samples = global_batch;
    }
    /* The data is the same on every rank by now: so is this decision. */
    if (samples < global_batch)
        fail_all("the data in %s holds %lld samples, fewer than one global batch of %lld (%d "
                 "rank%s x batch %lld%s)",
                 r->fl.data, (long long)samples, (long long)global_batch, r->data_ranks,
                 r->data_ranks == 1 ? "" : "s", (long long)p->batch,
                 r->accumulate > 1 ? " x --accumulate" : "");
    if (px_source_start(&r->src, samples, global_batch))
        px_rt_fail("out of memory for the sample order (%lld samples)", (long long)samples);
    int64_t epochs = r->fl.epochs ? r->fl.epochs : 1;
    if (epochs > INT64_MAX / r->src.steps_per_epoch)
        fail_all("--epochs %lld of %lld steps each is too many steps", (long long)epochs,
                 (long long)r->src.steps_per_epoch);
    r->total = r->fl.steps ? r->fl.steps : epochs * r->src.steps_per_epoch;
}

/* "1:02:03", "2:03" */
static void print_duration(double seconds) {
    long long t = seconds > 0 ? (long long)(seconds + 0.5) : 0;
    if (t >= 3600)
        printf("%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
    else
        printf("%lld:%02lld", t / 60, t % 60);
}

/* Steps a moving average of the progress line spans: the log interval, at
 * least 20, so the line moves smoothly from one print to the next. */
static double smoothing_decay(const run *r) {
    double k = r->fl.log_every > 20 ? (double)r->fl.log_every : 20.0;
    return 1.0 - 2.0 / (k + 1.0);
}

/* Adds this step's metrics and duration (seconds; < 0: not timed, a
 * warm-up step) to the moving averages; both are debiased (divided by
 * 1 - decay^n), so the first steps are not pulled towards 0. */
static void smooth_step(run *r, double seconds) {
    double b = smoothing_decay(r);
    r->smoothed_n++;
    for (int i = 0; i < r->metrics.n; i++)
        r->smoothed[i] = b * r->smoothed[i] + (1 - b) * r->vals[i];
    if (seconds >= 0) {
        r->timed_n++;
        r->step_seconds = b * r->step_seconds + (1 - b) * seconds;
    }
}

static double debiased(const run *r, double ema, int64_t n) {
    double c = 1.0 - pow(smoothing_decay(r), (double)n);
    return n > 0 && c > 0 ? ema / c : 0;
}

/* Global samples per second at the moving average of the step time (0: no
 * step timed yet). */
static double smoothed_rate(const run *r) {
    double t = debiased(r, r->step_seconds, r->timed_n);
    return t > 0 ? (double)r->src.global_batch / t : 0;
}

/* Epoch of step s (0-based), from 1, and the epochs of the run. */
static int64_t epoch_of(const run *r, int64_t s) {
    return s / r->src.steps_per_epoch + 1;
}

static int64_t epochs_in_run(const run *r) {
    return (r->total + r->src.steps_per_epoch - 1) / r->src.steps_per_epoch;
}

/* The smoothed metrics (loss first), the learning rate, the epoch, the
 * smoothed rate, the elapsed time and the time left at the average speed
 * of this run so far. */
static void log_step(const run *r, int64_t s) {
    const px_program_desc *p = r->p;
    printf("step %lld/%lld", (long long)s + 1, (long long)r->total);
    for (int i = 0; i < r->metrics.n; i++) {
        char name[128];
        printf("  %s %.6f", px_metrics_name(&r->metrics, p, i, name, sizeof name),
               debiased(r, r->smoothed[i], r->smoothed_n));
    }
    printf("  lr %.4g  epoch %lld/%lld", r->vals[r->metrics.n], (long long)epoch_of(r, s),
           (long long)epochs_in_run(r));
    double rate = smoothed_rate(r);
    if (rate > 0)
        printf("  %.1f samples/s", rate);
    else
        printf("  (warm-up)");
    double elapsed = now_seconds() - r->t_start;
    int64_t done = s + 1 - r->start, left = r->total - s - 1;
    printf("  elapsed ");
    print_duration(elapsed);
    if (left > 0 && done > 0) {
        printf("  ETA ");
        print_duration(elapsed / (double)done * (double)left);
    }
    putchar('\n');
    fflush(stdout);
}

/* --run-dir's progress.csv line of step s (0-based). */
static void log_progress(const run *r, int64_t s) {
    double v[5] = {(double)epoch_of(r, s), now_seconds() - r->t_start, smoothed_rate(r),
                   debiased(r, r->smoothed[0], r->smoothed_n), r->vals[r->metrics.n]};
    px_csv_log_add(r->progress, s + 1, v, 5);
}

/* The CSV header "step,loss,<output>..." of --eval-log, and with ",lr" of
 * --losses. */
static void metrics_header(const run *r, char *buf, size_t cap, int with_lr) {
    size_t len = (size_t)snprintf(buf, cap, "step");
    for (int i = 0; i < r->metrics.n && len < cap; i++) {
        char name[128];
        len += (size_t)snprintf(buf + len, cap - len, ",%s",
                                px_metrics_name(&r->metrics, r->p, i, name, sizeof name));
    }
    if (with_lr && len < cap) snprintf(buf + len, cap - len, ",lr");
}

/* Before a run stops on a loss that is not finite: the logs keep the lines
 * so far. */
static void close_logs(run *r) {
    if (r->losses) fclose(r->losses);
    r->losses = NULL;
    if (r->eval_log) fclose(r->eval_log);
    r->eval_log = NULL;
    if (r->progress) fclose(r->progress);
    r->progress = NULL;
}

/* --eval-log's header: --losses' columns, then the --eval-metrics ones. */
static void eval_header(const run *r, char *buf, size_t cap) {
    metrics_header(r, buf, cap, 0);
    size_t len = strlen(buf);
    for (int i = 0; r->eval.ranking && i < r->eval.ranking->n && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, ",%s",
                                px_eval_metric_name(r->eval.ranking->kind[i]));
}

/* The name of value i of a validation: a metric, then an --eval-metrics one. */
static const char *value_name(const run *r, int i, char *buf, int cap) {
    if (i < r->metrics.n) return px_metrics_name(&r->metrics, r->p, i, buf, cap);
    snprintf(buf, (size_t)cap, "%s", px_eval_metric_name(r->ranking.kind[i - r->metrics.n]));
    return buf;
}

/* Whether v is better than the best so far for --early-stop-metric. */
static int improves(const run *r, double v) {
    if (!isfinite(v)) return 0;
    if (!r->has_best) return 1;
    return r->fl.metric_max ? v > r->best_value : v < r->best_value;
}

/* A validation after `steps_done` training steps: logged by rank 0; the
 * best so far kept (--keep-best), the stale count for --early-stop. Every
 * rank has the same means, so every rank decides alike. */
static void validate(run *r, int64_t steps_done) {
    int n = r->metrics.n + (r->eval.ranking ? r->eval.ranking->n : 0);
    double *means = calloc((size_t)n, sizeof(double));
    if (!means) px_rt_fail("out of memory");
    px_eval_run(&r->eval, r->p, &r->metrics, r->rank, means, !r->fl.eval_train_mode);
    /* NaN or infinity in the evaluation data (or a model that overflows on
     * it) stops the run as it does in training, before it is logged or
     * compared; every rank has the same means, so every rank stops. */
    for (int i = 0; i < r->metrics.n; i++) {
        if (isfinite(means[i])) continue;
        char name[128];
        close_logs(r);
        fail_all("the validation %s is %s after step %lld (--eval-data %s, mean over %d rank%s): "
                 "the evaluation data holds NaN or infinite values, or the model overflows on "
                 "it; training stopped, nothing more is written%s%s%s",
                 px_metrics_name(&r->metrics, r->p, i, name, sizeof name),
                 isnan(means[i]) ? "NaN"
                 : means[i] > 0  ? "+infinity"
                                 : "-infinity",
                 (long long)steps_done, r->fl.eval_data, r->ranks, r->ranks == 1 ? "" : "s",
                 r->fl.checkpoint ? " (the last checkpoint in " : "",
                 r->fl.checkpoint ? r->fl.checkpoint : "", r->fl.checkpoint ? " is kept)" : "");
    }
    double v = means[r->metric];
    int better = improves(r, v);
    if (r->rank == 0 && r->fl.log_every > 0) {
        printf("validation after step %lld:", (long long)steps_done);
        for (int i = 0; i < n; i++) {
            char name[128];
            printf("  %s %.6f", value_name(r, i, name, sizeof name), means[i]);
        }
        printf("  (%lld samples)%s\n", (long long)(r->eval.steps * r->src.global_batch),
               better && r->has_best && (r->fl.keep_best || r->fl.early_stop) ? "  best so far"
                                                                              : "");
        fflush(stdout);
    }
    if (r->eval_log) {
        px_csv_log_add(r->eval_log, steps_done, means, n);
        fflush(r->eval_log);
    }
    free(means);
    if (better) {
        r->has_best = 1;
        r->best_step = steps_done;
        r->best_value = v;
        r->stale = 0;
        if (r->fl.keep_best) {
            px_sparse_write_back(); /* masked weights: their live values */
            px_save_onnx(r->fl.keep_best, r->p, r->fl.save_external);
        }
    } else {
        r->stale++;
    }
    if (r->fl.early_stop && r->stale >= r->fl.early_stop) {
        r->stopped_early = 1;
        if (r->rank == 0 && r->fl.log_every > 0) {
            char name[128];
            printf("early stop after step %lld: %lld validation%s without a better %s than %.6f "
                   "(after step %lld)\n",
                   (long long)steps_done, (long long)r->stale, r->stale == 1 ? "" : "s",
                   value_name(r, r->metric, name, sizeof name), r->best_value,
                   (long long)r->best_step);
            fflush(stdout);
        }
    }
}

/* Every rank has the same mean, so every rank stops here. The losses so far
 * are on disk; no checkpoint or model is written from the broken state. */
static void stop_on_bad_loss(run *r, int64_t s, double loss) {
    close_logs(r);
    fail_all("the loss is %g at step %lld (mean over %d rank%s): training stopped; nothing more "
             "is written%s%s%s",
             loss, (long long)s + 1, r->ranks, r->ranks == 1 ? "" : "s",
             r->fl.checkpoint ? " (the last checkpoint in " : "",
             r->fl.checkpoint ? r->fl.checkpoint : "", r->fl.checkpoint ? " is kept)" : "");
}

/* A shard's initial rows, read from the model file by row range: no rank
 * materialises a whole table (px_comm_opts.read_rows). */
static void shard_rows_from_model(int64_t var, int64_t row0, int64_t n, float *dst) {
    const px_var_desc *d = &px_program.vars[var];
    int64_t w = px_weights_of_var(var);
    if (w >= 0) {
        px_weights_read_rows(w, row0, n, dst);
        return;
    }
    if (!d->data) px_rt_fail("variable '%s' has no initial value", d->name);
    int64_t dim = d->nbytes / 4 / (d->rank > 0 && d->dims[0] > 0 ? d->dims[0] : 1);
    memcpy(dst, (const float *)d->data + row0 * dim, sizeof(float) * (size_t)(n * dim));
}

/* The same rows mapped from the model file, or NULL (read them instead). */
static float *shard_rows_mapped(int64_t var, int64_t row0, int64_t n) {
    int64_t w = px_weights_of_var(var);
    return w >= 0 ? px_weights_map_rows(w, row0, n) : NULL;
}

/* Writes every page of the variables once before the first step. Untouched,
 * each page costs a fault (with a TLB shootdown: tens of microseconds on a VM)
 * the first time an update or a pull writes it, which made the first epoch
 * of an embedding model an order of magnitude slower than the rest. A
 * sparse parameter-server variable's storage is skipped: the step reads
 * it only through row caches, and a worker must not hold a copy of it. */
static void prefault_variables(const px_program_desc *p) {
    for (int64_t v = 0; v < p->n_vars; v++) {
        if (!p->vars[v].local_storage) continue; /* the step never touches it */
        volatile char *data = p->vars[v].data;
        if (!data) continue; /* no local storage */
        for (int64_t off = 0; off < p->vars[v].nbytes; off += 4096) data[off] = data[off];
    }
}

/* Warm-up steps left out of the rates: 2, or, when --partitions auto
 * searches (several shards), its steps (9: 1 + 2 for each of 4 candidate
 * counts) plus 13 more while the chosen layout settles: 22. With one shard
 * nothing is searched. */
static int64_t default_warmup(void) {
    int64_t tuning = px_comm_tuning_steps();
    return tuning > 0 ? tuning + 13 : 2;
}

/* --lr and --lr-schedule: the learning rate every update of step s (0-based)
 * uses, for the replicas and the shards alike (px_optim_lr). Without
 * either flag the compiled rate is used untouched. */
static double base_lr(const run *r) {
    return r->fl.lr_given ? r->fl.lr : r->p->optim->lr;
}

static void set_step_lr(const run *r, int64_t s) {
    const px_train_flags *f = &r->fl;
    if (!f->lr_given && !f->lr_schedule && f->schedule.warmup == 0) return;
    px_train.lr_override = 1;
    px_train.lr = base_lr(r) * px_lr_factor(&f->schedule, s);
}

/* Micro-batch m of step s (m = 0 without --accumulate): the compiled
 * step on its rows, the updates at the last one; vals = its metrics, means
 * over the ranks. The communication layer counts micro-batches as its
 * steps: the prefetch of the next one's rows follows them. */
static void run_micro(run *r, int64_t s, int64_t m, double *vals) {
    const px_program_desc *p = r->p;
    int64_t micro = s * r->accumulate + m;
    px_train.accum_i = m;
    double t0 = px_trace_begin();
    px_source_fill(&r->src, p, s, m);
    px_trace_end(PX_SPAN_DATA, -1, t0);
    px_next_batch_set_step(micro, r->total * r->accumulate);
    px_comm_step_begin(micro);
    t0 = px_trace_begin();
    p->step();
    px_trace_end(PX_SPAN_STEP, -1, t0);
    /* Before px_comm_step_end: automatic partitions may move the shards'
     * rows there, and the queued updates point at them. */
    if (px_train_last_micro() && px_train_updates_deferred()) {
        t0 = px_trace_begin();
        if (r->accumulate > 1) px_accum_finish();
        if (px_train.clip_max_norm > 0) px_clip_finish();
        px_trace_end(PX_SPAN_CLIP, -1, t0);
    }
    if (px_train_last_micro()) {
        /* the masks of --dst, then the dense storage the next step reads */
        px_dst_after_step(s + 1);
        px_sparse_step_done();
    }
    t0 = px_trace_begin();
    px_comm_step_end();
    px_trace_end(PX_SPAN_STEP_END, -1, t0);
    px_metrics_read(&r->metrics, p, vals);
    t0 = px_trace_begin();
    px_metrics_mean_over_ranks(&r->metrics, vals);
    px_trace_end(PX_SPAN_LOSS_MEAN, -1, t0);
}

/* The step loop. Returns what --stats and the last log line report. */
static px_run_summary train_steps(run *r) {
    const px_program_desc *p = r->p;
    px_run_summary sum = {.global_batch = r->src.global_batch,
                          .batch_per_rank = p->batch,
                          .first_step = r->start + 1,
                          .last_step = r->total};
    int64_t n = r->total - r->start;
    sum.steps = n > 0 ? n : 0;
    sum.warmup_steps = r->warmup;
    double t_count = now_seconds();
    r->t_start = t_count;
    int64_t K = r->fl.log_every;
    /* The progress line's rate comes from a moving average of the step
     * times after warm-up (validation and checkpoints left out), so it
     * follows the current speed without jumping; the summary covers them
     * all. */
    for (int64_t s = r->start; s < r->total; s++) {
        if (s - r->start == r->warmup) {
            px_comm_stats_reset();
            px_sparse_flops_reset();
            t_count = now_seconds();
        }
        double t_step = now_seconds();
        px_trace_set_step(s + 1);
        px_train.t = s + 1;
        set_step_lr(r, s);
        if (r->accumulate <= 1) {
            run_micro(r, s, 0, r->vals);
        } else { /* the mean of the micro-batches' values */
            for (int i = 0; i < r->metrics.n; i++) r->vals[i] = 0;
            for (int64_t m = 0; m < r->accumulate; m++) {
                run_micro(r, s, m, r->micro_vals);
                for (int i = 0; i < r->metrics.n; i++) r->vals[i] += r->micro_vals[i];
            }
            for (int i = 0; i < r->metrics.n; i++) r->vals[i] /= (double)r->accumulate;
        }
        double loss = r->vals[0];
        if (!isfinite(loss)) stop_on_bad_loss(r, s, loss);
        int64_t counted = s + 1 - r->start - r->warmup;
        double t_done = now_seconds();
        if (counted > 0) {
            sum.counted_steps = counted;
            sum.counted_seconds = t_done - t_count;
            px_comm_stats_mark_cpu();
        }
        r->vals[r->metrics.n] = px_train.lr_override ? px_train.lr : p->optim->lr;
        smooth_step(r, counted > 0 ? t_done - t_step : -1);
        if (r->losses) px_csv_log_add(r->losses, s + 1, r->vals, r->metrics.n + 1);
        if (r->progress) log_progress(r, s);
        int last = s + 1 == r->total;
        if (r->rank == 0 && K > 0 && ((s + 1) % K == 0 || last)) {
            if (r->losses) fflush(r->losses);
            if (r->progress) fflush(r->progress);
            log_step(r, s);
        }
        int epoch_end = (s + 1) % r->src.steps_per_epoch == 0;
        if (r->evaluating && ((r->fl.eval_every && (s + 1) % r->fl.eval_every == 0) ||
                              (r->fl.eval_every_epoch && epoch_end) || last)) {
            double t_eval = now_seconds();
            px_comm_sync_point(PX_SYNC_POINT_VALIDATION); /* one model to validate */
            validate(r, s + 1);
            /* Validation time is not training time: left out of the rates. */
            t_count += now_seconds() - t_eval;
            if (r->stopped_early) {
                r->total = s + 1; /* the run ends here, as if asked to */
                sum.last_step = r->total;
                sum.steps = r->total - r->start;
                last = 1;
            }
        }
        if (r->fl.checkpoint_every && (s + 1) % r->fl.checkpoint_every == 0 && !last) {
            px_ckpt_state st = state_after(r, s + 1);
            double t0 = px_trace_begin();
            px_comm_sync_point(PX_SYNC_POINT_CHECKPOINT);
            px_checkpoint_write(r->fl.checkpoint, p, &st);
            px_trace_end(PX_SPAN_CHECKPOINT, -1, t0);
        }
    }
    return sum;
}

static void print_plan(const run *r) {
    const px_program_desc *p = r->p;
    printf("training %s: %lld samples, global batch %lld (%d %s%s x %lld",
           p->model ? p->model : "model", (long long)r->src.samples, (long long)r->src.global_batch,
           r->data_ranks,
           p->pp > 1   ? "pipeline"
           : p->tp > 1 ? "tensor-parallel group"
                       : "rank",
           r->data_ranks == 1 ? "" : "s", (long long)p->batch);
    if (r->accumulate > 1) printf(" x %lld accumulated", (long long)r->accumulate);
    printf("), %lld steps per epoch", (long long)r->src.steps_per_epoch);
    if (r->fl.shuffle) printf(", shuffled (seed %llu)", (unsigned long long)r->fl.shuffle_seed);
    if (px_sync_mode_relaxed(&r->fl.comm)) {
        char mode[256];
        px_sync_mode_name(&r->fl.comm, mode, sizeof mode);
        printf(", synchronization: %s", mode);
    }
    if (r->fl.weights) printf(", weights from %s", r->fl.weights);
    if (r->start > 0)
        printf("; resuming at step %lld of %lld\n", (long long)r->start + 1, (long long)r->total);
    else
        printf("; %lld steps\n", (long long)r->total);
    fflush(stdout);
}

/* --early-stop-metric among the model's scalar float outputs: r->metric.
 * Returns 0, or 1 (bad flag) after rank 0 said why. */
static int find_metric(run *r) {
    px_train_flags *f = &r->fl;
    r->metric = -1;
    char name[128], list[2048] = "";
    size_t len = 0;
    for (int i = 0; i < r->metrics.n + r->ranking.n; i++) {
        value_name(r, i, name, sizeof name);
        if (len < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", name);
        if (f->metric_name ? !strcmp(name, f->metric_name) : i == 0) r->metric = i;
    }
    const char *why = NULL;
    if (r->metric < 0)
        why = "is not a scalar float output of the model";
    else if (r->metric > 0 && !f->metric_dir_given)
        why = "is not the loss: say whether lower or higher is better with :min or :max";
    if (!why) return 0;
    if (r->rank == 0)
        fprintf(stderr, "%s: --early-stop-metric %s: '%s' %s (the outputs: %s)\n", r->argv0,
                f->metric, f->metric_name, why, list);
    return 1;
}

/* --run-dir's run.json as the run stands (rank 0). */
static void write_run_config(const run *r, const char *status, int64_t steps_done) {
    const px_train_flags *f = &r->fl;
    if (r->rank != 0 || !f->run_dir) return;
    px_run_config c = {
        .status = status,
        .argc = r->argc,
        .argv = r->argv,
        .p = r->p,
        .ranks = r->ranks,
        .threads_per_rank = px_pool_threads(),
        .batch_per_rank = r->p->batch,
        .accumulate = r->accumulate,
        .global_batch = r->src.global_batch,
        .samples = r->src.samples,
        .steps_per_epoch = r->src.steps_per_epoch,
        .first_step = r->start + 1,
        .last_step = r->total,
        .epochs = epochs_in_run(r),
        .steps_done = steps_done,
        .lr = base_lr(r),
        .lr_schedule = f->lr_schedule,
        .lr_warmup = f->schedule.warmup,
        .clip_grad_norm = f->clip_grad_norm,
        .shuffle = f->shuffle,
        .shuffle_seed = f->shuffle_seed,
        .dropout_seed = f->dropout_seed,
        .resume = f->resume,
        .eval_data = r->evaluating ? f->eval_data : NULL,
        .eval_every = f->eval_every,
        .eval_every_epoch = f->eval_every_epoch,
        .eval_mode = f->eval_train_mode ? "train" : "eval",
        .early_stop = f->early_stop,
        .metric_higher_is_better = f->metric_max,
        .has_best = r->has_best,
        .best_step = r->best_step,
        .best_value = r->best_value,
        .keep_best = f->keep_best,
        .trace = f->trace,
        .save = f->save,
        .save_infer = f->save_infer,
        .checkpoint = f->checkpoint,
        .comm = &f->comm,
        .started = r->started,
        .finished = strcmp(status, "running") ? unix_time() : 0,
    };
    char metric[128];
    c.metric = value_name(r, r->metric, metric, sizeof metric);
    for (int i = 0; i < PX_RUN_FILES; i++) c.files[i] = f->run_files[i];
    c.files[PX_RUN_LOSSES] = f->losses;
    c.files[PX_RUN_STATS] = f->stats;
    c.files[PX_RUN_EVAL] = r->evaluating ? f->eval_log : NULL;
    char err[4400];
    if (px_run_config_write(f->run_files[PX_RUN_CONFIG], f->run_dir, &c, err, sizeof err))
        px_rt_fail("%s", err);
}

/* --run-dir: compile.json, the first run.json and progress.csv (rank 0). */
static void open_run_dir(run *r) {
    const px_train_flags *f = &r->fl;
    if (r->rank != 0 || !f->run_dir) return;
    char err[4400];
    if (px_run_compile_write(f->run_files[PX_RUN_COMPILE], r->p, err, sizeof err))
        px_rt_fail("%s", err);
    write_run_config(r, "running", r->start);
    r->progress = px_csv_log_open(f->run_files[PX_RUN_PROGRESS], "--run-dir progress.csv",
                                  "step,epoch,elapsed_seconds,samples_per_second,loss_smoothed,lr",
                                  r->start, 1, err, sizeof err);
    if (!r->progress) px_rt_fail("%s", err);
}

/* --tp K (compiled in): the rank count must be a multiple of K; the
 * batch is then split over the ranks / K groups. */
static void check_tp(run *r) {
    int64_t tp = r->p->tp > 1 ? r->p->tp : 1;
    if (r->ranks % tp != 0) {
        if (r->rank == 0)
            fprintf(stderr,
                    "%s: --tp %lld: this program was compiled for tensor-parallel groups of %lld "
                    "ranks, but runs on %d rank%s, not a multiple of %lld\n",
                    r->argv0, (long long)tp, (long long)tp, r->ranks, r->ranks == 1 ? "" : "s",
                    (long long)tp);
        exit_all(2);
    }
    if (tp > 1 && px_sync_mode_relaxed(&r->fl.comm)) {
        char mode[256];
        px_sync_mode_name(&r->fl.comm, mode, sizeof mode);
        if (r->rank == 0)
            fprintf(stderr,
                    "%s: --tp %lld: this program splits layers over tensor-parallel groups, "
                    "which train in exact synchronization only; --wire, --sync-every and "
                    "--staleness cannot relax it (asked: %s)\n",
                    r->argv0, (long long)tp, mode);
        exit_all(2);
    }
    int split = 0;
    for (int64_t v = 0; v < r->p->n_vars; v++) split |= px_tp_var_split(r->p, v);
    if (split && r->fl.clip_grad_norm > 0) {
        if (r->rank == 0)
            fprintf(stderr,
                    "%s: --clip-grad-norm: this program (--tp %lld) stores weights split over "
                    "its tensor-parallel groups, and clipping by the global norm does not "
                    "support them yet\n",
                    r->argv0, (long long)tp);
        exit_all(2);
    }
    r->data_rank = r->rank / (int)tp;
    r->data_ranks = r->ranks / (int)tp;
}

/* --pp S (compiled in): the rank count must be a multiple of K * S (K:
 * --tp); the batch is split over the ranks / (K * S) pipelines, whose
 * stages are set up here, before the first step. */
static void check_pp(run *r) {
    int64_t tp = r->p->tp > 1 ? r->p->tp : 1, pp = r->p->pp > 1 ? r->p->pp : 1;
    if (pp == 1) return;
    const char *refused = NULL;
    char mode[256] = "";
    if (r->ranks % (tp * pp) != 0)
        refused = "ranks";
    else if (px_sync_mode_relaxed(&r->fl.comm))
        refused = "relaxed";
    else if (r->fl.clip_grad_norm > 0)
        refused = "clip";
    if (refused && r->rank == 0) {
        if (strcmp(refused, "ranks") == 0)
            fprintf(stderr,
                    "%s: --pp %lld: this program was compiled for pipelines of %lld stages of "
                    "%lld rank%s (--tp), but runs on %d rank%s, not a multiple of %lld\n",
                    r->argv0, (long long)pp, (long long)pp, (long long)tp, tp == 1 ? "" : "s",
                    r->ranks, r->ranks == 1 ? "" : "s", (long long)(tp * pp));
        if (strcmp(refused, "relaxed") == 0) {
            px_sync_mode_name(&r->fl.comm, mode, sizeof mode);
            fprintf(stderr,
                    "%s: --pp %lld: this program's pipeline stages train in exact "
                    "synchronization only; --wire, --sync-every and --staleness cannot relax it "
                    "(asked: %s)\n",
                    r->argv0, (long long)pp, mode);
        }
        if (strcmp(refused, "clip") == 0)
            fprintf(stderr,
                    "%s: --clip-grad-norm: this program (--pp %lld) computes each stage's "
                    "gradients on its own ranks, and clipping by the global norm does not "
                    "support them yet\n",
                    r->argv0, (long long)pp);
    }
    if (refused) exit_all(2);
    px_comm_pp_setup((int)pp, (int)tp);
    r->data_rank = r->rank / (int)(tp * pp);
    r->data_ranks = r->ranks / (int)(tp * pp);
}

int px_train_main(int argc, char **argv) {
    double t_main = now_seconds();
    px_comm_init(&argc, &argv);
    run r;
    memset(&r, 0, sizeof r);
    r.p = &px_program;
    r.argv0 = argc > 0 ? argv[0] : "program";
    r.rank = px_comm_rank();
    r.ranks = px_comm_size();
    r.argc = argc;
    r.argv = argv;
    r.started = unix_time();
    int rc = px_train_flags_parse(argc, argv, &r.fl, r.rank == 0 ? stderr : NULL);
    /* Before any other collective: ranks given different flags would train
     * diverging replicas or wait for each other forever. */
    rc = px_train_flags_agree(rc, &r.fl, r.p, argc, argv, stderr);
    if (rc == PX_FLAGS_HELP && r.rank == 0) px_train_usage(stdout, r.argv0, r.p);
    if (rc != PX_FLAGS_OK) exit_all(rc == PX_FLAGS_HELP ? 0 : 2);
    const px_program_desc *p = r.p;
    check_program(p);
    check_tp(&r);
    check_pp(&r);
    r.accumulate = r.fl.accumulate;
    px_train.accum_k = r.accumulate;
    px_train.accum_i = 0;
    px_metrics_init(&r.metrics, p);
    if (r.fl.eval_metrics) {
        char err[1024];
        if (px_eval_metrics_parse(&r.ranking, r.fl.eval_metrics, err, sizeof err) ||
            px_eval_metrics_bind(&r.ranking, p, r.fl.eval_score, r.fl.eval_label, err,
                                 sizeof err)) {
            if (r.rank == 0) fprintf(stderr, "%s: %s\n", r.argv0, err);
            exit_all(2);
        }
    }
    if (find_metric(&r)) exit_all(2);
    if (r.fl.save_infer) { /* every rank builds the same model: one message */
        char err[4400];
        if (px_infer_plan_build(p, r.fl.n_outputs, r.fl.outputs, &r.infer, err, sizeof err)) {
            if (r.rank == 0) fprintf(stderr, "%s: %s\n", r.argv0, err);
            exit_all(2);
        }
    }
    if ((r.fl.save || r.fl.keep_best) && (!p->onnx_base || p->onnx_base_bytes <= 0)) {
        if (r.rank == 0)
            fprintf(stderr, "%s: %s: this program was compiled without its ONNX model\n", r.argv0,
                    r.fl.save ? "--save" : "--keep-best");
        exit_all(2);
    }
    if (r.rank == 0) check_outputs_writable(&r.fl);
    px_rank_threads_start(r.fl.threads, px_comm_ranks_sharing(px_machine_key()));
    px_blas_reserve();
    char werr[8800];
    setup_check(px_weights_open(p, r.fl.weights, werr, sizeof werr) != 0, werr);
    px_weights_load(p, r.fl.weights);
    check_outputs_are_not_inputs(p, &r.fl, r.rank, r.argv0);
    px_sparse_setup(p);

    prepare(&r);
    px_train.prog = p;
    px_train.t = 0;
    px_train.dropout_seed = r.fl.dropout_seed;
    px_train.clip_max_norm = r.fl.clip_grad_norm;
    alloc_slots(p);
    r.fl.comm.read_rows = shard_rows_from_model;
    r.fl.comm.map_rows = shard_rows_mapped;
    /* The parameter-server pulls of step s+1 travel during step s (--no-overlap: not). */
    px_next_batch_init(&r.src, p, r.accumulate);
    r.fl.comm.next_input = px_next_batch_input;
    choose_start_partitions(&r);
    px_comm_setup(p, &r.fl.comm);
    prefault_variables(p);
    if (r.fl.resume) resume(&r);

    char dst_err[600];
    if (px_dst_configure(&r.fl.dst, r.total, dst_err, sizeof dst_err)) {
        if (r.rank == 0) fprintf(stderr, "%s: %s (see --help)\n", r.argv0, dst_err);
        exit_all(2);
    }
    int64_t n = r.total - r.start;
    r.warmup = r.fl.warmup_steps >= 0 ? r.fl.warmup_steps : default_warmup();
    if (r.warmup > n - 1) r.warmup = n > 1 ? n - 1 : 0;
    int quiet = r.fl.log_every == 0;
    if (r.rank == 0 && !quiet) print_plan(&r);
    if (r.rank == 0 && r.fl.warmup_steps > r.warmup && n > 0)
        fprintf(stderr, "note: --warmup-steps %lld in a run of %lld steps: using %lld\n",
                (long long)r.fl.warmup_steps, (long long)n, (long long)r.warmup);
    if (r.rank == 0 && n <= 0)
        fprintf(stderr,
                "note: the checkpoint is at step %lld, the run ends at step %lld: nothing "
                "to train\n",
                (long long)r.start, (long long)r.total);
    r.vals = calloc((size_t)r.metrics.n + 1, sizeof(double));
    r.smoothed = calloc((size_t)r.metrics.n, sizeof(double));
    r.micro_vals = calloc((size_t)r.metrics.n, sizeof(double));
    if (!r.vals || !r.smoothed || !r.micro_vals) px_rt_fail("out of memory");
    char header[8192];
    metrics_header(&r, header, sizeof header, 1);
    if (r.rank == 0 && r.fl.losses) {
        char err[4400];
        r.losses = px_csv_log_open(r.fl.losses, "--losses", header, r.start, 1, err, sizeof err);
        if (!r.losses) px_rt_fail("%s", err);
    }
    metrics_header(&r, header, sizeof header, 0);
    if (r.fl.eval_data && n > 0) {
        r.evaluating = 1;
        char eerr[8400];
        setup_check(px_eval_open(&r.eval, p, r.fl.eval_data, r.data_rank, r.data_ranks, eerr,
                                 sizeof eerr) != 0,
                    eerr);
        setup_check(px_eval_check(&r.eval, p, r.data_ranks, eerr, sizeof eerr) != 0, eerr);
        if (r.ranking.n) r.eval.ranking = &r.ranking;
        if (r.rank == 0 && r.eval.dropped && !quiet)
            fprintf(stderr,
                    "note: --eval-data %s: the last %lld samples do not fill a global batch of "
                    "%lld and are left out of the validation\n",
                    r.fl.eval_data, (long long)r.eval.dropped, (long long)r.src.global_batch);
        if (r.rank == 0 && r.fl.eval_log) {
            char err[4400];
            char eheader[8192];
            eval_header(&r, eheader, sizeof eheader);
            r.eval_log =
                px_csv_log_open(r.fl.eval_log, "--eval-log", eheader, r.start, 0, err, sizeof err);
            if (!r.eval_log) px_rt_fail("%s", err);
        }
    }
    if (r.fl.trace) {
        (void)px_comm_mean(0); /* every rank starts its clock together */
        px_trace_start();
    }
    open_run_dir(&r);

    px_run_summary sum = train_steps(&r);
    save_partition_choice(&r);
    sum.data_bytes_read = px_source_bytes_read(&r.src);
    sum.data_bytes = px_source_bytes_total(&r.src);
    sum.sharded = r.src.shards != NULL;
    sum.startup_seconds = r.t_start - t_main;
    sum.comm = &r.fl.comm;
    /* One model for --save and the last checkpoint (local SGD's replicas
     * averaged; nothing in exact mode). */
    px_comm_sync_point(r.fl.checkpoint ? PX_SYNC_POINT_CHECKPOINT : PX_SYNC_POINT_VALIDATION);

    char err[4400];
    if (r.losses) {
        int bad = px_csv_log_close(r.losses, "--losses", r.fl.losses, err, sizeof err);
        r.losses = NULL;
        if (bad) px_rt_fail("%s", err);
    }
    if (r.eval_log) {
        int bad = px_csv_log_close(r.eval_log, "--eval-log", r.fl.eval_log, err, sizeof err);
        r.eval_log = NULL;
        if (bad) px_rt_fail("%s", err);
    }
    if (r.progress) {
        int bad = px_csv_log_close(r.progress, "--run-dir", r.fl.run_files[PX_RUN_PROGRESS], err,
                                   sizeof err);
        r.progress = NULL;
        if (bad) px_rt_fail("%s", err);
    }
    /* With nothing to train, --resume A --checkpoint B still writes B: the
     * same state in this run's ranks and partitions. */
    int rewrite = r.fl.resume && r.fl.checkpoint && strcmp(r.fl.resume, r.fl.checkpoint);
    if (r.fl.checkpoint && (n > 0 || rewrite)) {
        px_ckpt_state st = state_after(&r, n > 0 ? r.total : r.start);
        px_checkpoint_write(r.fl.checkpoint, p, &st);
    }
    if (r.fl.save || r.fl.save_infer) px_sparse_write_back();
    if (r.fl.save) px_save_onnx(r.fl.save, p, r.fl.save_external);
    if (r.fl.save_infer) px_save_infer(r.fl.save_infer, p, &r.infer, r.fl.save_external);
    if (r.fl.stats) px_write_stats(r.fl.stats, &sum);
    if (r.fl.trace) px_trace_write(r.fl.trace, p);
    write_run_config(&r, r.stopped_early ? "stopped_early" : "finished", n > 0 ? r.total : r.start);
    if (r.rank == 0 && !quiet && n > 0)
        printf("trained %lld steps (%lld..%lld): %.1f samples/s over the last %lld\n",
               (long long)sum.steps, (long long)sum.first_step, (long long)sum.last_step,
               px_samples_per_second(&sum), (long long)sum.counted_steps);
    px_next_batch_free();
    px_source_close(&r.src);
    if (r.evaluating) px_eval_close(&r.eval);
    px_metrics_free(&r.metrics);
    free(r.vals);
    free(r.smoothed);
    free(r.micro_vals);
    px_infer_plan_free(&r.infer);
    px_train_flags_free(&r.fl);
    px_trace_reset();
    free_slots(p);
    px_sparse_teardown();
    exit_all(0);
    return 0;
}
