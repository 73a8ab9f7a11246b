/* Drives the per-op shape functions and reconciles their results with the
 * types a model declared for its values (ONNX value_info / graph outputs). */
#include "shape_infer.h"

#include "shape_util.h"

#include <string.h>

/* What an output held before inference: the model's declaration, or the
 * result of an earlier inference run. */
typedef struct declared {
    px_dtype dtype;
    px_shape shape;
} declared;

/* Merges the declared type into the inferred one: a contradiction between
 * two known facts is an error; a known declared dim fills an unknown
 * inferred one (and a declared symbol names an anonymous one). */
static int reconcile(const px_node *n, px_value *v, const declared *decl, px_diag *d) {
    if (decl->dtype != PX_UNDEFINED && v->dtype != PX_UNDEFINED && decl->dtype != v->dtype)
        return px_su_error(d, n, "output '%s' is declared %s but inferred %s", v->name,
                           px_dtype_name(decl->dtype), px_dtype_name(v->dtype));
    if (v->dtype == PX_UNDEFINED) v->dtype = decl->dtype;
    const px_shape *ds = &decl->shape;
    if (ds->rank < 0) return 0;
    if (v->shape.rank < 0) {
        v->shape = *ds;
        return 0;
    }
    char a[256], b[256];
    if (ds->rank != v->shape.rank)
        return px_su_error(d, n, "output '%s' is declared with shape %s but inferred %s", v->name,
                           px_shape_str(ds, a, sizeof a), px_shape_str(&v->shape, b, sizeof b));
    for (int i = 0; i < ds->rank; i++) {
        int64_t want = ds->dims[i], got = v->shape.dims[i];
        if (want >= 0 && got >= 0 && want != got)
            return px_su_error(d, n, "output '%s' is declared with shape %s but inferred %s",
                               v->name, px_shape_str(ds, a, sizeof a),
                               px_shape_str(&v->shape, b, sizeof b));
        if (got < 0 && want >= 0) {
            v->shape.dims[i] = want;
            v->shape.sym_id[i] = 0;
        } else if (got < 0 && !v->shape.sym_id[i]) {
            v->shape.sym_id[i] = ds->sym_id[i];
        }
    }
    return 0;
}

int px_infer_node(px_graph *g, px_node *n, px_diag *d) {
    char label[256];
    if (n->op == PX_OP_UNKNOWN || n->op >= PX_OP_COUNT || !px_op_table[n->op].infer)
        return px_error(d,
                        "%s: op '%s' (domain '%s') is not supported, so its outputs' shapes are "
                        "unknown",
                        px_node_label(n, label, sizeof label), n->op_type ? n->op_type : "?",
                        n->domain ? n->domain : "");
    declared decl[64];
    int nd = n->n_outputs < 64 ? n->n_outputs : 64;
    for (int i = 0; i < nd; i++) {
        px_value *v = n->outputs[i];
        decl[i].dtype = v ? v->dtype : PX_UNDEFINED;
        decl[i].shape = v ? v->shape : px_shape_unknown();
    }
    if (px_op_table[n->op].infer(g, n, d)) return -1;
    for (int i = 0; i < nd; i++)
        if (n->outputs[i] && reconcile(n, n->outputs[i], &decl[i], d)) return -1;
    return 0;
}

int px_infer_shapes(px_graph *g, px_diag *d) {
    for (int i = 0; i < g->n_nodes; i++) {
        px_node *n = g->nodes[i];
        if (n->dead) continue;
        if (px_infer_node(g, n, d)) return -1;
    }
    return 0;
}
