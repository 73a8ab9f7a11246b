/* Unrolling a Loop whose trip count is a compile-time constant and whose
 * condition stays true (control_flow_internal.h): the body is copied once
 * per iteration, iteration k reading the constant k as its iteration
 * number, constant true as its condition and the previous iteration's
 * loop-carried values; the Loop's outputs become the last carried values
 * and the scan outputs stacked along a new dim 0 (Unsqueeze + Concat).
 * Bodies with subgraphs of their own, zero-trip loops with scan outputs and
 * unrolls of more than PXCF_MAX_UNROLL iterations or 100000 copied nodes
 * are left alone (the caller then refuses the Loop by name). */
#include "control_flow_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COPIED_NODES 100000

/* Copies the plain attribute kinds; 0 when a kind cannot be copied. */
static int copyable(const px_attr *a) {
    switch (a->kind) {
    case PX_ATTR_INT:
    case PX_ATTR_FLOAT:
    case PX_ATTR_STRING:
    case PX_ATTR_INTS:
    case PX_ATTR_FLOATS:
    case PX_ATTR_TENSOR: return a->ref_attr_name == NULL;
    default: return 0;
    }
}

/* The trip count, or -1 when this Loop cannot be unrolled. */
static int64_t unrollable(const px_graph *g, const px_node *n, const px_graph *body) {
    int64_t m;
    if (n->n_inputs < 2 || !n->inputs[0] || pxcf_const_ints(g, n->inputs[0], &m, 1) != 1 || m < 0 ||
        m > PXCF_MAX_UNROLL)
        return -1;
    int carried = n->n_inputs - 2, scans = n->n_outputs - carried;
    if (scans < 0 || body->n_inputs != 2 + carried || body->n_outputs != 1 + carried + scans)
        return -1;
    if (n->inputs[1] && !pxcf_always_true(g, n->inputs[1], NULL)) return -1;
    if (!pxcf_always_true(body, body->outputs[0], body->inputs[1])) return -1;
    if (m == 0 && scans > 0) return -1;
    if (m * (body->n_nodes + 2) > MAX_COPIED_NODES) return -1;
    for (int i = 0; i < carried; i++)
        if (!n->inputs[2 + i]) return -1;
    for (int i = 0; i < body->n_nodes; i++)
        for (int j = 0; j < body->nodes[i]->n_attrs; j++)
            if (!copyable(&body->nodes[i]->attrs[j])) return -1;
    return m;
}

static px_value *scalar_const(px_graph *g, const char *base, px_dtype dt, int64_t v, px_diag *d) {
    px_shape s = px_shape_scalar();
    px_tensor *t = px_tensor_new(dt, &s, d);
    if (!t) return NULL;
    px_tensor_set_i64(t, 0, v);
    return px_graph_add_constant(g, base, t);
}

/* Body value v of iteration k as a value of g. */
static px_value *map_value(px_graph *g, const px_graph *body, px_value **map, px_value *v,
                           const char *suffix, px_diag *d) {
    if (!v) return NULL;
    if (map[v->id]) return map[v->id];
    px_value *m = NULL;
    char name[512];
    snprintf(name, sizeof name, "%s%s", v->name, suffix);
    if (v->kind == PX_VALUE_OUTER) {
        m = pxcf_outer(body, v);
    } else if (px_value_is_const(v)) {
        px_tensor *t = px_tensor_clone(v->data, d);
        if (t) m = px_graph_add_constant(g, name, t);
    } else {
        m = px_graph_new_value(g, name, v->dtype, &v->shape);
    }
    return map[v->id] = m;
}

static px_node *add1(px_graph *g, int *pos, const char *op, const char *name, int n_in,
                     px_value *const *in, px_value *out) {
    return px_graph_insert_node(g, (*pos)++, op, "", name, n_in, in, 1, &out);
}

/* One copy of the body; cur[] in: carried values, out: the next ones;
 * scan_out[s] gets this iteration's scan value s. */
static int copy_body(px_graph *g, const px_graph *body, int *pos, int64_t k, px_value **cur,
                     int carried, px_value **scan_out, int scans, const char *loop, px_diag *d) {
    char suffix[64], name[512];
    snprintf(suffix, sizeof suffix, "/iter%lld", (long long)k);
    px_value **map = calloc((size_t)body->n_values + 1, sizeof *map);
    if (!map) abort();
    int rc = -1;
    snprintf(name, sizeof name, "%s/iteration_%lld", loop, (long long)k);
    map[body->inputs[0]->id] = scalar_const(g, name, PX_I64, k, d);
    snprintf(name, sizeof name, "%s/condition", loop);
    map[body->inputs[1]->id] = scalar_const(g, name, PX_BOOL, 1, d);
    if (!map[body->inputs[0]->id] || !map[body->inputs[1]->id]) goto done;
    for (int j = 0; j < carried; j++) map[body->inputs[2 + j]->id] = cur[j];
    for (int i = 0; i < body->n_nodes; i++) {
        const px_node *bn = body->nodes[i];
        if (bn->dead) continue;
        px_value **ins = calloc((size_t)bn->n_inputs + 1, sizeof *ins);
        px_value **outs = calloc((size_t)bn->n_outputs + 1, sizeof *outs);
        if (!ins || !outs) abort();
        int bad = 0;
        for (int j = 0; j < bn->n_inputs; j++)
            if (bn->inputs[j] && !(ins[j] = map_value(g, body, map, bn->inputs[j], suffix, d)))
                bad = 1;
        for (int j = 0; j < bn->n_outputs; j++)
            if (bn->outputs[j] && !(outs[j] = map_value(g, body, map, bn->outputs[j], suffix, d)))
                bad = 1;
        px_node *c = NULL;
        if (!bad) {
            snprintf(name, sizeof name, "%s%s", bn->name, suffix);
            c = px_graph_insert_node(g, (*pos)++, bn->op_type, bn->domain, name, bn->n_inputs, ins,
                                     bn->n_outputs, outs);
            for (int j = 0; j < bn->n_attrs && !bad; j++)
                if (px_node_copy_attr(c, &bn->attrs[j], d)) bad = 1;
        }
        free(ins);
        free(outs);
        if (bad) goto done;
    }
    for (int j = 0; j < carried; j++)
        if (!(cur[j] = map_value(g, body, map, body->outputs[1 + j], suffix, d))) goto done;
    for (int s = 0; s < scans; s++)
        if (!(scan_out[s] = map_value(g, body, map, body->outputs[1 + carried + s], suffix, d)))
            goto done;
    rc = 0;
done:
    free(map);
    return rc;
}

int pxcf_unroll_loop(px_graph *g, px_node *n, px_diag *d) {
    const px_attr *ba = px_node_attr(n, "body");
    px_graph *body = ba && ba->kind == PX_ATTR_GRAPH ? ba->g : NULL;
    int64_t m = body ? unrollable(g, n, body) : -1;
    if (m < 0) return 0;
    int carried = n->n_inputs - 2, scans = n->n_outputs - carried, rc = -1;
    char loop[400], name[512];
    snprintf(loop, sizeof loop, "%s", n->name[0] ? n->name : "Loop");
    px_value **cur = calloc((size_t)carried + 1, sizeof *cur);
    px_value **scan = calloc((size_t)(scans * m) + 1, sizeof *scan);
    px_value **outs = calloc((size_t)n->n_outputs + 1, sizeof *outs);
    if (!cur || !scan || !outs) abort();
    for (int j = 0; j < carried; j++) cur[j] = n->inputs[2 + j];
    for (int j = 0; j < n->n_outputs; j++) outs[j] = n->outputs[j];
    int pos = 0;
    while (pos < g->n_nodes && g->nodes[pos] != n) pos++;
    px_graph_remove_node(g, n);
    pos++;
    for (int64_t k = 0; k < m; k++) {
        px_value *row[64];
        px_value **sr = scans <= 64 ? row : calloc((size_t)scans, sizeof *sr);
        if (!sr) abort();
        int r = copy_body(g, body, &pos, k, cur, carried, sr, scans, loop, d);
        for (int s = 0; s < scans; s++) scan[s * m + k] = sr[s];
        if (sr != row) free(sr);
        if (r) goto done;
    }
    for (int j = 0; j < carried; j++) {
        if (!outs[j]) continue;
        snprintf(name, sizeof name, "%s/final_%d", loop, j);
        add1(g, &pos, "Identity", name, 1, &cur[j], outs[j]);
    }
    if (scans) {
        px_shape s1 = px_shape_make(1, (int64_t[]){1});
        px_tensor *t = px_tensor_new(PX_I64, &s1, d);
        if (!t) goto done;
        px_tensor_set_i64(t, 0, 0);
        snprintf(name, sizeof name, "%s/axes_0", loop);
        px_value *axes = px_graph_add_constant(g, name, t);
        for (int s = 0; s < scans; s++) {
            px_value *out = outs[carried + s];
            if (!out) continue;
            px_value **rows = calloc((size_t)m, sizeof *rows);
            if (!rows) abort();
            for (int64_t k = 0; k < m; k++) {
                snprintf(name, sizeof name, "%s/scan_%d/row%lld", loop, s, (long long)k);
                rows[k] = px_graph_new_value(g, name, PX_UNDEFINED, NULL);
                px_value *uin[2] = {scan[s * m + k], axes};
                if (px_graph_opset(g, "") >= 13) {
                    add1(g, &pos, "Unsqueeze", name, 2, uin, rows[k]);
                } else {
                    int64_t zero = 0;
                    px_node_set_attr_ints(add1(g, &pos, "Unsqueeze", name, 1, uin, rows[k]), "axes",
                                          1, &zero);
                }
            }
            snprintf(name, sizeof name, "%s/scan_%d", loop, s);
            px_node_set_attr_int(add1(g, &pos, "Concat", name, (int)m, rows, out), "axis", 0);
            free(rows);
        }
    }
    rc = 1;
done:
    free(cur);
    free(scan);
    free(outs);
    return rc;
}
