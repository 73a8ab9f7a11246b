#include "op.h"

#include <string.h>

const px_op_info px_op_table[PX_OP_COUNT] = {
    [PX_OP_UNKNOWN] = {"<unknown>", "", 0, NULL},
#define OP(name, domain, flags, shape_fn)                                                          \
    [PX_OP_##name] = {#name, domain, flags, px_shape_##shape_fn},
#include "ops.def"
#undef OP
};

/* ONNX names the default domain either "" or "ai.onnx". */
static const char *canonical_domain(const char *domain) {
    if (!domain || strcmp(domain, "ai.onnx") == 0) return "";
    return domain;
}

px_op px_op_lookup(const char *op_type, const char *domain) {
    if (!op_type) return PX_OP_UNKNOWN;
    const char *dom = canonical_domain(domain);
    for (int i = 1; i < PX_OP_COUNT; i++)
        if (strcmp(px_op_table[i].name, op_type) == 0 && strcmp(px_op_table[i].domain, dom) == 0)
            return (px_op)i;
    return PX_OP_UNKNOWN;
}

const char *px_op_name(px_op op) {
    return ((int)op >= 0 && op < PX_OP_COUNT) ? px_op_table[op].name : "<invalid>";
}
