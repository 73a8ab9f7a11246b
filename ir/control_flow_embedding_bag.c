/* PyTorch's export of nn.EmbeddingBag (torch 1.13, opset 17, with offsets or
 * fixed 2-D bags, modes sum / mean / max, optional per_sample_weights) is
 *
 *   S = Concat(offsets, [len(X)])   E = S[1:]   M = Gather(Shape(E), 0)
 *   Y = Loop(M, true) body(i, cond):
 *         b = Slice(X, Unsqueeze(S[i], 0), Unsqueeze(E[i], 0), axes=[0])
 *         r = Gather(W, b)                      (axis 0)
 *        [r = r * Unsqueeze(Slice(w, same bounds), 1)]   per_sample_weights
 *         return cond, Reduce{Sum,Mean,Max}(r, axes=[0], keepdims=0)
 *
 * with X the flat indices (a Reshape of the 2-D input for fixed bags). We
 * replace it by
 *
 *   R = Gather(W, X)  [* Unsqueeze(w, 1)]   Y = SegmentReduce(R, S, E, mode)
 *
 * which computes the same bags without a loop, and keeps W read only through
 * a Gather on run-time indices: a sparse variable whose gradient is a row
 * set. Only the pattern above is taken; any other Loop is left alone. Empty
 * bags give zeros (PyTorch's EmbeddingBag; the ONNX loop would give NaN for
 * mean and -inf for max). */
#include "control_flow_internal.h"

#include <stdio.h>
#include <string.h>

/* The bounds S[i] / E[i] of the body: Unsqueeze(Gather(outer, i), [0]). */
static px_value *bag_bound(const px_graph *body, const px_value *u, const px_value *iter) {
    px_node *un = pxcf_producer(u, "Unsqueeze");
    if (!un) return NULL;
    int64_t axes[2];
    int na = un->n_inputs > 1 ? pxcf_const_ints(body, un->inputs[1], axes, 2) : -1;
    if (na < 0) {
        int cnt = 0;
        const int64_t *a = px_attr_ints(un, "axes", &cnt);
        if (cnt == 1) axes[0] = a[0];
        na = a ? cnt : -1;
    }
    if (na != 1 || axes[0] != 0) return NULL;
    px_node *gn = pxcf_producer(un->inputs[0], "Gather");
    if (!gn || gn->n_inputs != 2 || px_attr_int(gn, "axis", 0) != 0 || gn->inputs[1] != iter)
        return NULL;
    return gn->inputs[0]->kind == PX_VALUE_OUTER ? gn->inputs[0] : NULL;
}

typedef struct bag_match {
    px_value *table, *indices, *starts, *ends, *weights; /* body values (OUTER) */
    px_value *lo, *hi;                                   /* the body's Unsqueezed bounds */
    const char *mode;
} bag_match;

/* Slice(data, lo, hi, axes=[0][, steps=[1]]) with data an outer value. */
static px_value *bag_slice(const px_graph *body, const px_value *v, bag_match *m) {
    px_node *s = pxcf_producer(v, "Slice");
    if (!s || s->n_inputs < 3 || s->n_inputs > 5) return NULL;
    int64_t k[2];
    if (s->n_inputs > 3 && s->inputs[3] &&
        (pxcf_const_ints(body, s->inputs[3], k, 2) != 1 || k[0] != 0))
        return NULL;
    if (s->n_inputs > 4 && s->inputs[4] &&
        (pxcf_const_ints(body, s->inputs[4], k, 2) != 1 || k[0] != 1))
        return NULL;
    if (m->lo ? s->inputs[1] != m->lo || s->inputs[2] != m->hi : 0) return NULL;
    m->lo = s->inputs[1];
    m->hi = s->inputs[2];
    return s->inputs[0]->kind == PX_VALUE_OUTER ? s->inputs[0] : NULL;
}

/* r = Gather(W, Slice(X, ...)) */
static int bag_rows(const px_graph *body, const px_value *r, bag_match *m) {
    px_node *gn = pxcf_producer(r, "Gather");
    if (!gn || gn->n_inputs != 2 || px_attr_int(gn, "axis", 0) != 0) return 0;
    if (gn->inputs[0]->kind != PX_VALUE_OUTER) return 0;
    m->table = gn->inputs[0];
    m->indices = bag_slice(body, gn->inputs[1], m);
    return m->indices != NULL;
}

/* Unsqueeze(Slice(w, lo, hi), [1]) */
static int bag_weights(const px_graph *body, const px_value *v, bag_match *m) {
    px_node *un = pxcf_producer(v, "Unsqueeze");
    if (!un) return 0;
    int64_t axes[2];
    int na = un->n_inputs > 1 ? pxcf_const_ints(body, un->inputs[1], axes, 2) : -1;
    if (na < 0) {
        int cnt = 0;
        const int64_t *a = px_attr_ints(un, "axes", &cnt);
        if (cnt == 1) axes[0] = a[0];
        na = a ? cnt : -1;
    }
    if (na != 1 || axes[0] != 1) return 0;
    m->weights = bag_slice(body, un->inputs[0], m);
    return m->weights != NULL;
}

/* The reduction over axis 0 without keepdims, and what it reduces. */
static int bag_reduce(const px_graph *body, const px_value *y, bag_match *m) {
    static const char *const ops[3][2] = {
        {"ReduceSum", "sum"}, {"ReduceMean", "mean"}, {"ReduceMax", "max"}};
    px_node *rn = NULL;
    for (int k = 0; k < 3 && !rn; k++)
        if ((rn = pxcf_producer(y, ops[k][0]))) m->mode = ops[k][1];
    if (!rn || px_attr_int(rn, "keepdims", 1) != 0) return 0;
    int64_t axes[2];
    int cnt = 0;
    const int64_t *a = px_attr_ints(rn, "axes", &cnt);
    if (a && cnt == 1)
        axes[0] = a[0];
    else if (rn->n_inputs > 1 && rn->inputs[1])
        cnt = pxcf_const_ints(body, rn->inputs[1], axes, 2);
    else
        return 0;
    if (cnt != 1 || axes[0] != 0) return 0;
    px_value *x = rn->inputs[0];
    px_node *mul = pxcf_producer(x, "Mul");
    if (!mul) return bag_rows(body, x, m);
    for (int k = 0; k < 2; k++)
        if (bag_rows(body, mul->inputs[k], m) && bag_weights(body, mul->inputs[1 - k], m)) return 1;
    return 0;
}

/* The trip count is Gather(Shape(E), 0): one iteration per bag. */
static int trip_is_bag_count(const px_graph *g, const px_value *trip, const px_value *ends) {
    px_node *gn = pxcf_producer(trip, "Gather");
    if (!gn || gn->n_inputs != 2) return 0;
    int64_t k;
    if (pxcf_const_ints(g, gn->inputs[1], &k, 1) != 1 || k != 0) return 0;
    px_node *sh = pxcf_producer(gn->inputs[0], "Shape");
    return sh && sh->inputs[0] == ends && !px_node_attr(sh, "start") && !px_node_attr(sh, "end");
}

static px_value *new_value(px_graph *g, const char *loop, const char *what) {
    char name[512];
    snprintf(name, sizeof name, "%s/%s", loop, what);
    return px_graph_new_value(g, name, PX_UNDEFINED, NULL);
}

/* Inserts a node at *pos (where the Loop was), keeping the model's order. */
static px_node *add(px_graph *g, int *pos, const char *op, const char *domain, const char *name,
                    int n_in, px_value *const *in, px_value *out) {
    return px_graph_insert_node(g, (*pos)++, op, domain, name, n_in, in, 1, &out);
}

static const char *sub(char *buf, size_t cap, const char *loop, const char *what) {
    snprintf(buf, cap, "%s/%s", loop, what);
    return buf;
}

int pxcf_embedding_bag(px_graph *g, px_node *n, px_diag *d) {
    const px_attr *ba = px_node_attr(n, "body");
    px_graph *body = ba && ba->kind == PX_ATTR_GRAPH ? ba->g : NULL;
    if (!body || n->n_inputs != 2 || n->n_outputs != 1 || !n->inputs[0] || !n->outputs[0] ||
        body->n_inputs != 2 || body->n_outputs != 2)
        return 0;
    if (n->inputs[1] && !pxcf_always_true(g, n->inputs[1], NULL)) return 0;
    if (!pxcf_always_true(body, body->outputs[0], body->inputs[1])) return 0;
    bag_match m = {0};
    if (!bag_reduce(body, body->outputs[1], &m)) return 0;
    px_value *starts = bag_bound(body, m.lo, body->inputs[0]),
             *ends = bag_bound(body, m.hi, body->inputs[0]);
    if (!starts || !ends) return 0;
    px_value *table = pxcf_outer(body, m.table), *idx = pxcf_outer(body, m.indices),
             *s = pxcf_outer(body, starts), *e = pxcf_outer(body, ends),
             *w = m.weights ? pxcf_outer(body, m.weights) : NULL;
    if (!table || !idx || !s || !e || (m.weights && !w)) return 0;
    if (!trip_is_bag_count(g, n->inputs[0], e)) return 0;

    char loop[400], nm[512];
    snprintf(loop, sizeof loop, "%s", n->name[0] ? n->name : "EmbeddingBag");
    px_value *out = n->outputs[0];
    int pos = 0;
    while (pos < g->n_nodes && g->nodes[pos] != n) pos++;
    px_graph_remove_node(g, n);
    pos++; /* after the dead Loop; compacting drops it */
    px_value *rows = new_value(g, loop, "rows");
    px_value *gin[2] = {table, idx};
    px_node_set_attr_int(
        add(g, &pos, "Gather", "", sub(nm, sizeof nm, loop, "Gather"), 2, gin, rows), "axis", 0);
    if (w) {
        int64_t one = 1;
        px_shape s1 = px_shape_make(1, (int64_t[]){1});
        px_tensor *t = px_tensor_new(PX_I64, &s1, d);
        if (!t) return -1;
        memcpy(t->data, &one, sizeof one);
        px_value *axes = px_graph_add_constant(g, "/EmbeddingBag/axes_1", t);
        px_value *wcol = new_value(g, loop, "weights");
        int64_t opset = px_graph_opset(g, "");
        if (opset >= 13) {
            px_value *uin[2] = {w, axes};
            add(g, &pos, "Unsqueeze", "", sub(nm, sizeof nm, loop, "Unsqueeze"), 2, uin, wcol);
        } else {
            add(g, &pos, "Unsqueeze", "", sub(nm, sizeof nm, loop, "Unsqueeze"), 1, &w, wcol);
            px_node_set_attr_ints(wcol->producer, "axes", 1, &one);
        }
        px_value *weighted = new_value(g, loop, "weighted_rows");
        px_value *min[2] = {rows, wcol};
        add(g, &pos, "Mul", "", sub(nm, sizeof nm, loop, "Mul"), 2, min, weighted);
        rows = weighted;
    }
    px_value *rin[3] = {rows, s, e};
    /* The node that makes the Loop's output keeps the Loop's name. */
    px_node *r = add(g, &pos, "SegmentReduce", PX_DOMAIN_PARALLAX, loop, 3, rin, out);
    px_node_set_attr_string(r, "mode", m.mode);
    /* S and E come from the user's offsets: the kernel checks them as
     * PyTorch does (runtime/kernels/embedding_bag.c). */
    px_node_set_attr_int(r, "offsets", 1);
    return 1;
}
