/* Elementwise fusion: chains of elementwise/broadcasting nodes on float32 and
 * bool values (the op table's PX_F_ELEMWISE ops) become
 * one loop, emitted inline as LLVM IR over noalias buffers so LLVM can
 * vectorize it (heavy ops stay runtime-kernel calls). */
#ifndef PX_FUSE_H
#define PX_FUSE_H

#include "plan.h"

#define PX_FUSE_MAX_INPUTS 16
#define PX_FUSE_MAX_EXPRS 64

typedef enum px_fexpr_kind { PX_FE_INPUT, PX_FE_OP } px_fexpr_kind;

/* One scalar operation of the group; operands index earlier exprs. */
typedef struct px_fexpr {
    px_fexpr_kind kind;
    int input;         /* PX_FE_INPUT: index into px_fusion.inputs */
    px_op op;          /* PX_FE_OP */
    px_dtype dtype;    /* of the result: PX_F32 or PX_BOOL */
    int a, b, c;       /* operands (-1 when the op has fewer) */
    float alpha, beta; /* attributes (LeakyRelu alpha, Clip min/max, Elu alpha...) */
    int mode;          /* Gelu: 1 = tanh approximation; Mod: fmod */
} px_fexpr;

typedef struct px_fusion {
    int n_inputs;
    const px_value *inputs[PX_FUSE_MAX_INPUTS]; /* broadcast to output's shape */
    const px_value *output;
    int n_exprs;
    px_fexpr exprs[PX_FUSE_MAX_EXPRS]; /* the last one is the result */
    int n_nodes;                       /* nodes folded into the group */
} px_fusion;

/* The operands of op's fused loop, or NULL for an op that is not
 * PX_F_ELEMWISE: its dtype signature from ops.def (ir/op.h), one letter per
 * operand, '>', one for the result, where 'b' is a bool value, '?' a
 * float32 or bool one (Cast), and every other letter a float32 one. */
const char *px_fuse_signature(px_op op);

/* 1 if the node can be part of a fused group: its op is PX_F_ELEMWISE, its
 * dtypes fit the op's signature, and its inputs have the output's shape or,
 * for PX_F_BROADCAST ops, broadcast to it. */
int px_fusable(const px_graph *g, const px_node *n);

/* Rewrites the plan: each maximal tree of fusible nodes whose inner values
 * have one use becomes one call with a px_fusion. Returns the number of
 * groups made, or -1 on error. */
int px_fuse_plan(const px_graph *g, px_plan *plan, px_diag *d);

void px_fusion_free(struct px_fusion *f);

#endif
