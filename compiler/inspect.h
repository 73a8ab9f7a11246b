/* `parallaxc inspect`: load a model, run the pipeline up to a stage, and
 * write the graph (plus its variables) as text, DOT, JSON or ONNX. */
#ifndef PX_INSPECT_H
#define PX_INSPECT_H

#include "cli.h"
#include "emit.h"
#include "sparsity.h"
#include "train.h"

#include <stdio.h>

/* Runs inspect as cli describes. Returns 0, or -1 with the error in d (model
 * errors, unknown --freeze names, output files that cannot be written). */
int px_inspect(const px_cli *cli, px_diag *d);

#endif
