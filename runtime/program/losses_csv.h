/* --losses FILE.csv ("step,loss[,<output>...]", one line per trained step)
 * and --eval-log FILE.csv ("step,loss[,<output>...]", one line per
 * validation), written by rank 0 as the run goes. */
#ifndef PX_LOSSES_CSV_H
#define PX_LOSSES_CSV_H

#include <stdint.h>
#include <stdio.h>

/* Opens path for writing with the header line `header` (no newline).
 * keep_through > 0 (a resumed run): lines of steps up to keep_through
 * already in the file under the same header are kept, so the file of a
 * resumed run reads like the file of an uninterrupted one; every_step: the
 * kept steps must be 1, 2, 3, ... (--losses), else only ascending (the
 * validation log). `flag` names the file in messages. NULL with a message
 * on error. */
FILE *px_csv_log_open(const char *path, const char *flag, const char *header, int64_t keep_through,
                      int every_step, char *err, size_t cap);
/* Flushes and closes; -1 with a message naming flag, path and the reason
 * when any write to the file failed (a full disk). */
int px_csv_log_close(FILE *f, const char *flag, const char *path, char *err, size_t cap);
/* "step,v0,v1,...\n" */
void px_csv_log_add(FILE *f, int64_t step, const double *vals, int n);

#endif
