#ifndef PX_COMPILE_CMD_H
#define PX_COMPILE_CMD_H

#include "cli.h"

/* Runs `parallaxc compile` as cli describes. Returns 0, or -1 with the error in d. */
int px_compile_command(const px_cli *cli, px_diag *d);

#endif
