#include "sparsity.h"

#include <stdlib.h>
#include <string.h>

/* Contents of a value when known without evaluating anything: its own data
 * (constants, initializers) or the value attribute of its Constant node. */
static const px_tensor *known_data(const px_value *v) {
    if (v->data) return v->data;
    if (v->producer && v->producer->op == PX_OP_Constant)
        return px_attr_tensor(v->producer, "value");
    return NULL;
}

/* The dims [*start, *end) of its input that a Shape node reports (opset 15
 * start/end attributes, clamped as ONNX does). -1 when the rank is unknown. */
static int shape_window(const px_node *shape, int *start, int *end) {
    const px_value *x = shape->n_inputs >= 1 ? shape->inputs[0] : NULL;
    if (!x || x->shape.rank < 0) return -1;
    int64_t r = x->shape.rank;
    int64_t s = px_attr_int(shape, "start", 0), e = px_attr_int(shape, "end", r);
    if (s < 0) s += r;
    if (e < 0) e += r;
    s = s < 0 ? 0 : s > r ? r : s;
    e = e < s ? s : e > r ? r : e;
    *start = (int)s;
    *end = (int)e;
    return 0;
}

static int dims_static(const px_shape *sh, int start, int end) {
    for (int i = start; i < end; i++)
        if (sh->dims[i] < 0) return 0;
    return 1;
}

/* Gather(Shape(x), constant indices) is a compile-time constant when every
 * selected dim of x is static, even if other dims of x are not: exporters
 * compute a sequence length this way while the batch is still symbolic. */
static int gathers_static_dims(const px_node *gather, const unsigned char *is_const, int n_values) {
    const px_value *data = gather->inputs[0], *idx = gather->inputs[1];
    if (!data || !idx || !data->producer || data->producer->op != PX_OP_Shape) return 0;
    if (idx->id < 0 || idx->id >= n_values || !is_const[idx->id]) return 0;
    const px_tensor *t = known_data(idx);
    if (!t || (t->dtype != PX_I64 && t->dtype != PX_I32)) return 0;
    int start, end;
    if (shape_window(data->producer, &start, &end) != 0) return 0;
    const px_shape *x = &data->producer->inputs[0]->shape;
    int64_t width = end - start, n = px_tensor_numel(t);
    if (n < 0) return 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t i = px_tensor_get_i64(t, k);
        if (i < 0) i += width;
        if (i < 0 || i >= width || x->dims[start + i] < 0) return 0;
    }
    return 1;
}

/* Which values are known at compile time. The graph is in topological order,
 * so one forward sweep suffices: a node's outputs are constant when the node
 * draws no random numbers and every input it has is constant; Shape needs
 * only the dims it reports to be static, and Size a static input. Trainable
 * (float) initializers change every step, so they are not constants.
 * Returns a malloc'd array indexed by value id, or NULL when out of memory. */
static unsigned char *find_compile_time_constants(const px_graph *g) {
    unsigned char *is_const = calloc((size_t)g->n_values + 1, 1);
    if (!is_const) return NULL;
    for (int i = 0; i < g->n_values; i++) {
        const px_value *v = g->values[i];
        if (v->id < 0 || v->id >= g->n_values) continue;
        if (v->kind == PX_VALUE_CONSTANT ||
            (v->kind == PX_VALUE_INITIALIZER && !px_dtype_is_float(v->dtype)))
            is_const[v->id] = 1;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        if (n->dead || n->op == PX_OP_UNKNOWN) continue;
        if (px_op_table[n->op].flags & PX_F_RANDOM) continue;
        int all_const = 1, start, end;
        if (n->op == PX_OP_Shape && n->n_inputs >= 1 && n->inputs[0]) {
            all_const =
                shape_window(n, &start, &end) == 0 && dims_static(&n->inputs[0]->shape, start, end);
        } else if (n->op == PX_OP_Size && n->n_inputs >= 1 && n->inputs[0]) {
            all_const = px_shape_is_static(&n->inputs[0]->shape);
        } else if (n->op == PX_OP_Gather && n->n_inputs >= 2 &&
                   gathers_static_dims(n, is_const, g->n_values)) {
            all_const = 1;
        } else {
            for (int k = 0; k < n->n_inputs && all_const; k++) {
                const px_value *in = n->inputs[k];
                if (in && !(in->id >= 0 && in->id < g->n_values && is_const[in->id])) all_const = 0;
            }
        }
        if (!all_const) continue;
        for (int k = 0; k < n->n_outputs; k++) {
            const px_value *o = n->outputs[k];
            if (o && o->id >= 0 && o->id < g->n_values) is_const[o->id] = 1;
        }
    }
    return is_const;
}

/* Decides one variable. Leaves info->cls DENSE with a reason unless every
 * use is a row look-up with runtime indices. */
static void classify_one(const px_graph *g, const unsigned char *is_const, px_var_info *info) {
    const px_value *v = info->value;
    info->cls = PX_VAR_DENSE;
    info->n_gathers = 0;
    info->dense_node = NULL;
    if (v->is_output) {
        info->dense_reason = "a graph output";
        return;
    }
    int live_uses = 0;
    for (int u = 0; u < v->n_uses; u++) {
        const px_node *n = v->uses[u].node;
        if (!n || n->dead) continue;
        live_uses++;
        if (n->op != PX_OP_Gather) {
            info->dense_reason = "read by a non-Gather node";
            info->dense_node = n;
            return;
        }
        if (v->uses[u].index != 0) {
            info->dense_reason = "used as the indices of a Gather";
            info->dense_node = n;
            return;
        }
        int64_t axis = px_attr_int(n, "axis", 0);
        if (axis < 0 && v->shape.rank > 0) axis += v->shape.rank;
        if (axis != 0) {
            info->dense_reason = "gathered on an axis other than 0";
            info->dense_node = n;
            return;
        }
        const px_value *idx = n->n_inputs > 1 ? n->inputs[1] : NULL;
        if (!idx || (idx->id >= 0 && idx->id < g->n_values && is_const[idx->id])) {
            info->dense_reason = "gathered with compile-time constant indices";
            info->dense_node = n;
            return;
        }
        info->n_gathers++;
    }
    if (live_uses == 0) {
        info->dense_reason = "not used";
        return;
    }
    info->cls = PX_VAR_SPARSE;
    info->dense_reason = NULL;
}

int px_classify_variables(const px_graph *g, px_var_info **out, int *n, px_diag *d) {
    int rc = -1;
    unsigned char *is_const = NULL;
    px_var_info *vars = NULL;
    int count = 0;
    *out = NULL;
    *n = 0;

    for (int i = 0; i < g->n_inits; i++)
        if (g->inits[i]->kind == PX_VALUE_INITIALIZER && px_dtype_is_float(g->inits[i]->dtype))
            count++;
    if (count == 0) return 0;

    is_const = find_compile_time_constants(g);
    vars = calloc((size_t)count, sizeof *vars);
    if (!is_const || !vars) {
        px_error(d, "out of memory classifying the variables of graph '%s'",
                 g->name ? g->name : "");
        goto cleanup;
    }
    int k = 0;
    for (int i = 0; i < g->n_inits; i++) {
        px_value *v = g->inits[i];
        if (v->kind != PX_VALUE_INITIALIZER || !px_dtype_is_float(v->dtype)) continue;
        vars[k].value = v;
        classify_one(g, is_const, &vars[k]);
        k++;
    }
    *out = vars;
    *n = count;
    vars = NULL;
    rc = 0;
cleanup:
    free(vars);
    free(is_const);
    return rc;
}
