/* What a generated object file defines for the runtime: the program
 * descriptor. Every field is 8 bytes wide (i64, double or pointer) so the code
 * generator can lay the structs out as plain LLVM structs. Bump
 * PX_PROGRAM_ABI when the layout changes. */
#ifndef PX_PROGRAM_H
#define PX_PROGRAM_H

#include <stdint.h>

#define PX_PROGRAM_ABI 3

typedef struct px_io_desc {
    const char *name; /* graph input/output name */
    int64_t dtype;    /* ONNX TensorProto.DataType */
    int64_t rank;
    const int64_t *dims; /* static dims */
    void *data;          /* the tensor's buffer inside the program's memory */
    int64_t nbytes;
} px_io_desc;

enum px_program_kind { PX_PROGRAM_INFER = 0, PX_PROGRAM_TRAIN = 1 };

/* Variable classes (design.md §4) and how a variable is synchronised. */
enum px_prog_var_class { PX_PROG_VAR_DENSE = 0, PX_PROG_VAR_SPARSE = 1 };
enum px_var_sync {
    PX_SYNC_NONE = 0,      /* not synchronised (never happens in a training program) */
    PX_SYNC_ALLREDUCE = 1, /* replicated: gradient averaged by AllReduce, every rank updates */
    PX_SYNC_PS = 2,        /* rows partitioned over parameter-server shards */
};
enum px_comm_mode { PX_COMM_MODE_HYBRID = 0, PX_COMM_MODE_ALLREDUCE = 1, PX_COMM_MODE_PS = 2 };

/* A trainable variable. `data` is the variable's storage inside the program
 * (a writable global initialised with the exported weights): the replica for
 * PX_SYNC_ALLREDUCE and for dense PX_SYNC_PS variables (every row pulled into
 * it). A sparse PX_SYNC_PS variable is read by the step only through the
 * compact row caches its pulls fill (row_cache_only = 1): its `data` serves
 * only as the initial value the shards take their rows from, and is never
 * touched otherwise. Variables are float32. */
typedef struct px_var_desc {
    const char *name;
    int64_t dtype;
    int64_t rank;
    const int64_t *dims;
    void *data;
    int64_t nbytes;
    int64_t var_class;  /* enum px_prog_var_class */
    int64_t sync;       /* enum px_var_sync */
    int64_t partitions; /* PS partitions (PX_SYNC_PS); 0: chosen at run time ("auto") */
    /* ---- ABI 3 ---- */
    int64_t row_cache_only; /* 1: the step never reads or writes `data` (sparse PS
                               variable); 0: it does (replica) */
} px_var_desc;

enum px_optim_kind {
    PX_OPTIM_SGD = 0,
    PX_OPTIM_MOMENTUM = 1,
    PX_OPTIM_ADAM = 2,
    PX_OPTIM_ADAGRAD = 3
};

/* Optimizer hyper-parameters, PyTorch's meaning (torch.optim.SGD with
 * momentum/dampening 0/nesterov, Adam, Adagrad with lr_decay 0 and
 * initial_accumulator_value 0). weight_decay is L2 added to the gradient. */
typedef struct px_optim_desc {
    int64_t kind; /* enum px_optim_kind */
    double lr;
    double momentum;
    int64_t nesterov;
    double beta1, beta2, epsilon;
    double weight_decay;
} px_optim_desc;

/* A graph input read as the indices of a Gather on axis 0 of an
 * initializer: the loader checks every value before training starts, so a bad
 * index is reported with the input, the sample and the value. */
typedef struct px_index_check {
    int64_t input;     /* index into inputs */
    int64_t lo, hi;    /* valid values: [lo, hi) */
    const char *node;  /* the Gather */
    const char *table; /* its data initializer */
} px_index_check;

typedef struct px_program_desc {
    int64_t abi;
    const char *model; /* model file it was compiled from */
    int64_t n_inputs;
    const px_io_desc *inputs;
    int64_t n_outputs;
    const px_io_desc *outputs;
    void (*step)(void);  /* one step (inference: forward; training: forward, backward,
                            communication, update) over the buffers above */
    int64_t arena_bytes; /* planned peak of intermediate buffers */
    /* ---- ABI 2 ---- */
    int64_t kind;        /* enum px_program_kind */
    int64_t loss_output; /* training: index into outputs of the scalar loss */
    int64_t batch;       /* per-rank batch: dim 0 of every input */
    int64_t n_vars;
    const px_var_desc *vars;
    const px_optim_desc *optim;
    int64_t comm_mode;           /* enum px_comm_mode */
    int64_t n_buckets;           /* AllReduce buckets the step uses (ids 0..n_buckets-1) */
    const int64_t *bucket_bytes; /* bytes of each bucket */
    /* For --save: the original model as an ONNX ModelProto without the
     * trained initializers; the runtime appends them (a second `graph` field,
     * which protobuf merges into the first). */
    const uint8_t *onnx_base;
    int64_t onnx_base_bytes;
    int64_t n_index_checks;
    const px_index_check *index_checks;
} px_program_desc;

extern const px_program_desc px_program;

#endif
