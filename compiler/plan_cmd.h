/* `parallaxc plan MODEL.onnx --batch B --hosts H --link RATE --cores C`:
 * predicts, before any cluster is rented, the step time and samples/s of
 * every --comm mode, --wire format and --sync-every setting at 1, 2, 4 ...
 * H hosts, the memory per rank, and recommends a setting. The
 * communication comes from the compiler's cost model (passes/traffic.c, the
 * one --comm auto uses); the compute from a short run of the compiled
 * program on this machine (plan_calibrate.h). docs/relaxed_sync.md. */
#ifndef PX_PLAN_CMD_H
#define PX_PLAN_CMD_H

#include "diag.h"

extern const char px_plan_help[];

/* argv[0] is "plan". Returns 0 (PX_EXIT_OK), 1 when the model, the
 * calibration or an output file fails, 2 for a bad command line (the
 * message names the flag). Messages go into d; the plan and --help's text
 * to standard output. */
int px_plan_command(int argc, char **argv, px_diag *d);

#endif
