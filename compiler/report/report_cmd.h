/* `parallaxc report RUN_DIR [-o report.html]`: reads a run directory and
 * writes its report (report_html.h). */
#ifndef PX_REPORT_REPORT_CMD_H
#define PX_REPORT_REPORT_CMD_H

#include "diag.h"

extern const char px_report_help[];

/* Exit statuses, the same as parallaxc's (cli.h checks that they are). */
enum { PX_REPORT_OK = 0, PX_REPORT_FAILED = 1, PX_REPORT_USAGE = 2 };

/* argv[0] is "report". Returns PX_REPORT_OK; PX_REPORT_FAILED when the run
 * cannot be read or the report cannot be written; PX_REPORT_USAGE for a bad
 * command line or a run directory that does not exist. Messages go into d,
 * --help's text to standard output. */
int px_report_command(int argc, char **argv, px_diag *d);

#endif
