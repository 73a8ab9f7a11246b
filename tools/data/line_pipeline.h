/* The conversion of line-per-sample input on several threads (--threads
 * N, N >= 2): one thread reads the files into chunks of whole lines, N
 * threads parse chunks into staged rows, and the calling thread takes the
 * chunks in input order: it routes each sample (--split), counts bad lines
 * and copies the rows into the writers. The output is byte for byte the
 * one-thread conversion's: same samples, same order, same bad-line
 * messages and the same stop at --max-bad-lines. Memory: N + 4 chunks of
 * about 2 MiB of text and their rows. */
#ifndef PX_LINE_PIPELINE_H
#define PX_LINE_PIPELINE_H

#include "data_job.h"
#include "line_input.h"

/* Converts every line of files[0 .. j->n_files) (each file's first line
 * skipped with skip_header) into j's open writers. 0, or -1 with a message
 * (a read error, a bad line past --max-bad-lines, a write error); the
 * caller finishes or aborts the job. */
int px_lines_pipeline(px_data_job *j, px_lines **files, const px_ds_input *inputs, int n_inputs,
                      px_line_parser parse, void *ctx, int skip_header, char *err, size_t cap);

#endif
