/* The op table: ops.def is the single place an op is declared. It generates
 * the px_op enum, the names/domains table and per-op metadata. */
#ifndef PX_OP_H
#define PX_OP_H

#include "diag.h"

struct px_graph;
struct px_node;

#define PX_DOMAIN_ONNX ""
#define PX_DOMAIN_TRAINING "ai.onnx.preview.training"
#define PX_DOMAIN_PARALLAX "ai.parallax"

/* Each flag is read by the code named beside it, and tests/unit/test_op_table.c
 * checks that the flags agree with the per-op tables. */
enum px_op_flags {
    PX_F_ELEMWISE = 1u << 0,     /* output[i] depends only on input[i] (after broadcast):
                                    fused into one loop (compiler/codegen/fuse.c) */
    PX_F_BROADCAST = 1u << 1,    /* inputs broadcast numpy-style (fuse.c) */
    PX_F_DIFF = 1u << 2,         /* has a gradient rule (autodiff) */
    PX_F_VARIADIC = 1u << 3,     /* any number of inputs (shape inference, fuse.c) */
    PX_F_RANDOM = 1u << 4,       /* draws random numbers in training mode: never folded */
    PX_F_SIDE_EFFECT = 1u << 5,  /* writes state or communicates: never removed as dead */
    PX_F_COMPILE_TIME = 1u << 6, /* no lowering: the folded stage (passes/pipeline.c)
                                    rewrites every node of the op or refuses the model */
};

typedef enum px_op {
    PX_OP_UNKNOWN = 0,
#define OP(name, domain, flags, shape_fn) PX_OP_##name,
#include "ops.def"
#undef OP
    PX_OP_COUNT
} px_op;

/* Shape/dtype inference: reads n's inputs (dtype, shape, constant data),
 * sets dtype and shape of n's outputs. Returns 0, or -1 with an error in d
 * naming the node. Unknown dims may stay unknown (-1, with sym when the
 * output dim is a copy of a symbolic input dim). */
typedef int (*px_shape_fn)(struct px_graph *g, struct px_node *n, px_diag *d);

typedef struct px_op_info {
    const char *name;
    const char *domain;
    unsigned flags;
    px_shape_fn infer;
} px_op_info;

extern const px_op_info px_op_table[PX_OP_COUNT];

/* Resolves an op by type and domain ("" and "ai.onnx" are the same). */
px_op px_op_lookup(const char *op_type, const char *domain);
const char *px_op_name(px_op op);

#define OP(name, domain, flags, shape_fn)                                                          \
    int px_shape_##shape_fn(struct px_graph *g, struct px_node *n, px_diag *d);
#include "ops.def"
#undef OP

#endif
