/* The progress bar of a conversion (standard error, redrawn at most every
 * quarter second; only on a terminal unless forced) and the numbers its
 * summary reports. */
#ifndef PX_PROGRESS_H
#define PX_PROGRESS_H

#include <stdint.h>

typedef struct px_progress {
    int show;
    int64_t total; /* bytes to read (0: unknown) */
    double t0, last;
    int drawn;
} px_progress;

/* mode: 1 always, 0 never, -1 when standard error is a terminal. */
void px_progress_start(px_progress *p, int64_t total_bytes, int mode);
/* Cheap to call often: it reads the clock every 4096 calls. */
void px_progress_update(px_progress *p, int64_t bytes_done, int64_t lines, int64_t bad);
/* Clears the bar. */
void px_progress_end(px_progress *p);
double px_progress_seconds(const px_progress *p);
/* Wall-clock seconds since an arbitrary point. */
double px_now(void);

#endif
