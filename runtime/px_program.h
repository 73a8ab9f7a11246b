/* What a generated object file defines for the runtime: the program
 * descriptor. Every field is 8 bytes wide (i64, double or pointer) so the code
 * generator can lay the structs out as plain LLVM structs. Bump
 * PX_PROGRAM_ABI when the layout changes. */
#ifndef PX_PROGRAM_H
#define PX_PROGRAM_H

#include "px_enums.h"

#include <stddef.h>
#include <stdint.h>

#define PX_PROGRAM_ABI 14

typedef struct px_io_desc {
    const char *name; /* graph input/output name */
    int64_t dtype;    /* ONNX TensorProto.DataType */
    int64_t rank;
    const int64_t *dims; /* static dims */
    void *data;          /* the tensor's buffer inside the program's memory: set by the
                            loader (px_weights_load) to *base + offset when base is set */
    int64_t nbytes;
    /* ---- ABI 3 ---- */
    void *const *base; /* NULL: data is fixed at link time (a constant in the program) */
    int64_t offset;
} px_io_desc;

/* A weight the program reads from the ONNX model at start (an initializer,
 * found by name; dtype and dims must match). Generated code reaches it only
 * through *slot, which the loader sets before the first step. */
typedef struct px_weight_desc {
    const char *name;
    int64_t dtype; /* ONNX TensorProto.DataType */
    int64_t rank;
    const int64_t *dims;
    int64_t nbytes;
    void **slot;
} px_weight_desc;

enum px_program_kind { PX_PROGRAM_INFER = 0, PX_PROGRAM_TRAIN = 1 };

/* The variable classes, sync kinds, comm modes and optimizer kinds the
 * descriptor's int64_t fields hold are px_enums.h's. */

/* A trainable variable. `data` is the variable's storage: the replica for
 * PX_SYNC_ALLREDUCE, the local row cache that PSPull refreshes for
 * PX_SYNC_PS. Variables are float32. With weight >= 0 the loader allocates
 * it, fills it from the model and sets data and *weights[weight].slot (or
 * leaves both NULL when local_storage is 0: the variable's rows live only on
 * its shards); with weight < 0 data is fixed at link time. */
typedef struct px_var_desc {
    const char *name;
    int64_t dtype;
    int64_t rank;
    const int64_t *dims;
    void *data;
    int64_t nbytes;
    int64_t var_class;  /* px_var_class */
    int64_t sync;       /* px_var_sync */
    int64_t partitions; /* PS partitions (PX_SYNC_PS); 0: chosen at run time ("auto") */
    /* ---- ABI 3 ---- */
    int64_t weight;        /* index into px_program.weights; -1: none */
    int64_t local_storage; /* 1: a full-size local copy; 0: none (data NULL) */
    /* ---- ABI 4 ---- */
    int64_t no_decay; /* 1: the optimizer's weight decay does not apply (--no-decay) */
} px_var_desc;

/* Optimizer hyper-parameters, PyTorch's meaning (torch.optim.SGD with
 * momentum/dampening 0/nesterov, Adam, AdamW, Adagrad with lr_decay 0 and
 * initial_accumulator_value 0, RMSprop with momentum 0 and centered off).
 * weight_decay is L2 added to the gradient, except for AdamW, where it is
 * decoupled (w *= 1 - lr * weight_decay before the Adam step). */
typedef struct px_optim_desc {
    int64_t kind; /* px_optim_kind */
    double lr;
    double momentum;
    int64_t nesterov;
    double beta1, beta2, epsilon;
    double weight_decay;
    /* ---- ABI 4 ---- */
    double alpha; /* RMSprop's smoothing constant */
} px_optim_desc;

/* What a checked graph input is. */
typedef enum px_index_check_kind {
    /* the indices of a Gather on axis 0 of an initializer */
    PX_CHECK_GATHER_INDICES = 0,
    /* nn.EmbeddingBag's offsets (a SegmentReduce with offsets=1): in each
     * batch the first is 0, none decreases, none passes the batch's count
     * of indices (hi - 1) */
    PX_CHECK_BAG_OFFSETS = 1,
} px_index_check_kind;

/* A graph input read as indices or bag offsets: the loader checks every
 * value before any step runs, so a bad one is reported with the input, the
 * file, the sample and the value. */
typedef struct px_index_check {
    int64_t input;     /* index into inputs */
    int64_t lo, hi;    /* valid values: [lo, hi) */
    const char *node;  /* the Gather, or the EmbeddingBag's SegmentReduce */
    const char *table; /* its data initializer (the bag's table) */
    /* ---- ABI 7 ---- */
    int64_t kind; /* px_index_check_kind */
} px_index_check;

/* A masked weight (--sparsity): a variable trained with a fixed number of
 * live entries, the others exactly zero. Logically Wl[out, in] (Y = X·Wl^T),
 * stored [out, in] or, with w_in_major, [in, out]. The runtime picks the
 * initial mask from the loaded weights (runtime/sparse/), keeps the live
 * values and their optimizer state packed (nnz floats each, the order of
 * the compact gradient the step computes) and writes them back into the
 * variable's dense storage where the step or --save reads it. */
typedef struct px_masked_desc {
    int64_t var;        /* index into px_program.vars */
    int64_t out, in;    /* logical shape */
    int64_t w_in_major; /* 1: stored [in, out] (MatMul), 0: [out, in] (Gemm transB=1) */
    int64_t nnz;        /* live entries */
    double sparsity;    /* the fraction of zeros asked for */
    int64_t pattern;    /* px_sparsity_pattern */
    int64_t pa, pb;     /* block: a x b entries (outputs x inputs); n:m: n, m; else 0 */
    int64_t init;       /* px_sparsity_init of the initial mask */
    int64_t seed;       /* of the random choices (initial mask, SET's growth) */
    int64_t dense_path; /* 1: the step multiplies by the dense W (the measured crossover
                           says it is faster): the packed values are written back into W
                           after every update */
} px_masked_desc;

/* Bytes a rank holds for a masked weight beside its dense storage, for
 * n_slots optimizer slots: its live values and their state, packed, and
 * the traversal of runtime/sparse/spmm.h (an input index per live entry,
 * an offset per output and panel of PX_MASKED_PANEL inputs). The dense
 * state of a replicated variable is not allocated for it. The runtime's
 * --stats and the compiler's memory prediction both count this. */
#define PX_MASKED_PANEL 128
static inline int64_t px_masked_bytes(int64_t out, int64_t in, int64_t nnz, int n_slots) {
    int64_t panels = (in + PX_MASKED_PANEL - 1) / PX_MASKED_PANEL;
    return 4 * nnz * (2 + (int64_t)n_slots) + 4 * (panels * out + 1);
}

/* An initializer of the model that is a copy of a trained variable
 * (parallax.ties metadata, docs/metadata.md): not a variable of its own;
 * --save writes it from the variable's trained values, as
 * reshape(transpose(var, perm), dims). */
typedef struct px_tied_desc {
    const char *name;
    int64_t var;  /* index into px_program_desc.vars */
    int64_t rank; /* of the copy */
    const int64_t *dims;
    const int64_t *perm; /* the variable's rank entries; NULL: no transpose */
} px_tied_desc;

typedef struct px_program_desc {
    int64_t abi;
    const char *model; /* model file it was compiled from */
    int64_t n_inputs;
    px_io_desc *inputs;
    int64_t n_outputs;
    px_io_desc *outputs;
    void (*step)(void);  /* one step (inference: forward; training: forward, backward,
                            communication, update) over the buffers above */
    int64_t arena_bytes; /* planned peak of intermediate buffers */
    /* ---- ABI 2 ---- */
    int64_t kind;        /* enum px_program_kind */
    int64_t loss_output; /* training: index into outputs of the scalar loss */
    int64_t batch;       /* per-rank batch: dim 0 of every input */
    int64_t n_vars;
    px_var_desc *vars;
    const px_optim_desc *optim;
    int64_t comm_mode;           /* px_comm_mode (never AUTO) */
    int64_t n_buckets;           /* AllReduce buckets the step uses (ids 0..n_buckets-1) */
    const int64_t *bucket_bytes; /* bytes of each bucket */
    /* For --save: the original model as an ONNX ModelProto without the
     * trained initializers; the runtime appends them (a second `graph` field,
     * which protobuf merges into the first). */
    const uint8_t *onnx_base;
    int64_t onnx_base_bytes;
    int64_t n_index_checks;
    const px_index_check *index_checks;
    /* ---- ABI 3 ---- */
    const char *weights_path; /* absolute path of the model at compile time (--weights
                                 overrides it) */
    int64_t n_nodes;          /* the compiled graph's nodes, as onnx_wire.h hashes them */
    const uint64_t *node_hashes;
    int64_t n_weights;
    const px_weight_desc *weights;
    void **arena; /* where the loader puts the arena (arena_bytes, 64-byte aligned) */
    /* ---- ABI 4 ---- */
    /* Training: what the compiler knew, as one JSON object (the run
     * directory's compile.json; docs/training.md); NULL for inference. */
    const char *compile_info;
    /* For --save-infer: the original model in eval mode (Dropout the
     * identity, BatchNormalization on its running statistics) without the
     * trained initializers, serialized; the runtime keeps the nodes the
     * chosen outputs need and appends the trained values. */
    const uint8_t *infer_base;
    int64_t infer_base_bytes;
    /* ---- ABI 5 ---- */
    int64_t n_masked;
    const px_masked_desc *masked;
    /* ---- ABI 6 ---- */
    int64_t n_tied; /* training programs: the tied copies --save writes */
    const px_tied_desc *tied;
    /* ---- ABI 8 ---- */
    int64_t tp; /* --tp: ranks per tensor-parallel group (1: none); the program
                   runs on a multiple of it, groups of consecutive ranks
                   sharing each step's batch */
    /* --tp: the axis rank t of a group stores slab t of tp of variable v
     * on (its vars[v] dims are the slab's; its weight's, the whole
     * variable's), or -1: stored whole. n_vars entries; NULL: none split. */
    const int64_t *var_tp_axis;
    /* ---- ABI 9 ---- */
    int64_t pp; /* --pp: pipeline stages (1: none); the program runs on a multiple of
                   tp * pp ranks, pipelines of tp * pp consecutive ranks, stage
                   (rank / tp) mod pp; the step's calls of a stage's nodes are guarded
                   by px_pp_stage (px_train.h) */
    /* ---- ABI 10 ---- */
    /* --tp: n_buckets entries, 1 where the bucket holds slabs of variables
     * stored split, averaged over the ranks at the same position t of every
     * group (N / tp of them) instead of over all ranks; NULL: none. */
    const int64_t *bucket_slab;
    /* ---- ABI 11 ---- */
    /* --tp: n_vars entries, the equal sections along var_tp_axis a variable
     * stored split is made of (the packed Q/K/V weight of an attention block:
     * 3), rank t's slab holding part t of each, side by side; NULL: every
     * variable one section. */
    const int64_t *var_tp_sections;
    /* ---- ABI 12 ---- */
    /* The variable and weight tables as numbers, without pointers: a model
     * of 100k weights otherwise gives the compiler, the linker and the
     * program's start half a million relocated pointers to handle. When
     * packed_vars (packed_weights) is set, vars (weights) is zeroed storage
     * that px_program_unpack fills before anything reads it: n_vars
     * (n_weights) rows of PX_DESC_FIELDS(px_var_desc) (px_weight_desc)
     * numbers, the struct's fields in order, its pointers replaced by
     *   name  a byte offset into strings (NUL-terminated names),
     *   dims  an element offset into ints,
     *   data  (a variable's) an index into var_data, or -1 for NULL,
     *   slot  (a weight's) an index into the base pointers arena points at.
     * NULL: the tables are given as they are read (hand-made descriptors). */
    const int64_t *packed_vars;
    const int64_t *packed_weights;
    const char *strings;
    const int64_t *ints;
    void *const *var_data; /* the variables embedded in the program */
    /* ---- ABI 13 ---- */
    /* --pp: n_vars entries, the stage whose ranks hold variable v (its
     * storage, its optimizer state, its update); the ranks of other stages
     * leave its data NULL. NULL: every rank holds every variable. */
    const int64_t *var_pp_stage;
    /* --pp: n_buckets entries, the stage whose ranks reduce bucket b, over
     * the ranks of that stage at the same --tp position (one per pipeline);
     * the other stages never touch it. NULL: every bucket on every rank. */
    const int64_t *bucket_pp_stage;
    /* ---- ABI 14 ---- */
    /* --pp: pp entries, the bytes of the arena of stage s's ranks (the
     * buffers shared by every stage, then that stage's own; a value of
     * another stage has an offset past it and is never touched there);
     * NULL: arena_bytes on every rank. */
    const int64_t *pp_arena_bytes;
} px_program_desc;

extern const px_program_desc px_program;

/* Fills p's vars and weights from their packed rows (ABI 12), if any; the
 * program's main() does it first thing. */
void px_program_unpack(const px_program_desc *p);

/* The code generator lays each struct out as an LLVM struct of 8-byte
 * fields: their counts, and the index of a named field, follow from the C
 * structs (no hand-kept counts). */
#define PX_DESC_FIELDS(type) (sizeof(type) / sizeof(int64_t))
#define PX_DESC_FIELD(type, field) (offsetof(type, field) / sizeof(int64_t))
_Static_assert(sizeof(void *) == 8 && sizeof(double) == 8, "descriptor fields are 8 bytes wide");
_Static_assert(sizeof(px_io_desc) % 8 == 0 && sizeof(px_weight_desc) % 8 == 0 &&
                   sizeof(px_var_desc) % 8 == 0 && sizeof(px_optim_desc) % 8 == 0 &&
                   sizeof(px_index_check) % 8 == 0 && sizeof(px_program_desc) % 8 == 0 &&
                   sizeof(px_masked_desc) % 8 == 0 && sizeof(px_tied_desc) % 8 == 0,
               "descriptor structs are made of 8-byte fields");
/* The layout of ABI 14: a field added or moved must bump PX_PROGRAM_ABI (and
 * these counts) and be emitted by compiler/codegen/emit_llvm.c. */
_Static_assert(PX_PROGRAM_ABI == 14, "update the layout asserts with the ABI");
_Static_assert(PX_DESC_FIELDS(px_io_desc) == 8 && PX_DESC_FIELDS(px_weight_desc) == 6 &&
                   PX_DESC_FIELDS(px_var_desc) == 12 && PX_DESC_FIELDS(px_optim_desc) == 9 &&
                   PX_DESC_FIELDS(px_index_check) == 6 && PX_DESC_FIELDS(px_masked_desc) == 12 &&
                   PX_DESC_FIELDS(px_tied_desc) == 5 && PX_DESC_FIELDS(px_program_desc) == 47,
               "program descriptor layout of PX_PROGRAM_ABI 14");

#endif
