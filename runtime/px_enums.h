/* The enums the compiler and the runtime share, each defined once (XLA's
 * runtime symbol header shared by emitter and runtime; ggml's count asserts).
 *
 * Each enum comes from one X-macro list of (constant, name): the enum, its
 * COUNT enumerator and its names table are generated from the same list, so
 * they cannot drift apart. The compiler parses flags and prints listings
 * with these names; the code generator writes these constants into the
 * program descriptor (px_program.h), whose fields are int64_t; the runtime
 * reads them back. The values are ABI: a compiled program stores them, so
 * they are pinned below (bump PX_PROGRAM_ABI if one ever changes). */
#ifndef PX_ENUMS_H
#define PX_ENUMS_H

#include <stdint.h>
#include <string.h>

#define PX_ENUM_ID(id, name) id,
#define PX_ENUM_NAME(id, name) name,

/* The optimizer (--optimizer; px_optim_desc.kind). */
#define PX_OPTIM_KINDS(X)                                                                          \
    X(PX_OPTIM_SGD, "sgd")                                                                         \
    X(PX_OPTIM_MOMENTUM, "momentum")                                                               \
    X(PX_OPTIM_ADAM, "adam")                                                                       \
    X(PX_OPTIM_ADAGRAD, "adagrad")                                                                 \
    X(PX_OPTIM_ADAMW, "adamw")                                                                     \
    X(PX_OPTIM_RMSPROP, "rmsprop")
typedef enum px_optim_kind { PX_OPTIM_KINDS(PX_ENUM_ID) PX_OPTIM_COUNT } px_optim_kind;

/* How gradients move (--comm; px_program_desc.comm_mode). AUTO: each sparse
 * variable, and the dense variables as a group, go the way the compiler's
 * alpha-beta model (passes/traffic.c) predicts to take less time; a program
 * never stores AUTO (the variables' sync says what was chosen; the
 * descriptor says hybrid). */
#define PX_COMM_MODES(X)                                                                           \
    X(PX_COMM_MODE_HYBRID, "hybrid")                                                               \
    X(PX_COMM_MODE_ALLREDUCE, "allreduce")                                                         \
    X(PX_COMM_MODE_PS, "ps")                                                                       \
    X(PX_COMM_MODE_AUTO, "auto")
typedef enum px_comm_mode { PX_COMM_MODES(PX_ENUM_ID) PX_COMM_MODE_COUNT } px_comm_mode;

/* Variable classes (design.md §4; px_var_desc.var_class): sparse variables
 * are read only through row look-ups (Gather on axis 0 with run-time
 * indices), dense ones otherwise. */
#define PX_VAR_CLASSES(X)                                                                          \
    X(PX_VAR_DENSE, "dense")                                                                       \
    X(PX_VAR_SPARSE, "sparse")
typedef enum px_var_class { PX_VAR_CLASSES(PX_ENUM_ID) PX_VAR_CLASS_COUNT } px_var_class;

/* How a variable is synchronised (px_var_desc.sync): NONE, not at all (it
 * is never updated); ALLREDUCE, replicated, its gradient averaged by
 * AllReduce and every rank updating its copy; PS, its rows partitioned over
 * parameter-server shards. */
#define PX_VAR_SYNCS(X)                                                                            \
    X(PX_SYNC_NONE, "none")                                                                        \
    X(PX_SYNC_ALLREDUCE, "allreduce")                                                              \
    X(PX_SYNC_PS, "ps")
typedef enum px_var_sync { PX_VAR_SYNCS(PX_ENUM_ID) PX_SYNC_COUNT } px_var_sync;

/* Masked (sparse-trained) weights (--sparsity, px_masked_desc): the shape
 * of the mask (--sparsity-pattern: unstructured, blocks of a x b entries of
 * the logical [out, in] matrix, or n live of every m consecutive inputs),
 * how the initial mask is chosen (--sparsity-init: the largest magnitudes,
 * or random; erk sets each weight's sparsity at compile time and draws a
 * random mask), and the dynamic sparse training of the run (--dst). */
#define PX_SPARSITY_PATTERNS(X)                                                                    \
    X(PX_PATTERN_UNSTRUCTURED, "unstructured")                                                     \
    X(PX_PATTERN_BLOCK, "block")                                                                   \
    X(PX_PATTERN_NM, "n:m")
typedef enum px_sparsity_pattern {
    PX_SPARSITY_PATTERNS(PX_ENUM_ID) PX_PATTERN_COUNT
} px_sparsity_pattern;
#define PX_SPARSITY_INITS(X)                                                                       \
    X(PX_SPARSE_INIT_MAGNITUDE, "magnitude")                                                       \
    X(PX_SPARSE_INIT_RANDOM, "random")                                                             \
    X(PX_SPARSE_INIT_ERK, "erk")
typedef enum px_sparsity_init {
    PX_SPARSITY_INITS(PX_ENUM_ID) PX_SPARSE_INIT_COUNT
} px_sparsity_init;
#define PX_DST_KINDS(X)                                                                            \
    X(PX_DST_NONE, "none")                                                                         \
    X(PX_DST_SET, "set")                                                                           \
    X(PX_DST_RIGL, "rigl")
typedef enum px_dst_kind { PX_DST_KINDS(PX_ENUM_ID) PX_DST_COUNT } px_dst_kind;

/* How gradient buckets and parameter-server rows travel between ranks
 * (--wire; docs/relaxed_sync.md): as float32 (exact, the default) or
 * rounded to 16 bits, bfloat16 or IEEE half. Sums, optimizer state and
 * master weights stay float32 either way. Not in the program descriptor: a
 * run-time choice, recorded in checkpoints by name. */
#define PX_WIRE_FORMATS(X)                                                                         \
    X(PX_WIRE_FP32, "fp32")                                                                        \
    X(PX_WIRE_BF16, "bf16")                                                                        \
    X(PX_WIRE_FP16, "fp16")
typedef enum px_wire_format { PX_WIRE_FORMATS(PX_ENUM_ID) PX_WIRE_COUNT } px_wire_format;

/* Kernel parameters the code generator passes to runtime kernels
 * (px_kernel.h): Pad's mode (px_k_pad) and the reduction of the losses and
 * their gradients (px_k_softmax_ce, px_k_nll_loss, ...), named as the ONNX
 * attributes name them. */
#define PX_PAD_MODES(X)                                                                            \
    X(PX_PAD_CONSTANT, "constant")                                                                 \
    X(PX_PAD_REFLECT, "reflect")                                                                   \
    X(PX_PAD_EDGE, "edge")                                                                         \
    X(PX_PAD_WRAP, "wrap")
typedef enum px_pad_mode { PX_PAD_MODES(PX_ENUM_ID) PX_PAD_MODE_COUNT } px_pad_mode;
#define PX_REDUCTIONS(X)                                                                           \
    X(PX_REDUCTION_NONE, "none")                                                                   \
    X(PX_REDUCTION_SUM, "sum")                                                                     \
    X(PX_REDUCTION_MEAN, "mean")
typedef enum px_reduction { PX_REDUCTIONS(PX_ENUM_ID) PX_REDUCTION_COUNT } px_reduction;

/* Names ("unknown" for a value outside the enum, e.g. read from a damaged
 * checkpoint). */
static inline const char *px_optim_kind_name(int64_t k) {
    static const char *const names[] = {PX_OPTIM_KINDS(PX_ENUM_NAME)};
    _Static_assert(sizeof names / sizeof *names == PX_OPTIM_COUNT, "one name per optimizer");
    return k >= 0 && k < PX_OPTIM_COUNT ? names[k] : "unknown";
}
static inline const char *px_comm_mode_name(int64_t m) {
    static const char *const names[] = {PX_COMM_MODES(PX_ENUM_NAME)};
    _Static_assert(sizeof names / sizeof *names == PX_COMM_MODE_COUNT, "one name per comm mode");
    return m >= 0 && m < PX_COMM_MODE_COUNT ? names[m] : "unknown";
}
static inline const char *px_var_class_name(int64_t c) {
    static const char *const names[] = {PX_VAR_CLASSES(PX_ENUM_NAME)};
    _Static_assert(sizeof names / sizeof *names == PX_VAR_CLASS_COUNT, "one name per class");
    return c >= 0 && c < PX_VAR_CLASS_COUNT ? names[c] : "unknown";
}
static inline const char *px_var_sync_name(int64_t s) {
    static const char *const names[] = {PX_VAR_SYNCS(PX_ENUM_NAME)};
    _Static_assert(sizeof names / sizeof *names == PX_SYNC_COUNT, "one name per sync kind");
    return s >= 0 && s < PX_SYNC_COUNT ? names[s] : "unknown";
}

/* Optimizer state tensors per variable, each the variable's shape (-1:
 * no such optimizer): what the runtime allocates and checkpoints, and what
 * the compiler's memory model counts. */
static inline int px_optim_kind_slots(int64_t k) {
    switch ((px_optim_kind)k) {
    case PX_OPTIM_SGD: return 0;
    case PX_OPTIM_MOMENTUM: return 1; /* momentum buffer */
    case PX_OPTIM_ADAM: return 2;     /* exp_avg, exp_avg_sq */
    case PX_OPTIM_ADAGRAD: return 1;  /* state_sum */
    case PX_OPTIM_ADAMW: return 2;    /* exp_avg, exp_avg_sq */
    case PX_OPTIM_RMSPROP: return 1;  /* square_avg */
    case PX_OPTIM_COUNT: break;
    }
    return -1;
}

static inline const char *px_sparsity_pattern_name(int64_t k) {
    static const char *const names[] = {PX_SPARSITY_PATTERNS(PX_ENUM_NAME)};
    _Static_assert(sizeof names / sizeof *names == PX_PATTERN_COUNT, "one name per pattern");
    return k >= 0 && k < PX_PATTERN_COUNT ? names[k] : "unknown";
}
static inline const char *px_sparsity_init_name(int64_t k) {
    static const char *const names[] = {PX_SPARSITY_INITS(PX_ENUM_NAME)};
    _Static_assert(sizeof names / sizeof *names == PX_SPARSE_INIT_COUNT, "one name per init");
    return k >= 0 && k < PX_SPARSE_INIT_COUNT ? names[k] : "unknown";
}
static inline const char *px_dst_kind_name(int64_t k) {
    static const char *const names[] = {PX_DST_KINDS(PX_ENUM_NAME)};
    _Static_assert(sizeof names / sizeof *names == PX_DST_COUNT, "one name per DST kind");
    return k >= 0 && k < PX_DST_COUNT ? names[k] : "unknown";
}

static inline const char *px_wire_format_name(int64_t w) {
    static const char *const names[] = {PX_WIRE_FORMATS(PX_ENUM_NAME)};
    _Static_assert(sizeof names / sizeof *names == PX_WIRE_COUNT, "one name per wire format");
    return w >= 0 && w < PX_WIRE_COUNT ? names[w] : "unknown";
}
/* Bytes a float32 takes on the wire in format w. */
static inline int px_wire_format_bytes(int64_t w) {
    return w == PX_WIRE_BF16 || w == PX_WIRE_FP16 ? 2 : 4;
}

/* The value named s, or -1 (the parsers of attributes). */
static inline int px_pad_mode_from_name(const char *s) {
    static const char *const names[] = {PX_PAD_MODES(PX_ENUM_NAME)};
    _Static_assert(sizeof names / sizeof *names == PX_PAD_MODE_COUNT, "one name per pad mode");
    for (int i = 0; i < PX_PAD_MODE_COUNT; i++)
        if (strcmp(names[i], s) == 0) return i;
    return -1;
}
static inline int px_reduction_from_name(const char *s) {
    static const char *const names[] = {PX_REDUCTIONS(PX_ENUM_NAME)};
    _Static_assert(sizeof names / sizeof *names == PX_REDUCTION_COUNT, "one name per reduction");
    for (int i = 0; i < PX_REDUCTION_COUNT; i++)
        if (strcmp(names[i], s) == 0) return i;
    return -1;
}

/* The value of --sparsity-init / --dst named s, or -1. */
static inline int px_sparsity_init_from_name(const char *s) {
    static const char *const names[] = {PX_SPARSITY_INITS(PX_ENUM_NAME)};
    for (int i = 0; i < PX_SPARSE_INIT_COUNT; i++)
        if (strcmp(names[i], s) == 0) return i;
    return -1;
}
static inline int px_dst_kind_from_name(const char *s) {
    static const char *const names[] = {PX_DST_KINDS(PX_ENUM_NAME)};
    for (int i = 0; i < PX_DST_COUNT; i++)
        if (strcmp(names[i], s) == 0) return i;
    return -1;
}

/* The value of --wire named s, or -1. */
static inline int px_wire_format_from_name(const char *s) {
    static const char *const names[] = {PX_WIRE_FORMATS(PX_ENUM_NAME)};
    for (int i = 0; i < PX_WIRE_COUNT; i++)
        if (strcmp(names[i], s) == 0) return i;
    return -1;
}

/* The values compiled programs hold (PX_PROGRAM_ABI 14). */
_Static_assert(PX_OPTIM_SGD == 0 && PX_OPTIM_MOMENTUM == 1 && PX_OPTIM_ADAM == 2 &&
                   PX_OPTIM_ADAGRAD == 3 && PX_OPTIM_ADAMW == 4 && PX_OPTIM_RMSPROP == 5 &&
                   PX_OPTIM_COUNT == 6,
               "optimizer kinds are ABI");
_Static_assert(PX_COMM_MODE_HYBRID == 0 && PX_COMM_MODE_ALLREDUCE == 1 && PX_COMM_MODE_PS == 2 &&
                   PX_COMM_MODE_COUNT == 4,
               "comm modes are ABI");
_Static_assert(PX_VAR_DENSE == 0 && PX_VAR_SPARSE == 1 && PX_VAR_CLASS_COUNT == 2,
               "variable classes are ABI");
_Static_assert(PX_PAD_CONSTANT == 0 && PX_PAD_REFLECT == 1 && PX_PAD_EDGE == 2 && PX_PAD_WRAP == 3,
               "pad modes are kernel ABI");
_Static_assert(PX_REDUCTION_NONE == 0 && PX_REDUCTION_SUM == 1 && PX_REDUCTION_MEAN == 2,
               "reductions are kernel ABI");
_Static_assert(PX_SYNC_NONE == 0 && PX_SYNC_ALLREDUCE == 1 && PX_SYNC_PS == 2 && PX_SYNC_COUNT == 3,
               "sync kinds are ABI");
/* Checkpoints record the wire format by value (program/checkpoint.h). */
_Static_assert(PX_WIRE_FP32 == 0 && PX_WIRE_BF16 == 1 && PX_WIRE_FP16 == 2,
               "wire formats are checkpoint ABI");
_Static_assert(PX_PATTERN_UNSTRUCTURED == 0 && PX_PATTERN_BLOCK == 1 && PX_PATTERN_NM == 2 &&
                   PX_SPARSE_INIT_MAGNITUDE == 0 && PX_SPARSE_INIT_RANDOM == 1 &&
                   PX_SPARSE_INIT_ERK == 2,
               "sparsity patterns and inits are ABI");

#endif
