/* What every `parallaxc data` converter shares: the common flags, the
 * --split routing of samples to output datasets, bad-line accounting
 * (--max-bad-lines), the writers and the summary. */
#ifndef PX_DATA_JOB_H
#define PX_DATA_JOB_H

#include "dataset_writer.h"
#include "progress.h"

#include <stddef.h>
#include <stdint.h>

#define PX_MAX_SPLITS 8
/* Bad lines printed in full; the rest are only counted. */
#define PX_BAD_LINES_SHOWN 10

enum { PX_DATA_OK = 0, PX_DATA_FAILED = 1, PX_DATA_USAGE = 2 };

typedef struct px_data_job {
    const char *cmd; /* "criteo", "csv", "tokens" */
    const char *out;
    const char **files;
    int n_files;
    int64_t max_bad_lines;
    int64_t shard_rows, block_rows;
    int overwrite, progress, quiet;
    int threads;          /* --threads: parsing threads (1: everything on the calling thread) */
    const char *own_file; /* a file the converter writes into out (px_writer_opts) */
    /* --split: n 0 = none (everything into out); fractions (cum: upper
     * bounds of each split's share) or files (file_split[f]). */
    const char *split_spec;
    int n_splits, by_file;
    char split_name[PX_MAX_SPLITS][64];
    double cum[PX_MAX_SPLITS];
    int *file_split;
    px_dataset_writer *w[PX_MAX_SPLITS];
    char out_dir[PX_MAX_SPLITS][4200];
    int64_t lines, bad, bytes_in;
    px_progress prog;
} px_data_job;

void px_data_job_init(px_data_job *j, const char *cmd);
/* argv[*i] as a common flag: 1 consumed (with its value; *i advanced), 0
 * not a common flag, -1 a bad value (message). */
int px_data_common_flag(px_data_job *j, int argc, char **argv, int *i, char *err, size_t cap);
/* The common flags' help text. */
extern const char px_data_common_help[];
/* After parsing: -o and the inputs given, --split parsed. -1 with a message. */
int px_data_job_check(px_data_job *j, char *err, size_t cap);
/* One writer per output dataset (out, or out/<split> for each split). */
int px_data_job_open(px_data_job *j, const px_ds_input *inputs, int n_inputs, char *err,
                     size_t cap);
/* The writer a sample goes to: the line's file (0-based) or the sample's
 * running number decides, by the split. */
px_dataset_writer *px_data_job_route(px_data_job *j, int file, int64_t sample);
/* A malformed line: printed (the first few) and counted. -1 (message in
 * err) when the count passes --max-bad-lines. */
int px_data_bad_line(px_data_job *j, const char *path, int64_t line, const char *what, char *err,
                     size_t cap);
/* Parses one line (len bytes, '\0'-terminated) into a row: the sample of
 * input i goes to row[i]. 0, or 1 with what is wrong in msg. Called from
 * several threads at once (--threads): ctx is only read. */
typedef int (*px_line_parser)(void *ctx, unsigned char *const *row, const char *line, size_t len,
                              char *msg, size_t cap);
/* The whole conversion of line-per-sample input: opens the files and the
 * writers, routes and parses every line (skipping each file's first line
 * with skip_header), counts bad lines, draws the progress, and finishes
 * (or aborts on a failure). With --threads N >= 2 the lines are read,
 * parsed and written on separate threads (line_pipeline.h), with the same
 * output. */
int px_data_job_run_lines(px_data_job *j, const px_ds_input *inputs, int n_inputs,
                          px_line_parser parse, void *ctx, int skip_header, char *err, size_t cap);
/* Finishes every writer (manifests) and prints the summary. */
int px_data_job_finish(px_data_job *j, char *err, size_t cap);
/* Removes what the writers wrote. */
void px_data_job_abort(px_data_job *j);
void px_data_job_free(px_data_job *j);
/* A converter's command line: its flags (those in `valued` take a value,
 * those in `switches` none; NULL-terminated lists) go to flag(), the
 * common ones to the job, the rest are input files; then check() (usage
 * errors) and convert(). */
typedef struct px_data_cmd {
    const char *name; /* "criteo" */
    const char *help;
    const char *const *valued, *const *switches;
    int (*flag)(void *ctx, const char *flag, const char *value, char *err, size_t cap);
    int (*check)(void *ctx, px_data_job *j, char *err, size_t cap);
    int (*convert)(void *ctx, px_data_job *j, char *err, size_t cap);
} px_data_cmd;
/* Runs a converter: returns the exit status (PX_DATA_*), after saying what
 * failed on standard error. */
int px_data_run(const px_data_cmd *c, void *ctx, int argc, char **argv);
/* A count like 1,234,567 */
const char *px_data_count(char *buf, size_t cap, int64_t n);
/* Parses a whole number in [min, max] (flags). */
int px_data_parse_count(const char *s, int64_t min, int64_t max, int64_t *out);

#endif
