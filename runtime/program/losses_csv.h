/* --losses FILE.csv: "step,loss", one line per trained step, written by
 * rank 0 as the run goes. */
#ifndef PX_LOSSES_CSV_H
#define PX_LOSSES_CSV_H

#include <stdint.h>
#include <stdio.h>

/* Opens path for writing. keep_through > 0 (a resumed run): lines of steps
 * 1..keep_through already in the file are kept, so the file of a resumed run
 * reads like the file of an uninterrupted one. NULL with a message on error. */
FILE *px_losses_open(const char *path, int64_t keep_through, char *err, size_t cap);
void px_losses_add(FILE *f, int64_t step, double loss);

#endif
