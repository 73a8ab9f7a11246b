/* What a generated object file defines for the runtime: the program
 * descriptor. Every field is 8 bytes wide so the code generator can lay the
 * structs out as plain LLVM structs of i64/ptr. Bump PX_PROGRAM_ABI when the
 * layout changes. */
#ifndef PX_PROGRAM_H
#define PX_PROGRAM_H

#include <stdint.h>

#define PX_PROGRAM_ABI 1

typedef struct px_io_desc {
    const char *name; /* graph input/output name */
    int64_t dtype;    /* ONNX TensorProto.DataType */
    int64_t rank;
    const int64_t *dims; /* static dims */
    void *data;          /* the tensor's buffer inside the program's memory */
    int64_t nbytes;
} px_io_desc;

typedef struct px_program_desc {
    int64_t abi;
    const char *model; /* model file it was compiled from */
    int64_t n_inputs;
    const px_io_desc *inputs;
    int64_t n_outputs;
    const px_io_desc *outputs;
    void (*step)(void);  /* one forward pass over the buffers above */
    int64_t arena_bytes; /* planned peak of intermediate buffers */
} px_program_desc;

extern const px_program_desc px_program;

#endif
