/* The checkpoint fuzz harnesses' shared part (ckpt_harness.c): a real
 * checkpoint of the fake Adam program (tests/fuzz/ckpt_base) laid out in a
 * private folder, one of its files replaced by the fuzzer's bytes, read back
 * with px_checkpoint_read. */
#ifndef PX_FUZZ_CKPT_HARNESS_H
#define PX_FUZZ_CKPT_HARNESS_H

#include <stddef.h>
#include <stdint.h>

enum px_fuzz_ckpt_target {
    PX_FUZZ_CKPT_MANIFEST, /* the input is the manifest; the base piece is next to it */
    PX_FUZZ_CKPT_PIECE     /* the input is the piece the base manifest lists */
};

void px_fuzz_ckpt_init(enum px_fuzz_ckpt_target target);
void px_fuzz_ckpt_run(const uint8_t *data, size_t size);

#endif
