/* Where each converted sample goes (--split) and how a malformed line
 * counts (--max-bad-lines): shared by the one-thread conversion in
 * data_job.c and the threaded one in line_pipeline.c, which both call
 * down to here. */
#include "data_job.h"

#include "hash64.h"

#include <stdio.h>

px_dataset_writer *px_data_job_route(px_data_job *j, int file, int64_t sample) {
    if (!j->n_splits) return j->w[0];
    if (j->by_file) return j->w[j->file_split[file]];
    /* A uniform number in [0, 1) from the sample's number: the same split
     * on every run, whatever else changes. */
    double u = (double)(px_hash64_u64(0x5eed5eed5eed5eedULL, (uint64_t)sample) >> 11) *
               (1.0 / 9007199254740992.0);
    for (int s = 0; s < j->n_splits; s++)
        if (u < j->cum[s]) return j->w[s];
    return j->w[j->n_splits - 1];
}

int px_data_bad_line(px_data_job *j, const char *path, int64_t line, const char *what, char *err,
                     size_t cap) {
    j->bad++;
    if (j->bad > j->max_bad_lines) {
        px_progress_end(&j->prog);
        snprintf(err, cap, "%s:%lld: %s (bad line %lld; --max-bad-lines %lld)", path,
                 (long long)line, what, (long long)j->bad, (long long)j->max_bad_lines);
        return -1;
    }
    if (j->bad <= PX_BAD_LINES_SHOWN) {
        px_progress_end(&j->prog);
        fprintf(stderr, "%s:%lld: %s: skipped\n", path, (long long)line, what);
        if (j->bad == PX_BAD_LINES_SHOWN)
            fprintf(stderr, "(further bad lines are counted, not shown)\n");
    }
    return 0;
}
