/* Test support for finite-difference gradient checks of whole models. */
#include "gradcheck.h"

/* Every float value, initializer and constant becomes float64 (and Cast to
 * float casts to double), so finite differences are accurate to ~1e-9. */
void px_test_promote_f64(px_graph *g) {
    px_diag d;
    px_diag_init(&d);
    for (int i = 0; i < g->n_values; i++) {
        px_value *v = g->values[i];
        if (v->dtype != PX_F32) continue;
        v->dtype = PX_F64;
        if (v->data) {
            px_tensor *t = px_tensor_new(PX_F64, &v->data->shape, &d);
            for (int64_t j = 0; j < px_tensor_numel(t); j++)
                px_tensor_set_f64(t, j, px_tensor_get_f64(v->data, j));
            px_tensor_free(v->data);
            v->data = t;
        }
    }
    for (int k = 0; k < g->n_nodes; k++)
        if (g->nodes[k]->op == PX_OP_Cast && px_attr_int(g->nodes[k], "to", 0) == PX_F32)
            px_node_set_attr_int(g->nodes[k], "to", PX_F64);
}

/* Index range of an integer input: the rows of the table it gathers from,
 * the classes of the loss it labels, else 2. */
int64_t px_test_index_range(const px_value *v) {
    for (int u = 0; u < v->n_uses; u++) {
        const px_node *n = v->uses[u].node;
        if (n->op == PX_OP_Gather && v->uses[u].index == 1) return n->inputs[0]->shape.dims[0];
        if ((n->op == PX_OP_SoftmaxCrossEntropyLoss || n->op == PX_OP_NegativeLogLikelihoodLoss) &&
            v->uses[u].index == 1)
            return n->inputs[0]->shape.dims[1];
    }
    return 2;
}
