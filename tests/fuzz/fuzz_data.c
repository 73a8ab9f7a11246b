/* libFuzzer harness: the training program's data loaders. The input is
 * written to a file and read as .npy (memory-mapped) and as a serialized
 * TensorProto (.pb); whatever loads is read end to end (checksummed, as the
 * cross-rank data check does), so a size that claims more than the file
 * holds shows up as a read past the mapping. */
#include "checksum.h"
#include "npy.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    snprintf(path, sizeof path, "/tmp/px_fuzz_data_%d", (int)getpid());
    return 0;
}

static void write_input(const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
}

static void consume(const px_array *a) {
    volatile uint64_t sink = px_checksum(a->data, a->nbytes);
    (void)sink;
    if (a->rank > 0 && a->nbytes) {
        /* The last byte of the claimed size: beyond the file if the size lies. */
        volatile unsigned char last = ((const unsigned char *)a->data)[a->nbytes - 1];
        (void)last;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[1024];
    px_array a;
    write_input(data, size);
    if (px_npy_load(path, &a, err, sizeof err) == 0) {
        consume(&a);
        px_array_free(&a);
    }
    if (px_pb_load(path, &a, err, sizeof err) == 0) {
        consume(&a);
        px_array_free(&a);
    }
    unlink(path);
    return 0;
}
