#include "op.h"

#include <string.h>

const px_op_info px_op_table[PX_OP_COUNT] = {
    [PX_OP_UNKNOWN] = {"<unknown>", "", 0, "", NULL},
#define OP(name, domain, flags, sig, shape, grad, lower, eval)                                     \
    [PX_OP_##name] = {#name, domain, flags, sig, px_shape_##shape},
#include "ops.def"
#undef OP
};

/* The flags and the rule columns of ops.def must agree, so that a missing
 * rule stops the build instead of failing a lookup at run time. */
#define OP(name, domain, flags, sig, shape, grad, lower, eval)                                     \
    _Static_assert((((flags)&PX_F_DIFF) == 0) == PX_OP_RULE_IS_NONE(grad),                         \
                   "ops.def: " #name " must name a gradient rule exactly when it has PX_F_DIFF");  \
    _Static_assert((((flags)&PX_F_COMPILE_TIME) != 0) == PX_OP_RULE_IS_NONE(lower),                \
                   "ops.def: " #name                                                               \
                   " must name a lowering exactly when it lacks PX_F_COMPILE_TIME");               \
    _Static_assert(!((flags)&PX_F_ELEMWISE) || sizeof(sig) > 1,                                    \
                   "ops.def: PX_F_ELEMWISE op " #name " needs a dtype signature (its fused "       \
                   "loop's operands)");
#include "ops.def"
#undef OP

/* ONNX names the default domain either "" or "ai.onnx". */
static const char *canonical_domain(const char *domain) {
    if (!domain || strcmp(domain, "ai.onnx") == 0) return "";
    return domain;
}

px_op px_op_lookup(const char *op_type, const char *domain) {
    if (!op_type) return PX_OP_UNKNOWN;
    const char *dom = canonical_domain(domain);
    /* every node is looked up when it is made (a trained graph of 100k
     * initializers makes half a million): the first letter skips most of
     * the table without a call */
    for (int i = 1; i < PX_OP_COUNT; i++)
        if (px_op_table[i].name[0] == op_type[0] && strcmp(px_op_table[i].name, op_type) == 0 &&
            strcmp(px_op_table[i].domain, dom) == 0)
            return (px_op)i;
    return PX_OP_UNKNOWN;
}

const char *px_op_name(px_op op) {
    return ((int)op >= 0 && op < PX_OP_COUNT) ? px_op_table[op].name : "<invalid>";
}

/* ---- elementwise dtype rules ---- */

unsigned px_sig_class(char letter) {
    switch (letter) {
    case 'f': return PX_DTC_FLOAT;
    case 's': return PX_DTC_FLOAT | PX_DTC_SINT;
    case 'n': return PX_DTC_NUMERIC;
    case 'b': return PX_DTC_BOOL;
    case 'a':
    case '?': return PX_DTC_ALL;
    default: return 0;
    }
}

static const char *sig_of(px_op op) {
    return ((int)op > PX_OP_UNKNOWN && op < PX_OP_COUNT) ? px_op_table[op].sig : "";
}

int px_op_arity(px_op op) {
    const char *gt = strchr(sig_of(op), '>');
    return gt ? (int)(gt - sig_of(op)) : 0;
}

unsigned px_op_operand_class(px_op op, int i) {
    int arity = px_op_arity(op);
    if (arity == 0 || i < 0) return PX_DTC_ALL;
    if (i >= arity) {
        if (!(px_op_table[op].flags & PX_F_VARIADIC)) return PX_DTC_ALL;
        i = arity - 1;
    }
    return px_sig_class(sig_of(op)[i]);
}

char px_op_result_letter(px_op op) {
    const char *gt = strchr(sig_of(op), '>');
    return gt ? gt[1] : '\0';
}
