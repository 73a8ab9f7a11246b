/* Inference: load every input, run the step once per batch, write outputs.
 *
 * An input may hold any number of samples along dim 0: the last batch may be
 * partial. It is then padded with copies of its last sample (valid data, so
 * index inputs stay in range), and only the real samples' rows of the
 * outputs are written, which needs every output to be per sample (leading
 * dim = the batch). */
#include "bag_offsets.h"
#include "data.h"
#include "npy.h"
#include "out_paths.h"
#include "px_program.h"
#include "px_weights.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* Loads the input file (its name into path[PATH_CAP]) and returns how many
 * compiled batches it holds (the last one possibly partial: *last gets its
 * sample count), or -1. */
enum { PATH_CAP = 4096 };
static int64_t load_input(const char *dir, const px_io_desc *in, px_array *a, int64_t *last,
                          char *path) {
    char err[1024];
    struct stat st;
    px_data_file_name(path, PATH_CAP, dir, in->name, ".npy");
    int rc;
    if (stat(path, &st) == 0)
        rc = px_npy_load(path, a, err, sizeof err);
    else {
        px_data_file_name(path, PATH_CAP, dir, in->name, ".pb");
        if (stat(path, &st) != 0) {
            px_data_file_name(path, PATH_CAP, dir, in->name, ".npy");
            fprintf(stderr, "error: no data for input '%s': expected %s (or .pb)\n", in->name,
                    path);
            return -1;
        }
        rc = px_pb_load(path, a, err, sizeof err);
    }
    if (rc) {
        fprintf(stderr, "error: %s\n", err);
        return -1;
    }
    /* bfloat16 data arrives as uint16 bit patterns (NumPy has no bfloat16). */
    if (in->dtype == 16 && a->dtype == 4) a->dtype = 16;
    if (a->dtype != in->dtype) {
        fprintf(stderr, "error: input '%s' (%s) holds %s data, the model expects %s\n", in->name,
                path, px_rt_dtype_name(a->dtype), px_rt_dtype_name((int)in->dtype));
        return -1;
    }
    char want[256], got[256];
    px_shape_text(want, sizeof want, (int)in->rank, in->dims);
    px_shape_text(got, sizeof got, a->rank, a->dims);
    if (a->rank != in->rank) goto bad_shape;
    *last = in->rank > 0 ? in->dims[0] : 1;
    if (a->numel * (int64_t)px_rt_dtype_size(a->dtype) == in->nbytes) {
        for (int i = 0; i < a->rank; i++)
            if (a->dims[i] != in->dims[i]) goto bad_shape;
        return 1;
    }
    if (in->rank == 0 || in->dims[0] == 0 || a->dims[0] == 0) goto bad_shape;
    for (int i = 1; i < a->rank; i++)
        if (a->dims[i] != in->dims[i]) goto bad_shape;
    int64_t batches = (a->dims[0] + in->dims[0] - 1) / in->dims[0];
    *last = a->dims[0] - (batches - 1) * in->dims[0];
    return batches;
bad_shape:
    fprintf(stderr,
            "error: input '%s' (%s) has shape %s; the model was compiled for %s (or samples "
            "along dim 0 with that per-sample shape)\n",
            in->name, path, got, want);
    return -1;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Copies batch b in. rows >= 0: a partial batch of that many samples
 * (check_partial made sure every input is per sample), padded with copies
 * of its last sample; rows < 0: a full batch. */
static void load_batch(const px_program_desc *p, const px_array *ins, int64_t b, int64_t rows) {
    for (int64_t i = 0; i < p->n_inputs; i++) {
        const px_io_desc *in = &p->inputs[i];
        const char *src = (const char *)ins[i].data + b * in->nbytes;
        if (rows < 0 || in->rank == 0 || rows >= in->dims[0]) {
            memcpy(in->data, src, (size_t)in->nbytes);
            continue;
        }
        int64_t row = in->nbytes / in->dims[0];
        memcpy(in->data, src, (size_t)(rows * row));
        for (int64_t r = rows; r < in->dims[0]; r++)
            memcpy((char *)in->data + r * row, src + (rows - 1) * row, (size_t)row);
    }
}

/* Checks that a run with a partial last batch of `last` samples (of
 * `batch`) can be done: every input holds that many samples in its last
 * batch and every output is per sample. */
static int check_partial(const px_program_desc *p, const int64_t *lasts, int64_t batch) {
    int64_t last = lasts[0];
    for (int64_t i = 0; i < p->n_inputs; i++)
        if (p->inputs[i].dims[0] != batch || lasts[i] != last) {
            fprintf(stderr,
                    "error: input '%s' does not hold the same number of samples as '%s' (a "
                    "partial last batch of %lld samples needs every input to have samples "
                    "along dim 0, the same number of them)\n",
                    p->inputs[i].name, p->inputs[0].name, (long long)last);
            return -1;
        }
    for (int64_t o = 0; o < p->n_outputs; o++)
        if (p->outputs[o].rank == 0 || p->outputs[o].dims[0] != batch) {
            char shape[256];
            px_shape_text(shape, sizeof shape, (int)p->outputs[o].rank, p->outputs[o].dims);
            fprintf(stderr,
                    "error: the last batch holds %lld samples, not %lld, and output '%s' (shape "
                    "%s) is not one row per sample, so it cannot be cut to the real samples; "
                    "give a multiple of %lld samples, or compile with --infer --outputs NAME "
                    "for per-sample outputs\n",
                    (long long)last, (long long)batch, p->outputs[o].name, shape, (long long)batch);
            return -1;
        }
    return 0;
}

/* The EmbeddingBag offsets among the inputs (PX_CHECK_BAG_OFFSETS), batch
 * by batch as the step will see them (a partial last batch: its real
 * samples), before any step runs. 0, or -1 with the message printed. */
static int check_bag_offsets(const px_program_desc *p, const px_array *ins, char *const *paths,
                             int64_t batches, const int64_t *lasts) {
    for (int64_t c = 0; c < p->n_index_checks; c++) {
        const px_index_check *k = &p->index_checks[c];
        if (k->kind != PX_CHECK_BAG_OFFSETS || k->input < 0 || k->input >= p->n_inputs) continue;
        const px_io_desc *in = &p->inputs[k->input];
        if ((in->dtype != 6 && in->dtype != 7) || in->rank < 1 || in->dims[0] < 1) continue;
        int64_t width = in->dtype == 6 ? 4 : 8, per_batch = in->nbytes / width,
                per_sample = per_batch / in->dims[0];
        for (int64_t b = 0; b < batches; b++) {
            int64_t count = b + 1 < batches ? per_batch : lasts[k->input] * per_sample;
            const char *why = "";
            const char *v = (const char *)ins[k->input].data + b * in->nbytes;
            int64_t j = px_bag_offsets_bad(v, (int)in->dtype, count, k->hi - 1, &why);
            if (j < 0) continue;
            int64_t x = 0;
            if (width == 4) {
                int32_t x32;
                memcpy(&x32, v + 4 * j, 4);
                x = x32;
            } else {
                memcpy(&x, v + 8 * j, 8);
            }
            char target[600];
            px_index_check_target(k, target, sizeof target);
            fprintf(
                stderr,
                "error: input '%s' (%s), sample %lld (position %lld in batch %lld): offset %lld: "
                "%s, for %s (in each batch the offsets start at 0, never decrease and "
                "do not pass its %lld indices, as PyTorch's nn.EmbeddingBag takes them); "
                "no batch was run\n",
                in->name, paths[k->input], (long long)(b * in->dims[0] + j / per_sample),
                (long long)j, (long long)b, (long long)x, why, target, (long long)(k->hi - 1));
            return -1;
        }
    }
    return 0;
}

/* Times `steps` runs of the step on the first batch (after one warm-up run).
 * Each run copies the batch in first, as a real run does: the buffer plan
 * reuses an input's memory once the input is dead. */
static int bench_step(const px_program_desc *p, const px_array *ins, long steps) {
    double *t = malloc(sizeof *t * (size_t)steps);
    if (!t) {
        fprintf(stderr, "error: out of memory for --bench-steps %ld\n", steps);
        return -1;
    }
    load_batch(p, ins, 0, -1);
    p->step();
    double total = 0;
    for (long s = 0; s < steps; s++) {
        double t0 = now_seconds();
        load_batch(p, ins, 0, -1);
        p->step();
        t[s] = now_seconds() - t0;
        total += t[s];
    }
    qsort(t, (size_t)steps, sizeof *t, cmp_double);
    printf("bench: %ld steps, median %.3f us, mean %.3f us\n", steps, 1e6 * t[steps / 2],
           1e6 * total / (double)steps);
    free(t);
    return 0;
}

/* The files of the run against the output policy (out_paths.h), before any
 * is read or written: two inputs or two outputs with one file, an output
 * that is an input (a data file, the weights, the program). 0, or -1 with
 * the message printed. */
static int check_files(const px_program_desc *p, const char *data_dir, const char *out_dir) {
    char msg[9000], self[4096];
    if (px_data_name_clash(p->inputs, p->n_inputs, data_dir, "input", msg, sizeof msg) ||
        px_data_name_clash(p->outputs, p->n_outputs, out_dir, "output", msg, sizeof msg)) {
        fprintf(stderr, "error: %s\n", msg);
        return -1;
    }
    px_path_list ins = {0}, outs = {0};
    int bad = px_self_path(self, sizeof self) == 0 && px_path_list_add(&ins, "the program", self);
    bad = bad || px_weights_input_files("the weights", &ins) ||
          px_data_input_files(p, data_dir, "--data", &ins);
    for (int64_t o = 0; o < p->n_outputs && !bad; o++) {
        char path[4096];
        px_data_file_name(path, sizeof path, out_dir, p->outputs[o].name, ".npy");
        bad = px_path_list_add(&outs, "--out", path);
    }
    if (bad) snprintf(msg, sizeof msg, "out of memory");
    for (int i = 0; i < outs.n && !bad; i++)
        bad = px_output_kind_ok("--out", outs.items[i].path, msg, sizeof msg) ||
              px_find_input_clash(&outs.items[i], 1, ins.items, ins.n, msg, sizeof msg);
    px_path_list_free(&ins);
    px_path_list_free(&outs);
    if (bad) fprintf(stderr, "error: %s\n", msg);
    return bad ? -1 : 0;
}

int px_run_inference(const char *data_dir, const char *out_dir, long bench_steps) {
    const px_program_desc *p = &px_program;
    if (check_files(p, data_dir, out_dir)) return 2;
    int rc = 1;
    int64_t batches = -1;
    px_array *ins = calloc((size_t)p->n_inputs + 1, sizeof *ins);
    char **outs = calloc((size_t)p->n_outputs + 1, sizeof *outs);
    int64_t *lasts = calloc((size_t)p->n_inputs + 1, sizeof *lasts);
    char **paths = calloc((size_t)p->n_inputs + 1, sizeof *paths);
    if (!ins || !outs || !lasts || !paths) {
        fprintf(stderr, "error: out of memory\n");
        free(ins);
        free(outs);
        free(lasts);
        free(paths);
        return 1;
    }
    /* batch: samples per compiled batch; last: samples in the last batch */
    int64_t batch = p->n_inputs && p->inputs[0].rank ? p->inputs[0].dims[0] : 1, last = batch;
    for (int64_t i = 0; i < p->n_inputs; i++) {
        paths[i] = malloc(PATH_CAP);
        if (!paths[i]) {
            fprintf(stderr, "error: out of memory\n");
            goto cleanup;
        }
        int64_t k = load_input(data_dir, &p->inputs[i], &ins[i], &lasts[i], paths[i]);
        if (k < 0) goto cleanup;
        if (batches >= 0 && k != batches) {
            fprintf(stderr, "error: input '%s' holds %lld batches but '%s' holds %lld\n",
                    p->inputs[i].name, (long long)k, p->inputs[0].name, (long long)batches);
            goto cleanup;
        }
        batches = k;
    }
    if (batches < 0) batches = 1; /* a model without inputs runs once */
    for (int64_t i = 0; i < p->n_inputs; i++)
        if (lasts[i] < (p->inputs[i].rank ? p->inputs[i].dims[0] : 1)) {
            if (check_partial(p, lasts, batch)) goto cleanup;
            last = lasts[0];
            break;
        }
    if (check_bag_offsets(p, ins, paths, batches, lasts)) goto cleanup;
    if (bench_steps > 0 && bench_step(p, ins, bench_steps)) goto cleanup;
    for (int64_t o = 0; o < p->n_outputs; o++) {
        outs[o] = malloc((size_t)(p->outputs[o].nbytes * batches) + 1);
        if (!outs[o]) {
            fprintf(stderr, "error: out of memory for output '%s'\n", p->outputs[o].name);
            goto cleanup;
        }
    }
    for (int64_t b = 0; b < batches; b++) {
        int64_t rows = b + 1 < batches || last == batch ? -1 : last;
        load_batch(p, ins, b, rows);
        p->step();
        for (int64_t o = 0; o < p->n_outputs; o++) {
            int64_t bytes = p->outputs[o].nbytes;
            if (rows >= 0) bytes = bytes / batch * rows; /* the real samples' rows only */
            memcpy(outs[o] + b * p->outputs[o].nbytes, p->outputs[o].data, (size_t)bytes);
        }
    }
    if (mkdir(out_dir, 0777) && errno != EEXIST) {
        fprintf(stderr, "error: cannot create output folder %s: %s\n", out_dir, strerror(errno));
        goto cleanup;
    }
    for (int64_t o = 0; o < p->n_outputs; o++) {
        const px_io_desc *od = &p->outputs[o];
        int64_t dims[PX_NPY_MAX_RANK + 1];
        int rank = (int)od->rank;
        memcpy(dims, od->dims, sizeof(int64_t) * (size_t)rank);
        if (batches > 1) {
            if (rank == 0)
                dims[rank++] = batches;
            else
                dims[0] = dims[0] * (batches - 1) + (last < batch ? last : dims[0]);
        } else if (last < batch) {
            dims[0] = last;
        }
        char path[4096], err[1024];
        px_data_file_name(path, sizeof path, out_dir, od->name, ".npy");
        if (px_npy_save(path, (int)od->dtype, rank, dims, outs[o], err, sizeof err)) {
            fprintf(stderr, "error: %s\n", err);
            goto cleanup;
        }
    }
    rc = 0;
cleanup:
    for (int64_t i = 0; i < p->n_inputs; i++) {
        px_array_free(&ins[i]);
        free(paths[i]);
    }
    for (int64_t o = 0; o < p->n_outputs; o++) free(outs[o]);
    free(paths);
    free(ins);
    free(outs);
    free(lasts);
    return rc;
}
