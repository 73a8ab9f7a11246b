/* pxcf_* (control_flow_query.h): reading body graphs. */
#include "control_flow_query.h"

#include <string.h>

static int is_default_domain(const char *d) {
    return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

int px_is_control_flow_op(const char *op_type, const char *domain) {
    return op_type && is_default_domain(domain) &&
           (strcmp(op_type, "If") == 0 || strcmp(op_type, "Loop") == 0);
}

int pxcf_is_op(const px_node *n, const char *op_type) {
    return n && is_default_domain(n->domain) && strcmp(n->op_type, op_type) == 0;
}

px_value *pxcf_outer(const px_graph *body, px_value *v) {
    if (!v || v->kind != PX_VALUE_OUTER) return v;
    int depth = 0;
    for (const px_graph *p = body->parent; p && depth < PX_CONTROL_FLOW_MAX_DEPTH;
         p = p->parent, depth++) {
        px_value *o = px_graph_find_value(p, v->name);
        if (o && o->kind != PX_VALUE_OUTER) return o;
    }
    return NULL;
}

px_node *pxcf_producer(const px_value *v, const char *op_type) {
    return v && pxcf_is_op(v->producer, op_type) ? v->producer : NULL;
}

static int tensor_ints(const px_tensor *t, int64_t *out, int cap) {
    if (!t || (!px_dtype_is_int(t->dtype) && t->dtype != PX_BOOL)) return -1;
    int64_t n = px_tensor_numel(t);
    if (n < 0 || n > cap) return -1;
    for (int64_t i = 0; i < n; i++) out[i] = px_tensor_get_i64(t, i);
    return (int)n;
}

/* o's integers when it is a constant or a Constant node's output. */
static int const_ints(px_value *o, int64_t *out, int cap) {
    if (px_value_is_const(o)) return tensor_ints(o->data, out, cap);
    px_node *c = pxcf_producer(o, "Constant");
    if (!c) return -1;
    const px_attr *a = px_node_attr(c, "value");
    if (a && a->kind == PX_ATTR_TENSOR) return tensor_ints(a->t, out, cap);
    if ((a = px_node_attr(c, "value_int")) && a->kind == PX_ATTR_INT && cap >= 1) {
        out[0] = a->i;
        return 1;
    }
    if ((a = px_node_attr(c, "value_ints")) && a->kind == PX_ATTR_INTS && a->n <= cap) {
        memcpy(out, a->ints, (size_t)a->n * sizeof *out);
        return a->n;
    }
    return -1;
}

int pxcf_const_ints(const px_graph *body, const px_value *v, int64_t *out, int cap) {
    px_value *o = pxcf_outer(body, (px_value *)v);
    /* Without constant folding torch leaves Casts of its constants (to bool,
     * or to int64 / int32) and Identities: read through a few of them. */
    int to_bool = 0;
    for (int hops = 0; o && hops < 8; hops++) {
        px_node *p = pxcf_producer(o, "Identity");
        if (!p && (p = pxcf_producer(o, "Cast"))) {
            px_dtype to = (px_dtype)px_attr_int(p, "to", 0);
            if (to != PX_BOOL && to != PX_I64 && to != PX_I32) return -1;
            to_bool |= to == PX_BOOL;
        }
        if (!p || p->n_inputs < 1) break;
        o = pxcf_outer(body, p->inputs[0]);
    }
    if (!o) return -1;
    if (to_bool) {
        int n = const_ints(o, out, cap);
        for (int i = 0; i < n; i++) out[i] = out[i] != 0;
        return n;
    }
    return const_ints(o, out, cap);
}

/* A loop condition that stays true: a constant true, the body's own
 * condition input passed through, or a chain of Cast / Identity of either,
 * in the body or in the graphs around it (torch exports the condition
 * without constant folding as Cast(Constant int64 1) to bool, outside the
 * body, and the body's condition output as a Cast of that). */
int pxcf_always_true(const px_graph *body, const px_value *v, const px_value *cond_in) {
    for (int hops = 0; v && hops < 8; hops++) {
        if (v == cond_in) return 1;
        int64_t c;
        if (pxcf_const_ints(body, v, &c, 1) == 1) return c != 0;
        v = pxcf_outer(body, (px_value *)v);
        px_node *p = pxcf_producer(v, "Cast");
        if (!p) p = pxcf_producer(v, "Identity");
        if (!p || p->n_inputs < 1) return 0;
        v = p->inputs[0];
    }
    return 0;
}
