/* Reverse-mode autodiff (autodiff.h). The walk:
 *   1. find the loss; the trainable variables, and which of them are
 *      sparse, are the variable plan's (var_plan.h);
 *   2. mark the values on the path: those that depend on a trainable
 *      variable (through float values) and that the loss depends on;
 *   3. seed d(loss)/d(loss) = 1 and visit the forward nodes in reverse
 *      topological order, calling each on-path node's gradient rule (the
 *      tables in grad_*.c), which adds contributions to its inputs;
 *   4. read each variable's gradient: dense values, or for sparse variables
 *      one ai.parallax::GatherGrad over all its Gather uses (a row set).
 * Backward nodes go after the forward nodes, named "grad/<node>/<op>".
 * Training-mode Dropout must already be ai.parallax::DropoutTrain: the
 * training pipeline runs the rewrite pass (dropout_rewrite.c) before this
 * one, and a Dropout left that draws is refused by its gradient rule. */
#include "grad_internal.h"
#include "shape_infer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ops.def's grad column, as px_grad_<grad> (grad_internal.h). */
static const px_grad_fn rules[PX_OP_COUNT] = {
#define OP(name, domain, flags, sig, shape, grad, lower, eval)                                     \
    [PX_OP_##name] = PX_OP_RULE_REF(px_grad_, grad),
#include "ops.def"
#undef OP
};

px_grad_fn px_grad_rule_for(px_op op) {
    return ((int)op > PX_OP_UNKNOWN && op < PX_OP_COUNT) ? rules[op] : NULL;
}

int px_ad_has_rule(px_op op) {
    return px_grad_rule_for(op) != NULL;
}

int px_ad_error(px_ad *a, const px_node *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = px_node_verror(a->d, n, "autodiff: gradient of node ", fmt, ap);
    va_end(ap);
    return rc;
}

/* ---- building backward nodes ---- */

px_node *px_ad_op(px_ad *a, const char *op, const char *domain, int n_in, px_value *const *in,
                  int n_out) {
    char name[512];
    const char *fwd = a->cur && a->cur->name[0] ? a->cur->name : "loss";
    snprintf(name, sizeof name, "grad/%s/%s", fwd, op);
    px_value *outs[8];
    px_shape unknown = px_shape_unknown();
    for (int i = 0; i < n_out && i < 8; i++)
        outs[i] = px_graph_new_value(a->g, name, PX_UNDEFINED, &unknown);
    return px_graph_add_node(a->g, op, domain ? domain : "", name, n_in, in, n_out, outs);
}

px_value *px_ad_done(px_ad *a, px_node *n) {
    if (!n) return NULL;
    if (px_infer_node(a->g, n, a->d)) return NULL;
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] && !px_shape_is_static(&n->outputs[i]->shape)) {
            char buf[256];
            px_error(a->d, "autodiff: backward node %s has no static shape",
                     px_node_label(n, buf, sizeof buf));
            return NULL;
        }
    return n->outputs[0];
}

px_value *px_ad_1(px_ad *a, const char *op, px_value *x) {
    if (!x) return NULL;
    return px_ad_done(a, px_ad_op(a, op, "", 1, &x, 1));
}

px_value *px_ad_2(px_ad *a, const char *op, px_value *x, px_value *y) {
    if (!x || !y) return NULL;
    px_value *in[2] = {x, y};
    return px_ad_done(a, px_ad_op(a, op, "", 2, in, 1));
}

px_value *px_ad_scalar(px_ad *a, px_dtype dt, double v) {
    px_shape s = px_shape_scalar();
    px_tensor *t = px_tensor_new(dt, &s, a->d);
    if (!t) return NULL;
    px_tensor_set_f64(t, 0, v);
    return px_graph_add_constant(a->g, "grad/const", t);
}

static uint64_t ints_hash(int n, const int64_t *v) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++) h = (h ^ (uint64_t)v[i]) * 1099511628211ull;
    return h;
}

/* The slot of the constant holding v[0..n), or the empty slot where it goes. */
static px_value **ints_slot(px_ad *a, int n, const int64_t *v) {
    size_t mask = a->ints_cap - 1, j = ints_hash(n, v) & mask;
    for (; a->ints[j]; j = (j + 1) & mask) {
        const px_tensor *t = a->ints[j]->data;
        if (t->shape.dims[0] == n && (n == 0 || memcmp(t->data, v, (size_t)n * sizeof *v) == 0))
            break;
    }
    return &a->ints[j];
}

static int ints_grow(px_ad *a) {
    size_t cap = a->ints_cap ? a->ints_cap * 2 : 64, old_cap = a->ints_cap;
    px_value **old = a->ints, **grown = calloc(cap, sizeof *grown);
    if (!grown) return -1;
    a->ints = grown;
    a->ints_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i]) {
            const px_tensor *t = old[i]->data;
            *ints_slot(a, (int)t->shape.dims[0], t->data) = old[i];
        }
    free(old);
    return 0;
}

/* Why shared: gradients of broadcasts reduce and reshape with the same few
 * lists of ints over and over (two per bias of a model of 100k biases),
 * and a constant is a value, a tensor and a name that every later pass
 * walks. Nothing rewrites a constant's contents in place. */
px_value *px_ad_ints(px_ad *a, int n, const int64_t *v) {
    if ((a->ints_count + 1) * 2 > a->ints_cap && ints_grow(a)) {
        px_error(a->d, "autodiff: out of memory");
        return NULL;
    }
    px_value **slot = ints_slot(a, n, v);
    if (*slot) return *slot;
    int64_t dim = n;
    px_shape s = px_shape_make(1, &dim);
    px_tensor *t = px_tensor_new(PX_I64, &s, a->d);
    if (!t) return NULL;
    for (int i = 0; i < n; i++) px_tensor_set_i64(t, i, v[i]);
    *slot = px_graph_add_constant(a->g, "grad/shape", t);
    a->ints_count++;
    return *slot;
}

px_value *px_ad_reshape(px_ad *a, px_value *x, const px_shape *s) {
    if (!x) return NULL;
    if (px_shape_equal(&x->shape, s)) return x;
    return px_ad_2(a, "Reshape", x, px_ad_ints(a, s->rank, s->dims));
}

px_value *px_ad_reduce_sum(px_ad *a, px_value *x, int n_axes, const int64_t *axes, int keepdims) {
    if (!x) return NULL;
    px_node *n;
    int64_t opset = px_graph_opset(a->g, "");
    if (opset == 0 || opset >= 13) {
        px_value *in[2] = {x, px_ad_ints(a, n_axes, axes)};
        if (!in[1]) return NULL;
        n = px_ad_op(a, "ReduceSum", "", 2, in, 1);
    } else {
        n = px_ad_op(a, "ReduceSum", "", 1, &x, 1);
        px_node_set_attr_ints(n, "axes", n_axes, axes);
    }
    px_node_set_attr_int(n, "keepdims", keepdims);
    return px_ad_done(a, n);
}

px_value *px_ad_transpose(px_ad *a, px_value *x, int rank, const int64_t *perm) {
    if (!x) return NULL;
    px_node *n = px_ad_op(a, "Transpose", "", 1, &x, 1);
    px_node_set_attr_ints(n, "perm", rank, perm);
    return px_ad_done(a, n);
}

/* ---- accumulation ---- */

int px_ad_wants(const px_ad *a, const px_node *n, int i) {
    const px_value *v = i < n->n_inputs ? n->inputs[i] : NULL;
    return v && v->id < a->n_fwd_values && a->on_path[v->id];
}

/* g reduced over the dims it broadcast to, reshaped to target's shape. */
static px_value *unbroadcast(px_ad *a, px_value *g, const px_value *target) {
    const px_shape *gs = &g->shape, *ts = &target->shape;
    if (px_shape_equal(gs, ts)) return g;
    int64_t axes[PX_MAX_RANK];
    int n_axes = 0, lead = gs->rank - ts->rank;
    if (lead < 0) {
        px_ad_error(a, a->cur, "gradient of rank %d for input '%s' of rank %d", gs->rank,
                    target->name, ts->rank);
        return NULL;
    }
    for (int i = 0; i < gs->rank; i++)
        if (i < lead || (ts->dims[i - lead] == 1 && gs->dims[i] != 1)) axes[n_axes++] = i;
    px_value *r = n_axes ? px_ad_reduce_sum(a, g, n_axes, axes, 1) : g;
    return px_ad_reshape(a, r, ts);
}

static int accum(px_ad *a, const px_node *n, int i, px_value *g, int as_is) {
    if (!px_ad_wants(a, n, i)) return 0;
    if (!g) return -1;
    px_value *x = n->inputs[i];
    if (!as_is) g = unbroadcast(a, g, x);
    if (!g) return -1;
    if (g->dtype != x->dtype)
        return px_ad_error(a, n, "gradient of input '%s' has dtype %s, expected %s", x->name,
                           px_dtype_name(g->dtype), px_dtype_name(x->dtype));
    px_value **slot = &a->grad[x->id];
    if (*slot) {
        g = px_ad_2(a, "Add", *slot, g);
        if (!g) return -1;
    }
    *slot = g;
    return 0;
}

int px_ad_accum(px_ad *a, const px_node *n, int i, px_value *g) {
    return accum(a, n, i, g, 0);
}

int px_ad_accum_as_is(px_ad *a, const px_node *n, int i, px_value *g) {
    return accum(a, n, i, g, 1);
}

/* ---- the pass ---- */

static int is_scalar_float(const px_value *v) {
    return px_dtype_is_float(v->dtype) && px_shape_is_static(&v->shape) &&
           px_shape_numel(&v->shape) == 1;
}

static int find_loss(px_graph *g, const px_train_spec *spec, px_value **out, px_diag *d) {
    if (spec && spec->loss) {
        px_value *v = px_graph_find_value(g, spec->loss);
        if (!v || !v->is_output)
            return px_error(d, "autodiff: loss '%s' is not a graph output", spec->loss);
        if (!is_scalar_float(v)) {
            char buf[256];
            return px_error(d, "autodiff: loss '%s' must be a float scalar, it is %s %s",
                            spec->loss, px_dtype_name(v->dtype),
                            px_shape_str(&v->shape, buf, sizeof buf));
        }
        *out = v;
        return 0;
    }
    px_value *found = NULL;
    for (int i = 0; i < g->n_outputs; i++) {
        if (!is_scalar_float(g->outputs[i])) continue;
        if (found)
            return px_error(d,
                            "autodiff: outputs '%s' and '%s' are both float scalars; name the "
                            "loss (--loss)",
                            found->name, g->outputs[i]->name);
        found = g->outputs[i];
    }
    if (found) {
        *out = found;
        return 0;
    }
    char list[1024] = "";
    size_t len = 0;
    for (int i = 0; i < g->n_outputs && len < sizeof list; i++) {
        char shape[256];
        const px_value *v = g->outputs[i];
        len +=
            (size_t)snprintf(list + len, sizeof list - len, "%s'%s' %s%s", i ? ", " : "", v->name,
                             px_dtype_name(v->dtype), px_shape_str(&v->shape, shape, sizeof shape));
    }
    px_error(d, "autodiff: the graph has no float scalar output to use as loss (its outputs: %s)",
             g->n_outputs ? list : "none");
    px_note(d, "a training program minimises a loss the model computes: export a module whose "
               "forward returns the loss, e.g. forward(self, x, y): return "
               "F.cross_entropy(self.net(x), y), or let parallax.export(model, (x, y), path, "
               "loss_fn=F.cross_entropy) wrap it; a model with several scalar outputs names its "
               "loss with --loss NAME");
    return -1;
}

/* on_path = depends on a trainable variable (through float values) and
 * reaches the loss. */
static void mark_path(px_ad *a, const char *trainable, const px_value *loss) {
    px_graph *g = a->g;
    int nv = a->n_fwd_values;
    char *fwd = calloc((size_t)nv + 1, 1), *bwd = calloc((size_t)nv + 1, 1);
    for (int i = 0; i < nv; i++) fwd[i] = trainable[i];
    for (int k = 0; k < g->n_nodes; k++) {
        const px_node *n = g->nodes[k];
        if (n->dead) continue;
        int any = 0;
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i] && fwd[n->inputs[i]->id]) any = 1;
        for (int o = 0; any && o < n->n_outputs; o++)
            if (n->outputs[o] && px_dtype_is_float(n->outputs[o]->dtype))
                fwd[n->outputs[o]->id] = 1;
    }
    bwd[loss->id] = 1;
    for (int k = g->n_nodes - 1; k >= 0; k--) {
        const px_node *n = g->nodes[k];
        if (n->dead) continue;
        int any = 0;
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] && bwd[n->outputs[o]->id]) any = 1;
        for (int i = 0; any && i < n->n_inputs; i++)
            if (n->inputs[i]) bwd[n->inputs[i]->id] = 1;
    }
    for (int i = 0; i < nv; i++) a->on_path[i] = fwd[i] && bwd[i];
    free(fwd);
    free(bwd);
}

/* Row set of a sparse variable from its Gather uses: indices flattened and
 * concatenated, gradient rows likewise, one GatherGrad over them all. */
static int build_row_set(px_ad *a, px_value *var, px_grad *out) {
    int ng = a->n_gathers[var->id];
    px_ad_gather *gs = a->gathers[var->id];
    int row_rank = var->shape.rank - 1;
    px_value *dy, *idx;
    a->cur = gs[0].node;
    if (ng == 1) {
        dy = gs[0].dy;
        idx = gs[0].indices;
    } else {
        px_value **dys = calloc((size_t)ng, sizeof *dys), **ids = calloc((size_t)ng, sizeof *ids);
        int rc = 0;
        for (int i = 0; i < ng && !rc; i++) {
            a->cur = gs[i].node;
            int64_t k = px_shape_numel(&gs[i].indices->shape);
            px_shape rs = px_shape_make(1, &k);
            ids[i] = px_ad_reshape(a, gs[i].indices, &rs);
            /* indices of different int dtypes are made int64 before Concat */
            if (ids[i] && ids[i]->dtype != PX_I64) {
                px_node *c = px_ad_op(a, "Cast", "", 1, &ids[i], 1);
                px_node_set_attr_int(c, "to", PX_I64);
                ids[i] = px_ad_done(a, c);
            }
            rs.rank = 1 + row_rank;
            for (int j = 0; j < row_rank; j++) rs.dims[1 + j] = var->shape.dims[1 + j];
            dys[i] = px_ad_reshape(a, gs[i].dy, &rs);
            if (!ids[i] || !dys[i]) rc = -1;
        }
        if (!rc) {
            px_node *c1 = px_ad_op(a, "Concat", "", ng, ids, 1);
            px_node_set_attr_int(c1, "axis", 0);
            idx = px_ad_done(a, c1);
            px_node *c2 = px_ad_op(a, "Concat", "", ng, dys, 1);
            px_node_set_attr_int(c2, "axis", 0);
            dy = px_ad_done(a, c2);
            if (!idx || !dy) rc = -1;
        }
        free(dys);
        free(ids);
        if (rc) return -1;
    }
    px_value *in[2] = {dy, idx};
    px_node *n = px_ad_op(a, "GatherGrad", PX_DOMAIN_PARALLAX, 2, in, 3);
    px_node_set_attr_int(n, "rows", var->shape.dims[0]);
    if (!px_ad_done(a, n)) return -1;
    out->rows_index = n->outputs[0];
    out->rows_value = n->outputs[1];
    out->rows_count = n->outputs[2];
    return 0;
}

/* Gather(var, runtime idx) on a sparse variable: remember the use. */
static int note_sparse_gather(px_ad *a, px_node *n, px_value *dy) {
    px_value *var = n->inputs[0];
    int k = a->n_gathers[var->id];
    px_ad_gather *p = realloc(a->gathers[var->id], (size_t)(k + 1) * sizeof *p);
    if (!p) return px_error(a->d, "autodiff: out of memory");
    p[k].dy = dy;
    p[k].indices = n->inputs[1];
    p[k].node = n;
    a->gathers[var->id] = p;
    a->n_gathers[var->id] = k + 1;
    return 0;
}

/* PyTorch's padding_idx: a look-up of the padding row of a table sends it
 * no gradient. dy (the Gather's output gradient, idx.shape + row shape) is
 * zeroed where idx is that row, before any rule sees it, so dense and
 * sparse tables, every --comm mode and every rank count agree. */
static px_value *mask_padding_rows(px_ad *a, px_node *n, px_value *dy, int64_t row) {
    px_value *idx = n->inputs[1];
    px_shape one = px_shape_scalar();
    px_tensor *t = px_tensor_new(idx->dtype, &one, a->d);
    if (!t) return NULL;
    px_tensor_set_i64(t, 0, row);
    px_value *hit = px_ad_2(a, "Equal", idx, px_graph_add_constant(a->g, "grad/padding_idx", t));
    if (!hit) return NULL;
    px_shape hs = idx->shape;
    for (int k = 1; k < n->inputs[0]->shape.rank && hs.rank < PX_MAX_RANK; k++)
        hs.dims[hs.rank++] = 1;
    px_value *args[3] = {px_ad_reshape(a, hit, &hs), px_ad_scalar(a, dy->dtype, 0.0), dy};
    if (!args[0] || !args[1]) return NULL;
    return px_ad_done(a, px_ad_op(a, "Where", "", 3, args, 1));
}

static int is_row_lookup(const px_node *n) {
    int64_t axis = px_attr_int(n, "axis", 0);
    return n->op == PX_OP_Gather && n->n_inputs >= 2 && n->inputs[0] && n->inputs[1] &&
           (axis == 0 || axis == -(int64_t)n->inputs[0]->shape.rank);
}

static int visit(px_ad *a, px_node *n) {
    px_value *dy[16] = {0};
    int any = 0;
    for (int o = 0; o < n->n_outputs && o < 16; o++)
        if (n->outputs[o] && n->outputs[o]->id < a->n_fwd_values) {
            dy[o] = a->grad[n->outputs[o]->id];
            if (dy[o]) any = 1;
        }
    if (!any) return 0;
    int wants = 0;
    for (int i = 0; i < n->n_inputs; i++) wants |= px_ad_wants(a, n, i);
    if (!wants) return 0;
    a->cur = n;
    if (dy[0] && is_row_lookup(n) && px_ad_wants(a, n, 0)) {
        int64_t row = px_model_meta_padding_row(a->meta, n->inputs[0]->name);
        if (row >= 0 && !(dy[0] = mask_padding_rows(a, n, dy[0], row))) return -1;
    }
    if (n->op == PX_OP_Gather && n->inputs[0] && a->sparse[n->inputs[0]->id])
        return note_sparse_gather(a, n, dy[0]);
    px_grad_fn fn = px_grad_rule_for(n->op);
    if (!fn)
        return px_ad_error(a, n, "op %s%s%s has no gradient rule", n->domain[0] ? n->domain : "",
                           n->domain[0] ? "::" : "", n->op_type);
    return fn(a, n, dy);
}

int px_pass_autodiff_plan(px_graph *g, const px_train_spec *spec, const px_train_plan *plan,
                          px_grads *out, px_diag *d) {
    int rc = -1;
    px_ad a = {0};
    char *trainable = NULL;
    memset(out, 0, sizeof *out);
    a.g = g;
    a.d = d;
    a.meta = spec ? spec->meta : NULL;
    px_value *loss = NULL;
    if (find_loss(g, spec, &loss, d)) return -1;
    a.n_fwd_values = g->n_values;
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i]->id != i) return px_error(d, "autodiff: value ids are not compact");
    size_t nv = (size_t)g->n_values + 1;
    a.grad = calloc(nv, sizeof *a.grad);
    a.on_path = calloc(nv, 1);
    a.sparse = calloc(nv, 1);
    trainable = calloc(nv, 1);
    a.gathers = calloc(nv, sizeof *a.gathers);
    a.n_gathers = calloc(nv, sizeof *a.n_gathers);
    out->items = calloc((size_t)plan->n_vars + 1, sizeof *out->items);
    if (!a.grad || !a.on_path || !a.sparse || !trainable || !a.gathers || !a.n_gathers ||
        !out->items) {
        px_error(d, "autodiff: out of memory");
        goto cleanup;
    }
    for (int i = 0; i < plan->n_vars; i++) {
        const px_train_var *tv = &plan->vars[i];
        trainable[tv->value->id] = 1;
        if (tv->cls == PX_VAR_SPARSE) a.sparse[tv->value->id] = 1;
    }
    mark_path(&a, trainable, loss);

    a.grad[loss->id] = px_ad_scalar(&a, loss->dtype, 1.0);
    if (!a.grad[loss->id]) goto cleanup;
    if (loss->shape.rank != 0) {
        a.grad[loss->id] = px_ad_reshape(&a, a.grad[loss->id], &loss->shape);
        if (!a.grad[loss->id]) goto cleanup;
    }
    int n_fwd_nodes = g->n_nodes;
    for (int k = n_fwd_nodes - 1; k >= 0; k--) {
        px_node *n = g->nodes[k];
        if (n->dead) continue;
        if (visit(&a, n)) goto cleanup;
    }
    out->loss = loss;
    for (int i = 0; i < plan->n_vars; i++) {
        px_value *v = plan->vars[i].value;
        if (!a.on_path[v->id]) continue;
        px_grad *gr = &out->items[out->n];
        gr->var = v;
        if (a.sparse[v->id]) {
            if (a.n_gathers[v->id] == 0) continue;
            if (build_row_set(&a, v, gr)) goto cleanup;
        } else {
            if (!a.grad[v->id]) continue; /* e.g. only reached through a zero-gradient op */
            gr->grad = a.grad[v->id];
        }
        out->n++;
    }
    rc = 0;
cleanup:
    if (rc) px_grads_free(out);
    for (size_t i = 0; a.gathers && i < nv; i++) free(a.gathers[i]);
    free(a.gathers);
    free(a.n_gathers);
    free(a.ints);
    free(a.grad);
    free(a.on_path);
    free(a.sparse);
    free(trainable);
    return rc;
}

int px_pass_autodiff(px_graph *g, const px_train_spec *spec, px_grads *out, px_diag *d) {
    px_train_plan plan;
    int rc = px_plan_variables(g, spec, &plan, d);
    if (rc == 0)
        rc = px_pass_autodiff_plan(g, spec, &plan, out, d);
    else
        memset(out, 0, sizeof *out);
    px_train_plan_free(&plan);
    return rc;
}

void px_grads_free(px_grads *grads) {
    if (!grads) return;
    free(grads->items);
    grads->items = NULL;
    grads->n = 0;
}
