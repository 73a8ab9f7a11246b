#ifndef PX_COMPILE_CMD_H
#define PX_COMPILE_CMD_H

#include "cli.h"
#include "var_plan.h"

/* Runs `parallaxc compile` as cli describes. Returns 0, or -1 with the error in d. */
int px_compile_command(const px_cli *cli, px_diag *d);

/* Prints to stderr the export warnings of the imported graph g and, without
 * parallax.trainable metadata, the warnings about what training will train
 * (with list != 0 the list too: export_checks.h), as compile and inspect
 * both do. -1 only when out of memory. */
int px_warn_trained_set(const px_graph *g, const px_train_spec *spec, int list, px_diag *d);

#endif
