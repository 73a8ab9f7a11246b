#include "opset_check.h"

#include <string.h>

/* First ai.onnx opset of every op in the table that did not exist in opset 1
 * (from onnx.defs' schema history; Mish and Gelu from the ONNX changelog). */
static const struct {
    const char *op;
    int since;
} first_opset[] = {
    {"Acos", 7},
    {"Acosh", 9},
    {"Asin", 7},
    {"Asinh", 9},
    {"Atan", 7},
    {"Atanh", 9},
    {"Celu", 12},
    {"Cos", 7},
    {"Cosh", 9},
    {"Erf", 9},
    {"Gelu", 20},
    {"HardSwish", 14},
    {"Mish", 18},
    {"Round", 11},
    {"Shrink", 9},
    {"Sign", 9},
    {"Sin", 7},
    {"Sinh", 9},
    {"Tan", 7},
    {"ThresholdedRelu", 10},
    {"IsNaN", 9},
    {"IsInf", 10},
    {"CastLike", 15},
    {"Mod", 10},
    {"GreaterOrEqual", 12},
    {"LessOrEqual", 12},
    {"Where", 9},
    {"CumSum", 11},
    {"GatherElements", 11},
    {"Expand", 8},
    {"ConstantOfShape", 9},
    {"Range", 11},
    {"OneHot", 9},
    {"Trilu", 14},
    {"EyeLike", 9},
    {"LayerNormalization", 17},
    {"NegativeLogLikelihoodLoss", 12},
    {"SoftmaxCrossEntropyLoss", 12},
};

static int op_since(const char *op) {
    for (size_t i = 0; i < sizeof first_opset / sizeof first_opset[0]; i++)
        if (strcmp(first_opset[i].op, op) == 0) return first_opset[i].since;
    return 1;
}

static int is_onnx_domain(const char *d) {
    return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

int px_check_opsets(const px_graph *g, const char *model_name, px_diag *d) {
    for (int i = 0; i < g->n_opsets; i++) {
        const char *dom = g->opsets[i].domain;
        int64_t v = g->opsets[i].version;
        int64_t max = is_onnx_domain(dom)                    ? PX_MAX_OPSET_ONNX
                      : strcmp(dom, PX_DOMAIN_TRAINING) == 0 ? PX_MAX_OPSET_TRAINING
                                                             : -1;
        if (max > 0 && v > max)
            return px_error(d,
                            "%s imports opset %lld of domain '%s'; this compiler implements "
                            "opsets 1 to %lld of it (re-export the model with an older opset)",
                            model_name, (long long)v, is_onnx_domain(dom) ? "ai.onnx" : dom,
                            (long long)max);
    }
    int64_t onnx = px_graph_opset(g, "");
    if (onnx <= 0) return 0; /* no ai.onnx opset declared: nothing to compare with */
    int bad = 0;
    char lb[256];
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        if (n->dead || n->op == PX_OP_UNKNOWN || !is_onnx_domain(n->domain)) continue;
        int since = op_since(n->op_type);
        if (onnx >= since) continue;
        if (!bad++)
            px_error(d, "%s imports ai.onnx opset %lld, older than some of its operators",
                     model_name, (long long)onnx);
        px_note(d, "node %s needs opset %d or newer", px_node_label(n, lb, sizeof lb), since);
    }
    return bad ? -1 : 0;
}
