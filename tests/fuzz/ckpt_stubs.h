/* The single-rank comm stubs of the checkpoint fuzz harnesses (ckpt_stubs.c). */
#ifndef PX_FUZZ_CKPT_STUBS_H
#define PX_FUZZ_CKPT_STUBS_H

#include "px_train.h"

#define PX_FUZZ_MAX_VARS 8
#define PX_FUZZ_MAX_ROWS 64 /* floats of one parameter-server variable */

/* The program whose variables the stubs lay out; call before anything else. */
void px_fuzz_stub_program(const px_program_desc *p);

#endif
