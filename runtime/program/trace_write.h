/* --trace FILE.json: every rank's recorded spans (px_trace.h), gathered to
 * rank 0 and written as one Chrome trace-event file (ui.perfetto.dev,
 * chrome://tracing): one process per rank (pid = rank, named "rank r"),
 * complete ("X") events in microseconds. */
#ifndef PX_TRACE_WRITE_H
#define PX_TRACE_WRITE_H

#include "px_program.h"

/* Collective. Failures to write end the job naming the file. */
void px_trace_write(const char *path, const px_program_desc *p);

#endif
