#include "buffer_stages.h"

static void touch(int *stage, const px_value *v, int s) {
    if (!v || px_value_is_const(v)) return;
    int *at = &stage[v->id];
    *at = *at == PX_BUFFER_UNUSED || *at == s ? s : PX_BUFFER_SHARED;
}

/* The stage whose ranks touch buffer b of call k, or PX_BUFFER_SHARED. */
static int call_buffer_stage(const px_kcall *k, int b) {
    const px_node *n = k->node;
    if (!n) return PX_BUFFER_SHARED;
    int last = b == k->n_bufs - 1;
    if (n->op == PX_OP_PPTransfer)
        return (int)px_attr_int(n, last ? "to" : "from", PX_BUFFER_SHARED);
    if (n->op == PX_OP_PPBroadcast)
        return last ? PX_BUFFER_SHARED : (int)px_attr_int(n, "from", PX_BUFFER_SHARED);
    int64_t s = px_attr_int(n, "pp_stage", -1);
    return s >= 0 ? (int)s : PX_BUFFER_SHARED;
}

int px_buffer_stages(const px_graph *g, const px_plan *plan, const int *root, int *stage) {
    int n_stages = 0;
    for (int i = 0; i < g->n_values; i++) stage[i] = PX_BUFFER_UNUSED;
    for (int c = 0; c < plan->n_calls; c++) {
        const px_kcall *k = &plan->calls[c];
        for (int b = 0; b < k->n_bufs; b++) {
            int s = call_buffer_stage(k, b);
            touch(stage, k->bufs[b], s);
            if (s + 1 > n_stages) n_stages = s + 1;
        }
    }
    for (int i = 0; i < g->n_inputs; i++) touch(stage, g->inputs[i], PX_BUFFER_SHARED);
    for (int i = 0; i < g->n_outputs; i++) touch(stage, g->outputs[i], PX_BUFFER_SHARED);
    /* a view group is one buffer: the union of its members' stages */
    for (int i = 0; i < g->n_values; i++)
        if (root[i] != i && stage[i] != PX_BUFFER_UNUSED)
            touch(stage, g->values[root[i]], stage[i]);
    for (int i = 0; i < g->n_values; i++) stage[i] = stage[root[i]];
    return n_stages;
}
