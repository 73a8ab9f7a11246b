/* Attention heads split over a tensor-parallel group (--tp K), Megatron's
 * way: the Q/K/V projection split by columns (by heads), the output
 * projection by rows, one group sum forward (after the output projection)
 * and one backward (the gradient of the block's input).
 *
 * A block starts at a MatMul/Gemm `first` with a splittable weight whose F
 * output features feed, through the nodes below, a second MatMul/Gemm
 * whose splittable weight takes them as its input features:
 *
 *   X ─TPCopy─▶ first ─(bias)─▶ Slice/Split (Q, K, V) ─▶ Reshape ─▶ Transpose
 *     ─▶ MatMul (scores) ─▶ Div/Mul/Add (scale, mask) ─▶ Softmax ─▶ MatMul
 *     ─▶ Transpose ─▶ Reshape ─▶ second ─TPAllReduce─▶ (+ bias) ─▶ ...
 *
 * as torch.nn.MultiheadAttention exports it (a packed [D, 3D] in_proj).
 * The pass follows which entries of each value rank t owns: along one axis
 * of full size n, index i belongs to rank (i mod period) / block, block =
 * period / K (a `tp_part`). first's output starts split on its feature axis
 * with period F / sections, the sections being the Q, K and V thirds that
 * the Slices cut (the gcd of their bounds); a Reshape carries the split to
 * the axis whose inner size matches (the heads of [L, B * heads, head_dim]
 * or [B, heads, L, head_dim]); K not dividing the heads leaves no such
 * axis, and a block that splits with K = 1 but not with K is an error. Every node between must act
 * on each head alone: elementwise ops with constants that broadcast along the split axis (or an [n]
 * row, sliced the same way; or a boolean mask computed outside), Transpose, Softmax on another
 * axis, batched MatMul over the split axis, Slice/Split cutting whole periods. Their Slice bounds,
 * Split sizes and Reshape shapes become those of rank t's part; the shapes are inferred again. */
#include "tp_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BLOCK 96 /* nodes between first and second */

/* Along `axis` of a value of full size n there: rank t owns the indices i
 * with (i mod period) / block == t. */
typedef struct tp_part {
    int axis;
    int64_t block, period;
} tp_part;

/* A change to make once the whole block is known to split. */
typedef enum edit_kind {
    EDIT_CONST,   /* input `input` of node: replaced by `ints` (a Slice's bounds, a Reshape's shape)
                   */
    EDIT_OPERAND, /* input `input` of node: an [n] operand, sliced like `part` */
} edit_kind;

typedef struct edit {
    edit_kind kind;
    px_node *node;
    int input;
    int n;
    int64_t ints[PX_MAX_RANK];
    tp_part part;
    int64_t full; /* EDIT_OPERAND: the size of the split axis */
} edit;

typedef struct block {
    int tp;
    px_node *first, *second;
    int first_axis, second_axis;
    int n_vals;
    px_value *vals[MAX_BLOCK * 2];
    tp_part parts[MAX_BLOCK * 2];
    int n_edits;
    edit edits[MAX_BLOCK];
    px_node *reshaped[MAX_BLOCK]; /* nodes whose outputs are narrower */
    int n_reshaped;
    const char *why;
    const px_node *why_node;
    int64_t heads; /* at the first Reshape that splits the heads off: their count */
} block;

static int fail(block *b, const px_node *n, const char *why) {
    if (!b->why) b->why = why, b->why_node = n;
    return 1;
}

static int find_val(const block *b, const px_value *v) {
    for (int i = 0; i < b->n_vals; i++)
        if (b->vals[i] == v) return i;
    return -1;
}

static int add_val(block *b, px_value *v, tp_part p) {
    if (b->n_vals == MAX_BLOCK * 2) return fail(b, v->producer, "the block is too large");
    b->vals[b->n_vals] = v;
    b->parts[b->n_vals++] = p;
    return 0;
}

static edit *add_edit(block *b, px_node *n, int input, edit_kind kind) {
    if (b->n_edits == MAX_BLOCK) {
        fail(b, n, "the block is too large");
        return NULL;
    }
    edit *e = &b->edits[b->n_edits++];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->node = n;
    e->input = input;
    return e;
}

/* The int64 values of a constant, at most max; -1 when v is not one. */
static int const_ints(const px_value *v, int64_t *out, int max) {
    if (!v || v->producer || !v->data || !px_value_is_const(v)) return -1;
    int64_t n = px_shape_numel(&v->shape);
    if (n < 0 || n > max) return -1;
    for (int64_t i = 0; i < n; i++) {
        if (v->dtype == PX_I64)
            out[i] = ((const int64_t *)v->data->data)[i];
        else if (v->dtype == PX_I32)
            out[i] = ((const int32_t *)v->data->data)[i];
        else
            return -1;
    }
    return (int)n;
}

static int norm_axis(int64_t axis, int rank) {
    return (int)(axis < 0 ? axis + rank : axis);
}

/* An operand of an elementwise node that is not in the block: a constant
 * or initializer that broadcasts along the split axis (dim 1 or absent) is
 * used as is; one whose dim there is the full size is sliced like the
 * block's values. */
static int check_operand(block *b, px_node *u, int j, int rank, tp_part p, int64_t full) {
    const px_value *o = u->inputs[j];
    if (!o) return 0;
    int at = p.axis - (rank - o->shape.rank); /* the operand's axis under broadcasting */
    /* Computed outside the block, the same on every rank of the group: fine
     * when it has no gradient (a mask's condition), as each rank would get
     * only its heads' part of it. */
    if (o->producer || (!px_value_is_const(o) && o->kind != PX_VALUE_INITIALIZER)) {
        if (o->dtype != PX_BOOL || (at >= 0 && o->shape.dims[at] != 1))
            return fail(b, u, "an operand of an elementwise node is computed outside the block");
        return 0;
    }
    if (at < 0 || o->shape.dims[at] == 1) return 0;
    if (o->shape.dims[at] != full)
        return fail(b, u, "an operand does not broadcast along the split axis");
    for (int i = 0; i < o->shape.rank; i++)
        if (i != at && o->shape.dims[i] != 1)
            return fail(b, u, "an operand along the split axis is not a row");
    edit *e = add_edit(b, u, j, EDIT_OPERAND);
    if (!e) return 1;
    e->part = p;
    e->part.axis = at;
    e->full = full;
    return 0;
}

/* The Slice u of a value split as p: bounds on the split axis cut whole
 * periods (rank t's part of them is then [start / K, end / K)). */
static int through_slice(block *b, px_node *u, tp_part p, const px_shape *in) {
    int64_t starts[PX_MAX_RANK], ends[PX_MAX_RANK], axes[PX_MAX_RANK], steps[PX_MAX_RANK];
    if (u->n_inputs < 3) return fail(b, u, "a Slice without bound inputs (opset < 10)");
    int n = const_ints(u->inputs[1], starts, PX_MAX_RANK);
    if (n < 0 || const_ints(u->inputs[2], ends, PX_MAX_RANK) != n)
        return fail(b, u, "a Slice with bounds that are not constants");
    for (int i = 0; i < n; i++) axes[i] = i;
    if (u->n_inputs > 3 && u->inputs[3] && const_ints(u->inputs[3], axes, PX_MAX_RANK) != n)
        return fail(b, u, "a Slice with axes that are not constants");
    for (int i = 0; i < n; i++) steps[i] = 1;
    if (u->n_inputs > 4 && u->inputs[4] && const_ints(u->inputs[4], steps, PX_MAX_RANK) != n)
        return fail(b, u, "a Slice with steps that are not constants");
    int64_t full = in->dims[p.axis];
    for (int i = 0; i < n; i++) {
        if (norm_axis(axes[i], in->rank) != p.axis) continue;
        int64_t s = starts[i] < 0 ? starts[i] + full : starts[i];
        int64_t e = ends[i] < 0 ? ends[i] + full : ends[i];
        if (e > full) e = full;
        if (steps[i] != 1 || s < 0 || s % p.period || e % p.period || e <= s)
            return fail(b, u, "a Slice that cuts the split axis inside a head");
        edit *es = add_edit(b, u, 1, EDIT_CONST), *ee = es ? add_edit(b, u, 2, EDIT_CONST) : NULL;
        if (!ee) return 1;
        es->n = ee->n = n;
        memcpy(es->ints, starts, sizeof starts);
        memcpy(ee->ints, ends, sizeof ends);
        es->ints[i] = s / b->tp;
        ee->ints[i] = e / b->tp;
    }
    return 0;
}

/* Split u of a value split as p: every output split like it; sizes on the
 * split axis must be whole periods (rank t's are the sizes / K). */
static int through_split(block *b, px_node *u, tp_part p, const px_shape *in) {
    int64_t sizes[PX_MAX_RANK];
    int axis = norm_axis(px_attr_int(u, "axis", 0), in->rank);
    if (px_node_attr(u, "split")) return fail(b, u, "a Split with sizes in an attribute");
    int n = u->n_inputs > 1 && u->inputs[1] ? const_ints(u->inputs[1], sizes, PX_MAX_RANK) : 0;
    if (n < 0) return fail(b, u, "a Split with sizes that are not constants");
    for (int i = 0; i < n && axis == p.axis; i++)
        if (sizes[i] % p.period) return fail(b, u, "a Split that cuts a head");
    if (axis == p.axis && !n && (in->dims[axis] / u->n_outputs) % p.period)
        return fail(b, u, "a Split that cuts a head");
    if (axis == p.axis && n) {
        edit *e = add_edit(b, u, 1, EDIT_CONST);
        if (!e) return 1;
        e->n = n;
        for (int i = 0; i < n; i++) e->ints[i] = sizes[i] / b->tp;
    }
    for (int o = 0; o < u->n_outputs; o++)
        if (u->outputs[o] && add_val(b, u->outputs[o], p)) return 1;
    return 0;
}

/* Reshape u of a value split as p (full input shape in, output out): the
 * output axis c whose inner size J divides the block's run block * I (I:
 * the input's inner size at p.axis) and whose size holds whole periods
 * takes the split, with block * I / J and period * I / J. */
static int through_reshape(block *b, px_node *u, tp_part p, const px_shape *in, const px_shape *out,
                           tp_part *q) {
    if (const_ints(u->inputs[1], (int64_t[PX_MAX_RANK]){0}, PX_MAX_RANK) != out->rank)
        return fail(b, u, "a Reshape to a shape that is not a constant");
    int64_t inner = 1;
    for (int i = p.axis + 1; i < in->rank; i++) inner *= in->dims[i];
    int64_t run = p.block * inner, span = p.period * inner, j = 1;
    for (int c = out->rank - 1; c >= 0; j *= out->dims[c--]) {
        if (run % j || span % j || out->dims[c] % (span / j)) continue;
        if (run / j > out->dims[c]) continue;
        *q = (tp_part){c, run / j, span / j};
        if (!b->heads) b->heads = span / j;
        edit *e = add_edit(b, u, 1, EDIT_CONST);
        if (!e) return 1;
        e->n = out->rank;
        memcpy(e->ints, out->dims, sizeof(int64_t) * (size_t)out->rank);
        e->ints[c] /= b->tp;
        return 0;
    }
    return fail(b, u, "a Reshape splits the heads");
}

/* The part of u's outputs, from its inputs' (some in the block): 0, or 1
 * with b->why (the block does not split). */
static int through(block *b, px_node *u, tp_part *q) {
    const px_shape *out = &u->outputs[0]->shape;
    int first_in = -1;
    for (int i = 0; i < u->n_inputs && first_in < 0; i++)
        if (u->inputs[i] && find_val(b, u->inputs[i]) >= 0) first_in = i;
    const px_value *x = u->inputs[first_in];
    tp_part p = b->parts[find_val(b, x)];
    const px_op_info *info = &px_op_table[u->op];
    if ((info->flags & PX_F_ELEMWISE) && !(info->flags & PX_F_RANDOM) && u->n_outputs == 1) {
        *q = p;
        q->axis = p.axis + (out->rank - x->shape.rank);
        for (int j = 0; j < u->n_inputs; j++) {
            const px_value *o = u->inputs[j];
            int k = o ? find_val(b, o) : -1;
            if (k >= 0) {
                tp_part r = b->parts[k];
                if (r.axis + (out->rank - o->shape.rank) != q->axis || r.block != p.block ||
                    r.period != p.period)
                    return fail(b, u, "its inputs are split differently");
            } else if (check_operand(b, u, j, out->rank, *q, out->dims[q->axis])) {
                return 1;
            }
        }
        return 0;
    }
    for (int j = 0; j < u->n_inputs; j++)
        if (j != first_in && u->inputs[j] && u->op != PX_OP_MatMul &&
            find_val(b, u->inputs[j]) >= 0)
            return fail(b, u, "a node takes two split inputs");
    switch (u->op) {
    case PX_OP_Transpose: {
        int n = 0;
        const int64_t *perm = px_attr_ints(u, "perm", &n);
        *q = p;
        if (!perm) {
            q->axis = out->rank - 1 - p.axis;
            return 0;
        }
        for (int i = 0; i < n; i++)
            if (perm[i] == p.axis) q->axis = i;
        return 0;
    }
    case PX_OP_Softmax:
    case PX_OP_LogSoftmax:
        *q = p;
        if (norm_axis(px_attr_int(u, "axis", -1), out->rank) == p.axis)
            return fail(b, u, "a Softmax over the split axis");
        return 0;
    case PX_OP_Slice: *q = p; return through_slice(b, u, p, &x->shape);
    case PX_OP_Reshape:
        if (first_in != 0) return fail(b, u, "a Reshape whose shape is computed");
        return through_reshape(b, u, p, &x->shape, out, q);
    case PX_OP_MatMul: {
        const px_value *a = u->inputs[0], *w = u->inputs[1];
        int ka = find_val(b, a), kw = find_val(b, w);
        if (ka < 0 || kw < 0 || a->shape.rank != w->shape.rank || a->shape.rank < 3)
            return fail(b, u, "a MatMul of a split value with another that is not");
        tp_part pa = b->parts[ka], pw = b->parts[kw];
        if (pa.axis != pw.axis || pa.block != pw.block || pa.period != pw.period ||
            pa.axis >= a->shape.rank - 2)
            return fail(b, u, "a MatMul whose operands are not split on the same batch axis");
        *q = pa;
        return 0;
    }
    default: return fail(b, u, "a node between the projections does not act on each head alone");
    }
}

/* 1 if u is the block's output projection: a MatMul/Gemm taking a value
 * split in contiguous slabs on its last axis, with a splittable weight
 * whose input features match. */
static int is_second(block *b, const px_train_plan *plan, px_node *u, int at, tp_part p,
                     const px_value *x) {
    const char *why = NULL;
    if (!(u->op == PX_OP_MatMul || u->op == PX_OP_Gemm) || at != 0) return 0;
    if (p.axis != x->shape.rank - 1 || p.period != x->shape.dims[p.axis]) return 0;
    if (px_tp_splittable_weight(plan, u->inputs[1], &why) < 0) return 0;
    int axis = px_tp_weight_axis(u, 0, &why);
    if (axis < 0 || u->inputs[1]->shape.dims[axis] != p.period) return 0;
    if (u->op == PX_OP_Gemm && u->n_inputs > 2 && u->inputs[2] &&
        px_attr_float(u, "beta", 1.0f) != 1.0f)
        return 0;
    b->second_axis = axis;
    return 1;
}

/* The gcd of F and the bounds of the Slices on the feature axis reachable
 * from first's output through elementwise nodes: the period of the split
 * (F / sections). */
static int64_t gcd(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a < 0 ? -a : a;
}

static int64_t feature_period(const px_value *y, int64_t f, int depth) {
    int64_t period = f;
    for (int k = 0; k < y->n_uses && depth < 4; k++) {
        const px_node *u = y->uses[k].node;
        const px_op_info *info = &px_op_table[u->op];
        if (u->op == PX_OP_Split && y->uses[k].index == 0 && u->n_inputs > 1) {
            int64_t sizes[PX_MAX_RANK];
            int n = const_ints(u->inputs[1], sizes, PX_MAX_RANK);
            for (int i = 0; i < n; i++) period = gcd(period, sizes[i]);
        } else if (u->op == PX_OP_Slice && y->uses[k].index == 0 && u->n_inputs >= 3) {
            int64_t s[PX_MAX_RANK], e[PX_MAX_RANK];
            int n = const_ints(u->inputs[1], s, PX_MAX_RANK);
            if (n == 1 && const_ints(u->inputs[2], e, PX_MAX_RANK) == 1)
                period = gcd(gcd(period, s[0] < 0 ? s[0] + f : s[0]), e[0] > f ? f : e[0]);
        } else if ((info->flags & PX_F_ELEMWISE) && u->n_outputs == 1) {
            period = gcd(period, feature_period(u->outputs[0], f, depth + 1));
        }
    }
    return period;
}

/* Walks the graph from first: every node fed by the block's values joins
 * it, until the output projection. 0: a block; 1: none (b->why). */
static int find_block(block *b, px_graph *g, const px_train_plan *plan) {
    px_node *first = b->first;
    const char *why = NULL;
    b->first_axis = px_tp_weight_axis(first, 1, &why);
    if (b->first_axis < 0) return fail(b, first, why);
    px_value *y = first->outputs[0];
    int64_t f = first->inputs[1]->shape.dims[b->first_axis];
    int64_t period = feature_period(y, f, 0);
    if (period == f) return fail(b, first, "its output is not cut into heads by Slices");
    if (period % b->tp) return fail(b, first, "--tp does not divide the width of a head group");
    if (add_val(b, y, (tp_part){y->shape.rank - 1, period / b->tp, period})) return 1;
    if (first->op == PX_OP_Gemm && first->n_inputs > 2 &&
        check_operand(b, first, 2, y->shape.rank, b->parts[0], f))
        return 1;
    int start = 0;
    while (start < g->n_nodes && g->nodes[start] != first) start++;
    for (int i = start + 1; i < g->n_nodes && !b->second; i++) {
        px_node *u = g->nodes[i];
        if (u->dead) continue;
        int in_block = 0;
        for (int j = 0; j < u->n_inputs; j++)
            if (u->inputs[j] && find_val(b, u->inputs[j]) >= 0) in_block = 1;
        if (!in_block) continue;
        int k = find_val(b, u->inputs[0]);
        if (k >= 0 && u->n_inputs >= 2 && is_second(b, plan, u, 0, b->parts[k], u->inputs[0])) {
            b->second = u;
            break;
        }
        if (b->n_reshaped == MAX_BLOCK) return fail(b, u, "the block is too large");
        b->reshaped[b->n_reshaped++] = u;
        if (u->op == PX_OP_Split) {
            int k0 = find_val(b, u->inputs[0]);
            if (k0 < 0) return fail(b, u, "a Split whose sizes are computed");
            if (through_split(b, u, b->parts[k0], &u->inputs[0]->shape)) return 1;
            continue;
        }
        tp_part q;
        if (u->n_outputs != 1 || through(b, u, &q)) return fail(b, u, "unsupported node");
        if (add_val(b, u->outputs[0], q)) return 1;
    }
    if (!b->second) return fail(b, first, "no output projection takes the heads back");
    /* Nothing outside the block reads its values. */
    for (int i = 0; i < b->n_vals; i++) {
        const px_value *v = b->vals[i];
        if (v->is_output) return fail(b, v->producer, "a graph output inside the block");
        for (int k = 0; k < v->n_uses; k++) {
            const px_node *u = v->uses[k].node;
            int inside = u == b->second;
            for (int r = 0; r < b->n_reshaped && !inside; r++) inside = b->reshaped[r] == u;
            if (!inside) return fail(b, u, "a value of the block is read outside it");
        }
    }
    return 0;
}

static px_value *int_const(px_graph *g, const char *base, int n, const int64_t *vals, px_diag *d) {
    int64_t dims[1] = {n};
    px_shape s = px_shape_make(1, dims);
    px_tensor *t = px_tensor_new(PX_I64, &s, d);
    if (!t) return NULL;
    memcpy(t->data, vals, sizeof(int64_t) * (size_t)n);
    return px_graph_add_constant(g, base, t);
}

static int apply(block *b, px_graph *g, px_train_plan *plan, px_diag *d) {
    int tp = b->tp;
    int64_t f = b->first->inputs[1]->shape.dims[b->first_axis];
    int64_t sections = f / b->parts[0].period;
    plan->vars[px_tp_weight_var(plan, b->first->inputs[1])].tp_split = PX_TP_COLUMNS;
    plan->vars[px_tp_weight_var(plan, b->second->inputs[1])].tp_split = PX_TP_ROWS;
    for (int i = 0; i < b->n_edits; i++) {
        edit *e = &b->edits[i];
        if (e->kind == EDIT_OPERAND) {
            int v = px_plan_var_of(plan, e->node->inputs[e->input]);
            if (v >= 0) plan->vars[v].tp_split = PX_TP_COLUMNS;
            if (px_tp_split_input(g, plan, e->node, e->input, e->part.axis,
                                  e->full / e->part.period, tp, d))
                return -1;
            continue;
        }
        char base[300];
        snprintf(base, sizeof base, "tp/%s/%d", e->node->name, e->input);
        px_value *c = int_const(g, base, e->n, e->ints, d);
        if (!c) return px_error(d, "out of memory in the tensor-parallel pass");
        px_node_set_input(e->node, e->input, c);
    }
    if (px_tp_copy_input(g, b->first, tp, d) ||
        px_tp_split_input(g, plan, b->first, 1, b->first_axis, sections, tp, d) ||
        px_tp_split_input(g, plan, b->second, 1, b->second_axis, 1, tp, d))
        return -1;
    px_shape unknown = px_shape_unknown();
    for (int i = 0; i < b->n_vals; i++) {
        b->vals[i]->dtype = PX_UNDEFINED;
        b->vals[i]->shape = unknown;
    }
    return px_tp_sum_second(g, b->second, tp, d);
}

int px_tp_split_attention(px_graph *g, px_train_plan *plan, px_node *first, int tp,
                          const char **why, px_diag *d) {
    block *b = calloc(1, sizeof *b), *probe = calloc(1, sizeof *probe);
    int rc = -1;
    if (!b || !probe) {
        px_error(d, "out of memory in the tensor-parallel pass");
        goto done;
    }
    *b = (block){.tp = tp, .first = first};
    rc = find_block(b, g, plan);
    if (rc == 0) {
        rc = apply(b, g, plan, d);
        goto done;
    }
    /* A block that one rank would take whole, but not tp ranks: tp does not
     * divide its heads (a probe with tp 1 changes nothing). */
    *probe = (block){.tp = 1, .first = first};
    if (find_block(probe, g, plan) == 0) {
        rc = px_error(d,
                      "--tp %d does not divide the %lld attention heads of node '%s' (weight "
                      "'%s')",
                      tp, (long long)probe->heads, first->name, first->inputs[1]->name);
        goto done;
    }
    *why = b->why;
done:
    free(b);
    free(probe);
    return rc;
}
