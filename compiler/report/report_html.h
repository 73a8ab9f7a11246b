/* The run report as one self-contained HTML page: inline CSS and SVG, no
 * script, no reference outside the file. Each chart is a
 * <figure data-chart="NAME" data-points="N">, N the number of values it
 * draws (0: the files lacked them, and a note says which), so that a test
 * can check every chart against the run's files. */
#ifndef PX_REPORT_REPORT_HTML_H
#define PX_REPORT_REPORT_HTML_H

#include "run_read.h"

#include <stdio.h>

/* Writes the page for run (read from dir) to f; 0, or -1 when writing failed. */
int px_report_write_html(FILE *f, const px_run *run, const char *dir);

#endif
