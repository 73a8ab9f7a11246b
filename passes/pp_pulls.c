/* --pp: one pull per step of a parameter-server table's rows.
 *
 * The comm pass puts a PSPull before every Gather of a table, so under
 * --pp a table is pulled once per micro-batch (and per look-up), and a row
 * that several micro-batches read crosses the network once for each. No
 * update falls between the pulls of a step (the table's push follows the
 * stage's backward passes), so every pull reads the rows of the step's
 * start: one pull of the union of the step's indices, where the first
 * micro-batch's look-up runs, fetches the same values once.
 *
 * Where the indices of every look-up are made from the step's inputs alone
 * (slices of an input, reshapes: no variable, no value another stage sent)
 * on the table's stage, those nodes move to the first micro-batch's
 * forward, each pull's indices are flattened and concatenated, one PSPull
 * fetches their rows into one cache, and each Gather reads that cache
 * through its own slice of the remap (the cache row of each of its
 * indices), reshaped as its indices were. The Gathers read the same rows:
 * the numbers do not change. A table whose indices are made otherwise
 * keeps its pull per look-up. */
#include "pipeline_parallel.h"

#include "shape_infer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* At most this many nodes make one look-up's indices (a slice, a cast, a
 * reshape or two); a longer chain is left where it is. */
enum { READY_MAX = 64 };

static int attr(const px_node *n, const char *name, int def) {
    return px_node_attr(n, name) ? (int)px_attr_int(n, name, def) : def;
}

/* A node with a subgraph may read values its inputs do not list. */
static int has_subgraph(const px_node *n) {
    for (int a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].kind == PX_ATTR_GRAPH) return 1;
    return 0;
}

/* Collects into nodes[*n] the nodes that make v from the step's inputs,
 * constants and frozen initializers on stage s, in a micro-batch's forward.
 * 0: v is made so; -1: it reads a trained variable, another stage's value
 * or something outside a forward pass (or the chain is too long). */
static int from_inputs(const px_train_plan *plan, const px_value *v, int s, px_node **nodes,
                       int *n) {
    const px_node *p = v->producer;
    if (!p) return px_plan_var_of(plan, v) >= 0 ? -1 : 0;
    for (int k = 0; k < *n; k++)
        if (nodes[k] == p) return 0;
    if (p->dead || has_subgraph(p) || p->op == PX_OP_PPTransfer || p->op == PX_OP_PPBroadcast ||
        p->op == PX_OP_PSPull || attr(p, "pp_stage", -1) != s ||
        attr(p, "pp_phase", -1) != PX_PP_FWD || *n >= READY_MAX)
        return -1;
    nodes[(*n)++] = (px_node *)p;
    for (int i = 0; i < p->n_inputs; i++)
        if (p->inputs[i] && from_inputs(plan, p->inputs[i], s, nodes, n)) return -1;
    return 0;
}

static px_value *shape_const(px_graph *g, const px_shape *s, px_diag *d) {
    int64_t rank = s->rank;
    px_shape one = px_shape_make(1, &rank);
    px_tensor *t = px_tensor_new(PX_I64, &one, d);
    if (!t) return NULL;
    for (int k = 0; k < s->rank; k++) px_tensor_set_i64(t, k, s->dims[k]);
    return px_graph_add_constant(g, "pp/pull_shape", t);
}

static px_value *i64_const(px_graph *g, int64_t v, px_diag *d) {
    int64_t one = 1;
    px_shape s = px_shape_make(1, &one);
    px_tensor *t = px_tensor_new(PX_I64, &s, d);
    if (!t) return NULL;
    px_tensor_set_i64(t, 0, v);
    return px_graph_add_constant(g, "pp/pull_at", t);
}

/* A node of stage s (-1: every rank) at the place of `like` in the step. */
static px_node *add(px_graph *g, const char *op, const char *domain, const char *name, int n_in,
                    px_value *const *in, int n_out, px_value *const *out, int s,
                    const px_node *like, px_diag *d) {
    for (int i = 0; i < n_in; i++)
        if (!in[i]) return NULL;
    px_node *n = px_graph_add_node(g, op, domain, name, n_in, in, n_out, out);
    if (n && n->op == PX_OP_Concat) px_node_set_attr_int(n, "axis", 0); /* of flat indices */
    if (!n || px_infer_node(g, n, d)) return NULL;
    if (s >= 0) px_node_set_attr_int(n, "pp_stage", s);
    px_node_set_attr_int(n, "pp_at", attr(like, "pp_at", 0));
    px_node_set_attr_int(n, "pp_mb", attr(like, "pp_mb", -1));
    px_node_set_attr_int(n, "pp_phase", attr(like, "pp_phase", PX_PP_FWD));
    return n;
}

static px_value *flat(px_graph *g, px_value *x, const char *name, int s, const px_node *at,
                      px_diag *d) {
    int64_t numel = px_shape_numel(&x->shape);
    px_shape fs = px_shape_make(1, &numel);
    px_value *y = px_graph_new_value(g, name, x->dtype, &fs);
    px_value *ins[2] = {x, shape_const(g, &fs, d)};
    return add(g, "Reshape", "", name, 2, ins, 1, &y, s, at, d) ? y : NULL;
}

/* Rows [from, from + numel(like)) of the flat remap, shaped as like. */
static px_value *remap_of(px_graph *g, px_value *remap, int64_t from, const px_value *like,
                          const char *name, int s, const px_node *at, px_diag *d) {
    int64_t n = px_shape_numel(&like->shape);
    px_shape part = px_shape_make(1, &n);
    px_value *sl = px_graph_new_value(g, name, remap->dtype, &part);
    px_value *sins[4] = {remap, i64_const(g, from, d), i64_const(g, from + n, d),
                         i64_const(g, 0, d)};
    if (!add(g, "Slice", "", name, 4, sins, 1, &sl, s, at, d)) return NULL;
    px_value *y = px_graph_new_value(g, name, remap->dtype, &like->shape);
    px_value *rins[2] = {sl, shape_const(g, &like->shape, d)};
    return add(g, "Reshape", "", name, 2, rins, 1, &y, s, at, d) ? y : NULL;
}

/* The pulls of one table (k of them, the first earliest in the step): one
 * pull of their indices' union in their place. 1: left as they are. */
static int union_pulls(px_graph *g, const px_train_plan *plan, px_node **pulls, int k, int s,
                       px_diag *d) {
    px_node *ready[READY_MAX];
    int n_ready = 0;
    px_node *first = pulls[0];
    for (int j = 0; j < k; j++) {
        const px_value *idx = pulls[j]->inputs[1];
        if (!px_shape_is_static(&idx->shape) || idx->dtype != first->inputs[1]->dtype ||
            from_inputs(plan, idx, s, ready, &n_ready))
            return 1;
    }
    /* the indices are made with the first micro-batch's forward */
    for (int i = 0; i < n_ready; i++) {
        px_node_set_attr_int(ready[i], "pp_at", attr(first, "pp_at", 0));
        px_node_set_attr_int(ready[i], "pp_mb", attr(first, "pp_mb", -1));
    }
    px_value *w = first->inputs[0];
    char name[400];
    px_value **flats = calloc((size_t)k + 1, sizeof *flats);
    if (!flats) return px_error(d, "--pp: out of memory");
    flats[0] = w; /* PSPull's inputs: the table, then the indices' concatenation */
    int64_t total = 0;
    for (int j = 0; j < k; j++) {
        px_value *idx = pulls[j]->inputs[1];
        snprintf(name, sizeof name, "pp/step_rows/%s/idx%d", w->name, j);
        total += px_shape_numel(&idx->shape);
        if (!(flats[j + 1] = flat(g, idx, name, s, first, d))) {
            free(flats);
            return px_error(d, "--pp: cannot pull the step's rows of '%s' at once", w->name);
        }
    }
    snprintf(name, sizeof name, "pp/step_rows/%s/idx", w->name);
    px_shape all_s = px_shape_make(1, &total);
    px_value *all = px_graph_new_value(g, name, first->inputs[1]->dtype, &all_s);
    px_node *cat = add(g, "Concat", "", name, k, flats + 1, 1, &all, s, first, d);
    free(flats);
    if (!cat) return px_error(d, "--pp: cannot pull the step's rows of '%s' at once", w->name);
    px_shape cs = w->shape;
    cs.dims[0] = total;
    snprintf(name, sizeof name, "%s.step_rows", w->name);
    px_value *cache = px_graph_new_value(g, name, w->dtype, &cs);
    snprintf(name, sizeof name, "%s.step_remap", w->name);
    px_value *remap = px_graph_new_value(g, name, all->dtype, &all_s);
    snprintf(name, sizeof name, "ps_pull/step/%s", w->name);
    px_value *ins[2] = {w, all}, *outs[2] = {cache, remap};
    px_node *pull = add(g, "PSPull", PX_DOMAIN_PARALLAX, name, 2, ins, 2, outs, -1, first, d);
    if (!pull) return px_error(d, "--pp: cannot pull the step's rows of '%s' at once", w->name);
    px_node_set_attr_int(pull, "var", px_attr_int(first, "var", -1));
    int64_t from = 0;
    for (int j = 0; j < k; j++) {
        px_node *p = pulls[j];
        snprintf(name, sizeof name, "pp/step_rows/%s/remap%d", w->name, j);
        px_value *r = remap_of(g, remap, from, p->inputs[1], name, s, p, d);
        if (!r) return px_error(d, "--pp: cannot pull the step's rows of '%s' at once", w->name);
        from += px_shape_numel(&p->inputs[1]->shape);
        px_value_replace_uses(g, p->outputs[0], cache);
        px_value_replace_uses(g, p->outputs[1], r);
        px_graph_remove_node(g, p);
    }
    return 0;
}

static int by_place(const void *a, const void *b) {
    const px_node *x = *(px_node *const *)a, *y = *(px_node *const *)b;
    int mx = attr(x, "pp_mb", -1), my = attr(y, "pp_mb", -1);
    return mx != my ? mx - my : x->id - y->id;
}

int px_pp_union_pulls(px_graph *g, const px_train_plan *plan, px_diag *d) {
    px_node **pulls = calloc((size_t)g->n_nodes + 1, sizeof *pulls);
    if (!pulls) return px_error(d, "--pp: out of memory");
    int changed = 0, rc = 0;
    for (int v = 0; v < plan->n_vars && !rc; v++) {
        const px_train_var *tv = &plan->vars[v];
        if (tv->sync != PX_SYNC_PS) continue;
        int k = 0;
        for (int i = 0; i < g->n_nodes; i++) {
            px_node *n = g->nodes[i];
            if (!n->dead && n->op == PX_OP_PSPull && n->n_outputs == 2 &&
                n->inputs[0] == tv->value && attr(n, "pp_phase", -1) == PX_PP_FWD)
                pulls[k++] = n;
        }
        if (k < 2) continue;
        qsort(pulls, (size_t)k, sizeof *pulls, by_place);
        rc = union_pulls(g, plan, pulls, k, tv->pp_stage, d);
        if (rc == 1)
            rc = 0;
        else if (rc == 0)
            changed = 1;
    }
    free(pulls);
    if (rc) return -1;
    if (changed) {
        px_graph_compact(g);
        return px_graph_toposort(g, d);
    }
    return 0;
}
