/* Test support for finite-difference gradient checks of whole models. */
#include "gradcheck.h"

#include "interp.h"
#include "shape_infer.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

static uint64_t rng = 88172645463325252ull;

double tg_urand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

px_tensor *tg_rand_tensor(px_dtype dt, int rank, const int64_t *dims, double lo, double hi) {
    px_shape s = px_shape_make(rank, dims);
    px_diag d;
    px_diag_init(&d);
    px_tensor *x = px_tensor_new(dt, &s, &d);
    for (int64_t i = 0; i < px_tensor_numel(x); i++)
        px_tensor_set_f64(x, i, lo + (hi - lo) * tg_urand());
    return x;
}

tg *tg_new(void) {
    tg *t = calloc(1, sizeof *t);
    t->g = px_graph_new("autodiff_test");
    px_graph_set_opset(t->g, "", 17);
    px_diag_init(&t->d);
    return t;
}

void tg_free(tg *t) {
    for (int i = 0; i < t->g->n_inputs; i++) px_tensor_free(t->in[i]);
    px_graph_free(t->g);
    free(t);
}

px_node *tg_node(tg *t, const char *op, int n_in, px_value *const *in, int n_out) {
    px_value *outs[4];
    px_shape u = px_shape_unknown();
    for (int i = 0; i < n_out; i++) outs[i] = px_graph_new_value(t->g, op, PX_UNDEFINED, &u);
    return px_graph_add_node(t->g, op, "", op, n_in, in, n_out, outs);
}

px_value *tg_out(tg *t, px_node *n) {
    cr_assert_eq(px_infer_node(t->g, n, &t->d), 0, "%s", t->d.text);
    return n->outputs[0];
}

px_value *tg_op1(tg *t, const char *op, px_value *x) {
    return tg_out(t, tg_node(t, op, 1, &x, 1));
}

px_value *tg_op2(tg *t, const char *op, px_value *x, px_value *y) {
    px_value *in[2] = {x, y};
    return tg_out(t, tg_node(t, op, 2, in, 1));
}

void tg_free_outs(tg *t, px_tensor **o) {
    for (int i = 0; i < t->g->n_outputs; i++) px_tensor_free(o[i]);
    free(o);
}

double tg_run_loss(tg *t, const px_plan *plan, px_tensor ***outs) {
    px_tensor **o = NULL;
    cr_assert_eq(px_interp_run(t->g, plan, t->in, &o, &t->d), 0, "%s", t->d.text);
    double l = px_tensor_get_f64(o[0], 0);
    if (outs)
        *outs = o;
    else
        tg_free_outs(t, o);
    return l;
}

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
