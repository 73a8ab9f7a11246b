/* libFuzzer harness: the --resume checkpoint reader on a fuzzed manifest,
 * with the real checkpoint's piece next to it (ckpt_harness.c). Seeds: the
 * manifest of tests/fuzz/ckpt_base. */
#include "ckpt_harness.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    px_fuzz_ckpt_init(PX_FUZZ_CKPT_MANIFEST);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    px_fuzz_ckpt_run(data, size);
    return 0;
}
