/* The planner's calibration: the compute time of one training step of a
 * rank on this machine, measured by compiling the model and running its
 * program alone (one rank, no network) for a few steps, and cached. */
#ifndef PX_PLAN_CALIBRATE_H
#define PX_PLAN_CALIBRATE_H

#include "diag.h"

typedef struct px_calibration {
    double step_seconds; /* one step at `threads` threads, this machine */
    int threads;
    int cached; /* 1: read from the cache, not measured now */
    char cache_path[1024];
} px_calibration;

/* Measures (or reads from the cache) the step time of MODEL compiled with
 * compile_flags (n_flags words: --batch and the other compile flags) and
 * run on data_dir with `threads` threads: the median of three runs of at
 * least half a second each. recalibrate: measure even when
 * cached. The cache lives in $XDG_CACHE_HOME/parallax (else
 * $HOME/.cache/parallax), one file per model file (path, size, time),
 * data folder, flags and threads; it is best effort: a cache that cannot
 * be written only costs the next run a measurement. Returns 0, or -1 with
 * the error in d (the compile or the run failed: their output's end is
 * in the message). */
int px_plan_calibrate(const char *model, const char *data_dir, char *const *compile_flags,
                      int n_flags, int threads, int recalibrate, px_calibration *out, px_diag *d);

#endif
