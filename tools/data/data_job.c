#include "data_job.h"

#include "line_input.h"
#include "line_pipeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char px_data_common_help[] =
    "  -o DIR                 the dataset folder (created; with --split, DIR/<split> for "
    "each)\n"
    "  --split NAME=F,...     route each sample to one of several datasets: by fraction\n"
    "                         (train=0.9,eval=0.1: a hash of the sample's number decides,\n"
    "                         the same on every run), or by input file\n"
    "                         (train=day_0.gz+day_1.gz,eval=day_2.gz)\n"
    "  --max-bad-lines N      skip up to N malformed lines (each reported with its file and\n"
    "                         line, the first 10 in full); one more stops the conversion.\n"
    "                         Default 0: the first one stops it\n"
    "  --shard-rows N         samples per shard (default: about 64 MiB of samples)\n"
    "  --block-rows N         samples per checksummed block (default: about 64 KiB)\n"
    "  --threads N            threads that parse lines (1 to 32; default 1: one thread\n"
    "                         does everything); with N >= 2 one more reads the input and\n"
    "                         the main thread writes. The output is the same for any N\n"
    "  --overwrite            replace a finished dataset in DIR\n"
    "  --progress             draw the progress bar even when standard error is not a\n"
    "                         terminal; --no-progress: never\n"
    "  --quiet                no summary\n";

void px_data_job_init(px_data_job *j, const char *cmd) {
    memset(j, 0, sizeof *j);
    j->cmd = cmd;
    j->progress = -1;
    j->threads = 1;
}

int px_data_parse_count(const char *s, int64_t min, int64_t max, int64_t *out) {
    if (!*s || *s == '-' || *s == '+' || *s == ' ') return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max) return -1;
    *out = v;
    return 0;
}

static int count_flag(const char *flag, const char *v, int64_t min, int64_t *out, char *err,
                      size_t cap) {
    if (px_data_parse_count(v, min, (int64_t)1 << 50, out) == 0) return 1;
    snprintf(err, cap, "%s needs a whole number of at least %lld, not '%s'", flag, (long long)min,
             v);
    return -1;
}

int px_data_common_flag(px_data_job *j, int argc, char **argv, int *i, char *err, size_t cap) {
    const char *a = argv[*i];
    if (!strcmp(a, "--overwrite")) return j->overwrite = 1;
    if (!strcmp(a, "--progress")) return j->progress = 1;
    if (!strcmp(a, "--no-progress")) {
        j->progress = 0;
        return 1;
    }
    if (!strcmp(a, "--quiet")) return j->quiet = 1;
    static const char *const valued[] = {"-o",           "--split",      "--max-bad-lines",
                                         "--shard-rows", "--block-rows", "--threads"};
    int k = -1;
    for (int q = 0; q < 6; q++)
        if (!strcmp(a, valued[q])) k = q;
    if (k < 0) return 0;
    if (*i + 1 >= argc) {
        snprintf(err, cap, "%s needs a value", a);
        return -1;
    }
    const char *v = argv[++*i];
    switch (k) {
    case 0: j->out = v; return 1;
    case 1: j->split_spec = v; return 1;
    case 2: return count_flag(a, v, 0, &j->max_bad_lines, err, cap);
    case 3: return count_flag(a, v, 1, &j->shard_rows, err, cap);
    case 4: return count_flag(a, v, 1, &j->block_rows, err, cap);
    default: {
        int64_t n;
        if (px_data_parse_count(v, 1, 32, &n)) {
            snprintf(err, cap, "--threads needs a whole number from 1 to 32, not '%s'", v);
            return -1;
        }
        j->threads = (int)n;
        return 1;
    }
    }
}

static int split_name_ok(const char *s, size_t n) {
    if (n == 0 || n >= 64) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

/* train=0.9,eval=0.1 or train=a.gz+b.gz,eval=c.gz */
static int parse_split(px_data_job *j, char *err, size_t cap) {
    const char *p = j->split_spec;
    int fractions = 0, files = 0;
    double sum = 0;
    j->file_split = malloc(sizeof *j->file_split * (size_t)(j->n_files + 1));
    if (!j->file_split) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    for (int f = 0; f < j->n_files; f++) j->file_split[f] = -1;
    while (*p) {
        const char *eq = strchr(p, '='), *comma = strchr(p, ',');
        if (!comma) comma = p + strlen(p);
        if (!eq || eq > comma || !split_name_ok(p, (size_t)(eq - p)) ||
            j->n_splits == PX_MAX_SPLITS) {
            snprintf(err, cap,
                     "--split: '%s' is not NAME=FRACTION,... or NAME=FILE+FILE,... (at most 8 "
                     "names of letters, digits, '_' and '-')",
                     j->split_spec);
            return -1;
        }
        int s = j->n_splits++;
        snprintf(j->split_name[s], sizeof j->split_name[s], "%.*s", (int)(eq - p), p);
        for (int q = 0; q < s; q++)
            if (!strcmp(j->split_name[q], j->split_name[s])) {
                snprintf(err, cap, "--split: '%s' is named twice", j->split_name[s]);
                return -1;
            }
        char value[4096];
        snprintf(value, sizeof value, "%.*s", (int)(comma - eq - 1), eq + 1);
        char *end;
        errno = 0;
        double x = strtod(value, &end);
        if (*value && !*end && !errno) {
            fractions = 1;
            if (!(x > 0 && x <= 1)) {
                snprintf(err, cap, "--split: the fraction of '%s' must be in (0, 1], not %s",
                         j->split_name[s], value);
                return -1;
            }
            sum += x;
            j->cum[s] = sum;
        } else {
            files = 1;
            for (char *name = strtok(value, "+"); name; name = strtok(NULL, "+")) {
                int found = -1;
                for (int f = 0; f < j->n_files; f++)
                    if (!strcmp(j->files[f], name)) found = f;
                if (found < 0) {
                    snprintf(err, cap, "--split: '%s' is not one of the input files", name);
                    return -1;
                }
                if (j->file_split[found] >= 0) {
                    snprintf(err, cap, "--split: '%s' is given to two splits", name);
                    return -1;
                }
                j->file_split[found] = s;
            }
        }
        p = *comma ? comma + 1 : comma;
    }
    if (fractions && files) {
        snprintf(err, cap, "--split: give fractions or files, not both");
        return -1;
    }
    if (j->n_splits < 1) {
        snprintf(err, cap, "--split needs NAME=FRACTION,... or NAME=FILE+FILE,...");
        return -1;
    }
    j->by_file = files;
    if (fractions && (sum < 1 - 1e-9 || sum > 1 + 1e-9)) {
        snprintf(err, cap, "--split: the fractions add up to %g, not 1", sum);
        return -1;
    }
    if (fractions) j->cum[j->n_splits - 1] = 1.0;
    for (int f = 0; files && f < j->n_files; f++)
        if (j->file_split[f] < 0) {
            snprintf(err, cap, "--split: input file '%s' is in no split", j->files[f]);
            return -1;
        }
    return 0;
}

int px_data_job_check(px_data_job *j, char *err, size_t cap) {
    if (!j->out) {
        snprintf(err, cap, "-o DIR is required (the dataset folder)");
        return -1;
    }
    if (j->n_files < 1) {
        snprintf(err, cap, "no input file given");
        return -1;
    }
    return j->split_spec ? parse_split(j, err, cap) : 0;
}

int px_data_job_open(px_data_job *j, const px_ds_input *inputs, int n_inputs, char *err,
                     size_t cap) {
    int n = j->n_splits ? j->n_splits : 1;
    if (j->n_splits && mkdir(j->out, 0777) && errno != EEXIST) {
        snprintf(err, cap, "cannot create %s: %s", j->out, strerror(errno));
        return -1;
    }
    for (int s = 0; s < n; s++) {
        if (j->n_splits)
            snprintf(j->out_dir[s], sizeof j->out_dir[s], "%s/%s", j->out, j->split_name[s]);
        else
            snprintf(j->out_dir[s], sizeof j->out_dir[s], "%s", j->out);
        px_writer_opts o = {j->out_dir[s], j->shard_rows, j->block_rows,
                            j->overwrite,  j->quiet,      j->n_splits ? NULL : j->own_file};
        if (px_writer_open(&j->w[s], &o, inputs, n_inputs, err, cap)) return -1;
    }
    return 0;
}

const char *px_data_count(char *buf, size_t cap, int64_t n) {
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%lld", (long long)n), o = 0;
    for (int i = 0; i < len && (size_t)o + 2 < cap; i++) {
        if (i > 0 && digits[i - 1] != '-' && (len - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

int px_data_job_finish(px_data_job *j, char *err, size_t cap) {
    px_progress_end(&j->prog);
    int n = j->n_splits ? j->n_splits : 1;
    int64_t samples[PX_MAX_SPLITS], shards[PX_MAX_SPLITS], total = 0;
    for (int s = 0; s < n; s++) {
        samples[s] = px_writer_samples(j->w[s]);
        shards[s] = px_writer_shards(j->w[s]);
        total += samples[s];
    }
    for (int s = 0; s < n; s++) {
        int rc = px_writer_finish(j->w[s], err, cap);
        j->w[s] = NULL;
        if (rc) {
            for (int q = s + 1; q < n; q++) {
                px_writer_abort(j->w[q]);
                j->w[q] = NULL;
            }
            return -1;
        }
    }
    if (j->quiet) return 0;
    double sec = px_progress_seconds(&j->prog);
    char a[32], b[32], c[32];
    printf("%s: %s lines (%.2f GB) in %.1f s (%.0f MB/s): %s samples", j->cmd,
           px_data_count(a, sizeof a, j->lines), (double)j->bytes_in / 1e9, sec,
           sec > 0 ? (double)j->bytes_in / 1e6 / sec : 0.0, px_data_count(b, sizeof b, total));
    for (int s = 0; s < n; s++)
        printf("%s%s %s samples in %lld shard%s", s ? "; " : ", ", j->out_dir[s],
               px_data_count(c, sizeof c, samples[s]), (long long)shards[s],
               shards[s] == 1 ? "" : "s");
    printf("; %s bad line%s skipped\n", px_data_count(a, sizeof a, j->bad), j->bad == 1 ? "" : "s");
    return 0;
}

void px_data_job_abort(px_data_job *j) {
    px_progress_end(&j->prog);
    for (int s = 0; s < PX_MAX_SPLITS; s++) {
        px_writer_abort(j->w[s]);
        j->w[s] = NULL;
    }
}

void px_data_job_free(px_data_job *j) {
    free(j->file_split);
    j->file_split = NULL;
}

int px_data_job_run_lines(px_data_job *j, const px_ds_input *inputs, int n_inputs,
                          px_line_parser parse, void *ctx, int skip_header, char *err, size_t cap) {
    int64_t total = 0;
    px_lines **lines = calloc((size_t)j->n_files, sizeof *lines);
    if (!lines) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    int rc = 0;
    for (int f = 0; f < j->n_files && !rc; f++) {
        rc = px_lines_open(&lines[f], j->files[f], err, cap);
        if (!rc) total += px_lines_file_size(lines[f]);
    }
    if (!rc) rc = px_data_job_open(j, inputs, n_inputs, err, cap);
    px_progress_start(&j->prog, total, j->progress);
    if (!rc && j->threads > 1)
        rc = px_lines_pipeline(j, lines, inputs, n_inputs, parse, ctx, skip_header, err, cap);
    int64_t done_files = 0;
    unsigned char *row[256];
    if (n_inputs > 256) {
        snprintf(err, cap, "more than 256 inputs");
        rc = -1;
    }
    for (int f = 0; f < j->n_files && !rc && j->threads == 1; f++) {
        px_lines *l = lines[f];
        char *s;
        size_t len;
        int got;
        while ((got = px_lines_next(l, &s, &len, err, cap)) == 1) {
            if (skip_header && px_lines_number(l) == 1) continue;
            j->lines++;
            px_dataset_writer *w = px_data_job_route(j, f, j->lines);
            char msg[512];
            px_writer_rows(w, row);
            if (parse(ctx, row, s, len, msg, sizeof msg)) {
                if (px_data_bad_line(j, px_lines_path(l), px_lines_number(l), msg, err, cap)) {
                    rc = -1;
                    break;
                }
                continue;
            }
            if (px_writer_commit(w, err, cap)) {
                rc = -1;
                break;
            }
            px_progress_update(&j->prog, done_files + px_lines_file_read(l), j->lines, j->bad);
        }
        if (got < 0) rc = -1;
        done_files += px_lines_file_size(l);
        j->bytes_in += px_lines_text_read(l);
    }
    for (int f = 0; f < j->n_files; f++) px_lines_close(lines[f]);
    free(lines);
    if (!rc) return px_data_job_finish(j, err, cap);
    px_data_job_abort(j);
    return -1;
}

static int listed(const char *const *list, const char *a) {
    for (; list && *list; list++)
        if (!strcmp(*list, a)) return 1;
    return 0;
}

int px_data_run(const px_data_cmd *c, void *ctx, int argc, char **argv) {
    px_data_job j;
    px_data_job_init(&j, c->name);
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    char err[8192];
    int status = PX_DATA_USAGE;
    if (!files) return PX_DATA_FAILED;
    j.files = files;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int k = px_data_common_flag(&j, argc, argv, &i, err, sizeof err);
        if (k < 0) goto usage;
        if (k > 0) continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s\nCommon options:\n%s", c->help, px_data_common_help);
            status = PX_DATA_OK;
            goto done;
        }
        int valued = listed(c->valued, a);
        if (valued || listed(c->switches, a)) {
            if (valued && i + 1 >= argc) {
                snprintf(err, sizeof err, "%s needs a value", a);
                goto usage;
            }
            if (c->flag(ctx, a, valued ? argv[++i] : NULL, err, sizeof err)) goto usage;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            snprintf(err, sizeof err, "unknown option '%s'", a);
            goto usage;
        }
        files[j.n_files++] = a;
    }
    if (px_data_job_check(&j, err, sizeof err) || c->check(ctx, &j, err, sizeof err)) goto usage;
    status = c->convert(ctx, &j, err, sizeof err) ? PX_DATA_FAILED : PX_DATA_OK;
    if (status) fprintf(stderr, "parallaxc data %s: %s\n", c->name, err);
    goto done;
usage:
    fprintf(stderr, "parallaxc data %s: %s\nTry 'parallaxc data %s --help'.\n", c->name, err,
            c->name);
done:
    px_data_job_free(&j);
    free(files);
    return status;
}
