/* Under mpirun every rank parses its own command line, and nothing made
 * them agree: ranks given different --lr trained diverging replicas,
 * different --steps or --resume on one rank only hung in a collective, and
 * different --checkpoint paths wrote an incomplete checkpoint. Every rank
 * now sends a fingerprint of the flags that change the numbers, the
 * schedule or the collectives a rank makes, before any other collective;
 * ranks that differ are stopped before step 1, the message naming the flag,
 * the ranks and their values. */
#ifndef PX_FLAGS_AGREE_H
#define PX_FLAGS_AGREE_H

#include "px_program.h"
#include "train_flags.h"

#include <stdio.h>

/* Collective, right after px_train_flags_parse returned parse_rc on every
 * rank. Returns parse_rc when the ranks agree (also when all of them
 * refused their command line). When they differ, the lowest rank that
 * differs from rank 0 prints why to err (a rank whose command line alone
 * was refused prints its parse error), and every rank gets PX_FLAGS_BAD.
 * argc/argv: this rank's command line, parsed again only to print its
 * error. */
int px_train_flags_agree(int parse_rc, const px_train_flags *f, const px_program_desc *p, int argc,
                         char **argv, FILE *err);

#endif
