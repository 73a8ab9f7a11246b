/* Shape functions of the ai.parallax training-step and communication ops.
 *
 * Update(W, G) attr var, optimizer...            -> ()  W -= step(G)
 * RowUpdate(W, idx, rows, count) attr var...     -> ()  row update of a row set
 * RowsToDense(idx, rows, count) attr n_rows      -> (dense [n_rows, row...], mask [n_rows])
 * MaskedUpdate(W, dense, mask) attr var...       -> ()  row update of the masked rows
 * AllReduceStart(g_1..g_k) attr bucket           -> ()
 * AllReduceWait(g_1..g_k) attr bucket            -> (mean_1..mean_k), like the inputs
 * PSPull(W, idx) attr var                        -> (cache [n_idx, row...], remap like idx)
 *                                                       the rows idx names, fetched from
 *                                                       the shards into a compact cache;
 *                                                       Gather(cache, remap) == Gather(W, idx)
 * PSPull(W) attr var                             -> ()  every row of a dense PS variable
 *                                                       into W (its replica)
 * PSPush(W, idx, rows, count) attr var           -> ()
 * PSPushDense(W, G) attr var                     -> ()
 * Assign(state, value)                           -> ()  state = value (BatchNorm's
 *                                                       running statistics) */
#include "shape_util.h"

int px_shape_side_effect(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    if (n->n_outputs != 0)
        return px_su_error(d, n, "has no outputs (it updates state), not %d", n->n_outputs);
    if (n->n_inputs < 1 || !n->inputs[0]) return px_su_error(d, n, "needs at least one input");
    return 0;
}

int px_shape_rows_to_dense(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    px_value *idx, *rows;
    if (px_su_arity(n, 3, 3, d) || px_su_need(n, 0, "indices", d, &idx) ||
        px_su_need(n, 1, "rows", d, &rows))
        return -1;
    int64_t n_rows = px_attr_int(n, "n_rows", -1);
    if (n_rows < 0) return px_su_error(d, n, "needs the attribute 'n_rows'");
    if (n->n_outputs != 2) return px_su_error(d, n, "has 2 outputs (dense, mask)");
    if (rows->shape.rank < 1) return px_su_error(d, n, "rows must have rank >= 1");
    px_shape ds = rows->shape, ms = px_su_unknown_rank(1);
    px_su_set_dim(&ds, 0, n_rows);
    px_su_set_dim(&ms, 0, n_rows);
    return px_su_set(n, 0, rows->dtype, &ds, d) || px_su_set(n, 1, rows->dtype, &ms, d);
}

int px_shape_ps_pull(px_graph *g, px_node *n, px_diag *d) {
    if (n->n_outputs == 0) return px_shape_side_effect(g, n, d);
    px_value *w, *idx;
    if (px_su_arity(n, 2, 2, d) || px_su_need(n, 0, "variable", d, &w) ||
        px_su_need(n, 1, "indices", d, &idx))
        return -1;
    if (n->n_outputs != 2) return px_su_error(d, n, "has 2 outputs (cache, remap)");
    if (w->shape.rank < 1) return px_su_error(d, n, "the variable must have rank >= 1");
    if (idx->dtype != PX_I32 && idx->dtype != PX_I64)
        return px_su_error(d, n, "indices must be int32 or int64");
    /* One cache row per index: the most distinct rows a pull can bring. */
    px_shape cs = w->shape;
    int64_t n_idx = px_shape_numel(&idx->shape);
    if (n_idx >= 0) {
        px_su_set_dim(&cs, 0, n_idx);
    } else {
        cs = px_su_unknown_rank(w->shape.rank);
        for (int k = 1; k < w->shape.rank; k++) px_su_copy_dim(&cs, k, &w->shape, k);
    }
    return px_su_set(n, 0, w->dtype, &cs, d) || px_su_set(n, 1, idx->dtype, &idx->shape, d);
}

int px_shape_allreduce_wait(px_graph *g, px_node *n, px_diag *d) {
    (void)g;
    if (n->n_outputs != n->n_inputs)
        return px_su_error(d, n, "has one output per input (%d inputs, %d outputs)", n->n_inputs,
                           n->n_outputs);
    for (int i = 0; i < n->n_inputs; i++) {
        px_value *in;
        if (px_su_need(n, i, "gradient", d, &in)) return -1;
        if (px_su_set(n, i, in->dtype, &in->shape, d)) return -1;
    }
    return 0;
}
