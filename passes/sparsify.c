/* The products of the masked weights the sparse kernels compute (the plan's
 * masked weights without dense_path; weight_sparsity.h), before autodiff:
 *
 *   MatMul(A, W)          ──▶ SparseMatMul(A, W)
 *   Gemm(A, W[, C])       ──▶ SparseMatMul(A, W) [+ Add(·, C)]
 *
 * attributes mask (the weight's number in the plan's masked table),
 * w_in_major and nnz. Autodiff then gives the weight its compact gradient
 * (grad_sparse.c) and the optimizer pass a SparseUpdate. Weights on the
 * dense path keep their MatMul/Gemm: the optimizer pass packs their dense
 * gradient (SparsePackGrad). */
#include "train.h"

#include <stdio.h>
#include <stdlib.h>

static int position(const px_graph *g, const px_node *n) {
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] == n) return i;
    return -1;
}

/* Replaces the product n (A times W) by SparseMatMul, plus the Add of a
 * Gemm's C, writing n's output. */
static int rewrite_use(px_graph *g, px_node *n, int mask, const px_masked_plan *m, px_diag *d) {
    px_value *a = n->inputs[0], *w = n->inputs[1], *y = n->outputs[0];
    px_value *c = n->op == PX_OP_Gemm && n->n_inputs > 2 ? n->inputs[2] : NULL;
    int pos = position(g, n);
    char name[512];
    snprintf(name, sizeof name, "sparse/%s", n->name ? n->name : w->name);
    px_graph_remove_node(g, n);
    px_value *prod = y;
    if (c) {
        char vname[300];
        snprintf(vname, sizeof vname, "%s.sparse", y->name);
        prod = px_graph_new_value(g, vname, y->dtype, &y->shape);
    }
    px_value *ins[2] = {a, w};
    px_node *s =
        px_graph_insert_node(g, pos, "SparseMatMul", PX_DOMAIN_PARALLAX, name, 2, ins, 1, &prod);
    if (!s) return px_error(d, "out of memory rewriting the products of '%s'", w->name);
    px_node_set_attr_int(s, "mask", mask);
    px_node_set_attr_int(s, "w_in_major", m->w_in_major);
    px_node_set_attr_int(s, "nnz", m->nnz);
    if (c) {
        px_value *add_in[2] = {prod, c};
        snprintf(name, sizeof name, "sparse/%s/bias", n->name ? n->name : w->name);
        if (!px_graph_insert_node(g, pos + 1, "Add", "", name, 2, add_in, 1, &y))
            return px_error(d, "out of memory rewriting the products of '%s'", w->name);
    }
    return 0;
}

int px_pass_sparsify(px_graph *g, const px_train_plan *plan, px_diag *d) {
    for (int i = 0; i < plan->n_masked; i++) {
        const px_masked_plan *m = &plan->masked[i];
        if (m->dense_path) continue;
        px_value *w = plan->vars[m->var].value;
        /* the uses change as they are rewritten: take them first */
        int n = 0;
        px_node **uses = calloc((size_t)w->n_uses + 1, sizeof *uses);
        if (!uses) return px_error(d, "out of memory");
        for (int u = 0; u < w->n_uses; u++)
            if (!w->uses[u].node->dead) uses[n++] = w->uses[u].node;
        int rc = 0;
        for (int k = 0; k < n && !rc; k++) rc = rewrite_use(g, uses[k], i, m, d);
        free(uses);
        if (rc) return -1;
    }
    px_graph_compact(g);
    return 0;
}
