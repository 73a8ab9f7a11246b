/* Checks the files a compile or inspect command line names against the
 * output policy (common/out_paths.h) before any work is done. */
#ifndef PX_COMMAND_FILES_H
#define PX_COMMAND_FILES_H

#include "cli.h"
#include "diag.h"

/* 0, or -1 with a message naming the flag (and the input) at fault: an
 * output that is a folder, FIFO, socket or block device, two outputs on one
 * file, or an output that is an input of the command. */
int px_check_command_files(const px_cli *cli, px_diag *d);

#endif
