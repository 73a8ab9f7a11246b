/* What the compiler knows about a training program, recorded in it as one
 * JSON object (px_program_desc.compile_info): the program writes it to its
 * run directory as compile.json (docs/training.md, "Run directory"). */
#ifndef PX_COMPILE_INFO_H
#define PX_COMPILE_INFO_H

#include "cli.h"
#include "train.h"

/* The model and program paths, the batch, the loss, the optimizer and its
 * hyper-parameters, --freeze, the communication settings,
 * the variable plan (as inspect's "variables") and the predicted bytes per
 * rank per step of each --comm mode on 1 to 64 ranks. g and plan: the
 * parallel stage. Returns a malloc'd string, or NULL with an error in d. */
char *px_compile_info_json(const px_cli *cli, const px_train_config *cfg, const px_train_plan *plan,
                           const px_graph *g, px_diag *d);

#endif
