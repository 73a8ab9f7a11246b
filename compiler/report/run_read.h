/* A training run's directory, as `parallaxc report` reads it: the files
 * `--run-dir DIR` writes (docs/training.md, "Run directory"), or the ones
 * --losses, --eval-log, --stats and --trace wrote into one folder under
 * their usual names. run.json's "files" says where each went when it is
 * there. Every file is optional; the report says which were missing. */
#ifndef PX_REPORT_RUN_READ_H
#define PX_REPORT_RUN_READ_H

#include "csv_read.h"
#include "diag.h"
#include "json_read.h"
#include "trace_summary.h"

typedef enum px_run_file {
    PX_RF_RUN,      /* run.json */
    PX_RF_COMPILE,  /* compile.json */
    PX_RF_LOSSES,   /* losses.csv */
    PX_RF_EVAL,     /* eval.csv */
    PX_RF_PROGRESS, /* progress.csv */
    PX_RF_STATS,    /* stats.json */
    PX_RF_TRACE,    /* trace.json */
    PX_RF_COUNT
} px_run_file;

typedef struct px_run {
    char *path[PX_RF_COUNT]; /* where each file was looked for */
    int found[PX_RF_COUNT];  /* it was there and has been read */
    px_json *run, *compile, *stats;
    px_csv losses, eval, progress;
    px_trace_summary trace;
} px_run;

/* The name of a run file ("losses.csv"), and run.json's "files" key for it. */
const char *px_run_file_default(px_run_file f);
const char *px_run_file_key(px_run_file f);

/* Reads what DIR holds. 0; -1 with an error in d when DIR is not a folder,
 * holds none of the files, or a file is malformed (the message names it). */
int px_run_read(const char *dir, px_run *run, px_diag *d);
void px_run_free(px_run *run);

#endif
