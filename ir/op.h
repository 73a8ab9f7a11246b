/* The op table: ops.def is the single place an op is declared. It generates
 * the px_op enum, the names/domains table and per-op metadata here, and each
 * later layer's per-op table (gradient rules, lowerings, constant
 * evaluators) with the PX_OP_RULE_* helpers below. */
#ifndef PX_OP_H
#define PX_OP_H

#include "diag.h"
#include "dtype.h"

struct px_graph;
struct px_node;

#define PX_DOMAIN_ONNX ""
#define PX_DOMAIN_TRAINING "ai.onnx.preview.training"
#define PX_DOMAIN_PARALLAX "ai.parallax"

/* Each flag is read by the code named beside it; ir/op.c checks at compile
 * time that the flags agree with ops.def's rule columns. */
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
#define OP(name, domain, flags, sig, shape, grad, lower, eval) PX_OP_##name,
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
    const char *sig; /* elementwise dtype rule (below); "" when none */
    px_shape_fn infer;
} px_op_info;

extern const px_op_info px_op_table[PX_OP_COUNT];

/* Resolves an op by type and domain ("" and "ai.onnx" are the same). */
px_op px_op_lookup(const char *op_type, const char *domain);
const char *px_op_name(px_op op);

#define OP(name, domain, flags, sig, shape, grad, lower, eval)                                     \
    int px_shape_##shape(struct px_graph *g, struct px_node *n, px_diag *d);
#include "ops.def"
#undef OP

/* ---- elementwise dtype rules (ops.def's sig column) ----
 * One letter per operand, '>', one letter for the result:
 *   f  floating point            s  floating point or signed integer
 *   n  numeric (float, int, uint)  b  bool
 *   a  any dtype                  ?  any dtype, converted: the result's dtype
 *                                    is chosen by an attribute or an input
 * A result letter other than 'b' and '?' means "the first operand's dtype".
 * Variadic ops repeat their last operand letter. Operands past the letters
 * (Clip's bounds, CastLike's target) are the shape function's business. A
 * fused loop (compiler/codegen/fuse.c) holds 'b' operands as bool, '?' ones
 * as float32 or bool, and every other letter as float32. */

/* The dtype classes (dtype.h) of a signature letter; 0 for none. */
unsigned px_sig_class(char letter);
/* Operands before the '>' of op's signature; 0 when op has none. */
int px_op_arity(px_op op);
/* The classes operand i of op admits (PX_DTC_ALL when op has no rule). */
unsigned px_op_operand_class(px_op op, int i);
/* The result's letter ('\0' when op has no rule). */
char px_op_result_letter(px_op op);

/* ---- helpers for the per-layer tables ----
 * A rule column of ops.def names a suffix (or none). A layer declares and
 * tables its rules with
 *   #define OP(name, domain, flags, sig, shape, grad, lower, eval) \
 *       PX_OP_RULE_DECLARE(px_grad_rule, px_grad_, grad)
 * and   [PX_OP_##name] = PX_OP_RULE_REF(px_grad_, grad),
 * where px_grad_rule is a function type. PX_OP_RULE_IS_NONE(x) is 1 for
 * none and 0 for any other identifier, usable in static assertions. */
#define PX_OP_RULE_PROBE_none ~, 1
#define PX_OP_RULE_SECOND_(a, b, ...) b
#define PX_OP_RULE_SECOND(...) PX_OP_RULE_SECOND_(__VA_ARGS__)
#define PX_OP_RULE_IS_NONE(x) PX_OP_RULE_SECOND(PX_OP_RULE_PROBE_##x, 0, ~)
#define PX_OP_RULE_CAT_(a, b) a##b
#define PX_OP_RULE_CAT(a, b) PX_OP_RULE_CAT_(a, b)
#define PX_OP_RULE_IF_1(then, else_) then
#define PX_OP_RULE_IF_0(then, else_) else_
#define PX_OP_RULE_IF(cond) PX_OP_RULE_CAT(PX_OP_RULE_IF_, cond)
#define PX_OP_RULE_REF(prefix, x) PX_OP_RULE_IF(PX_OP_RULE_IS_NONE(x))(NULL, prefix##x)
#define PX_OP_RULE_DECLARE(type, prefix, x) PX_OP_RULE_IF(PX_OP_RULE_IS_NONE(x))(, type prefix##x;)

#endif
