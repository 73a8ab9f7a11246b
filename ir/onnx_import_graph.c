/* ONNX GraphProto -> px_graph: values, nodes, graph I/O, subgraph scoping.
 *
 * Nodes are imported in two passes: first every node output becomes a value,
 * then nodes are created with their inputs resolved. That way an unsorted
 * model still imports (the graph is toposorted afterwards), and a subgraph
 * can capture any value of its enclosing graph. */
#include "onnx_import_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *graph_label(const px_graph *g) {
    return g->name && *g->name ? g->name : "(unnamed)";
}

static const char *nonempty(const char *s) {
    return s && *s ? s : NULL;
}

/* Finds name in g, else in an enclosing graph; a captured outer value gets a
 * PX_VALUE_OUTER stand-in inside g so that g's nodes only point at g's values. */
static px_value *resolve_name(px_import_ctx *c, px_graph *g, const char *name) {
    px_value *v = px_graph_find_value(g, name);
    if (v) return v;
    for (const px_graph *p = g->parent; p; p = p->parent) {
        const px_value *outer = px_graph_find_value(p, name);
        if (!outer) continue;
        v = px_graph_add_value(g, name, outer->dtype, &outer->shape, c->d);
        if (v) v->kind = PX_VALUE_OUTER;
        return v;
    }
    return NULL;
}

static int add_initializers(px_import_ctx *c, px_graph *g, const Onnx__GraphProto *gp) {
    for (size_t i = 0; i < gp->n_initializer + gp->n_sparse_initializer; i++) {
        int sparse = i >= gp->n_initializer;
        const Onnx__TensorProto *tp =
            sparse ? gp->sparse_initializer[i - gp->n_initializer]->values : gp->initializer[i];
        const char *name = tp ? nonempty(tp->name) : NULL;
        if (!name)
            return px_error(c->d, "graph '%s': %sinitializer #%zu has no name", graph_label(g),
                            sparse ? "sparse " : "", sparse ? i - gp->n_initializer : i);
        if (px_graph_find_value(g, name))
            return px_error(c->d, "graph '%s': initializer '%s' is defined twice", graph_label(g),
                            name);
        px_tensor *t =
            sparse ? pxi_tensor_from_sparse(c, gp->sparse_initializer[i - gp->n_initializer], name)
                   : pxi_tensor_from_proto(c, tp, name);
        if (!t) return -1;
        px_value *v = px_graph_add_value(g, name, t->dtype, &t->shape, c->d);
        if (!v) {
            px_tensor_free(t);
            return -1;
        }
        px_graph_add_initializer(g, v, t);
        v->doc = pxi_strdup(nonempty(tp->doc_string));
    }
    return 0;
}

/* A graph input that is also an initializer (its default value): a
 * declared element type or dimension that differs from the initializer's
 * is refused, naming both (no type, an unknown rank or a symbolic
 * dimension fits). */
static int input_fits_initializer(px_import_ctx *c, const px_graph *g, const px_value *v,
                                  px_dtype dt, const px_shape *shape, int is_tensor) {
    int fits = is_tensor && (dt == PX_UNDEFINED || dt == v->dtype);
    if (fits && shape->rank >= 0) {
        fits = shape->rank == v->shape.rank;
        for (int k = 0; fits && k < shape->rank; k++)
            fits = shape->dims[k] < 0 || v->shape.dims[k] < 0 || shape->dims[k] == v->shape.dims[k];
    }
    if (fits) return 0;
    char in_shape[256], init_shape[256];
    return px_error(c->d,
                    "graph '%s': input '%s' (%s %s) and the initializer of the same name (%s %s) "
                    "differ: an initializer that is also an input is its default value and must "
                    "have its type; rename one of them",
                    graph_label(g), v->name, is_tensor ? px_dtype_name(dt) : "not a tensor",
                    px_shape_str(shape, in_shape, sizeof in_shape), px_dtype_name(v->dtype),
                    px_shape_str(&v->shape, init_shape, sizeof init_shape));
}

static int add_inputs(px_import_ctx *c, px_graph *g, const Onnx__GraphProto *gp) {
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        const char *name = nonempty(vi->name);
        if (!name) return px_error(c->d, "graph '%s': input #%zu has no name", graph_label(g), i);
        px_dtype dt;
        px_shape shape;
        int is_tensor;
        if (pxi_type_from_proto(c, vi->type, name, &dt, &shape, &is_tensor)) return -1;
        px_value *v = px_graph_find_value(g, name);
        if (v && v->kind == PX_VALUE_INITIALIZER && !v->also_input) {
            /* Old-style model: the initializer is the input's default value,
             * which must fit the input's declared type. */
            if (input_fits_initializer(c, g, v, dt, &shape, is_tensor)) return -1;
            v->also_input = 1;
            continue;
        }
        if (v)
            return px_error(c->d, "graph '%s': input '%s' is listed twice", graph_label(g), name);
        v = px_graph_add_value(g, name, dt, &shape, c->d);
        if (!v) return -1;
        v->doc = pxi_strdup(nonempty(vi->doc_string));
        px_graph_add_input(g, v);
    }
    return 0;
}

/* Names the node (before index `before`) that already produces `name`. */
static void note_earlier_producer(px_import_ctx *c, const Onnx__GraphProto *gp, size_t before,
                                  const char *name) {
    for (size_t i = 0; i < before; i++)
        for (size_t j = 0; j < gp->node[i]->n_output; j++)
            if (gp->node[i]->output[j] && strcmp(gp->node[i]->output[j], name) == 0) {
                px_note(c->d, "it is already an output of node '%s' (%s)",
                        gp->node[i]->name ? gp->node[i]->name : "",
                        gp->node[i]->op_type ? gp->node[i]->op_type : "?");
                return;
            }
    px_note(c->d, "it is already a graph input or initializer");
}

static int add_node_outputs(px_import_ctx *c, px_graph *g, const Onnx__GraphProto *gp) {
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        for (size_t j = 0; j < np->n_output; j++) {
            const char *name = nonempty(np->output[j]);
            if (!name) continue; /* omitted optional output */
            if (px_graph_find_value(g, name)) {
                px_error(c->d, "graph '%s': node '%s' (%s) produces '%s', which is defined twice",
                         graph_label(g), np->name ? np->name : "", np->op_type ? np->op_type : "?",
                         name);
                note_earlier_producer(c, gp, i, name);
                return -1;
            }
            if (!px_graph_add_value(g, name, PX_UNDEFINED, NULL, c->d)) return -1;
        }
    }
    return 0;
}

/* value_info: declared types of intermediate values (hints; shape inference
 * recomputes them). Entries naming unknown values are ignored, as onnx does. */
static int apply_value_info(px_import_ctx *c, px_graph *g, const Onnx__GraphProto *gp) {
    for (size_t i = 0; i < gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = gp->value_info[i];
        px_value *v = px_graph_find_value(g, nonempty(vi->name));
        if (!v || v->kind != PX_VALUE_INTERMEDIATE) continue;
        int is_tensor;
        if (pxi_type_from_proto(c, vi->type, vi->name, &v->dtype, &v->shape, &is_tensor)) return -1;
        if (!v->doc) v->doc = pxi_strdup(nonempty(vi->doc_string));
    }
    return 0;
}

/* Imports np's attributes onto n, then the subgraphs of its GRAPH and
 * GRAPHS attributes (with parent g), one attribute after the other. */
static int import_attrs(px_import_ctx *c, px_graph *g, px_node *n, const Onnx__NodeProto *np) {
    char label[256];
    px_node_label(n, label, sizeof label);
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        px_attr *dst = pxi_import_attr(c, n, a, label);
        if (!dst) return -1;
        if (dst->kind == PX_ATTR_GRAPH && !(dst->g = pxi_import_graph(c, a->g, g))) return -1;
        for (int k = 0; dst->kind == PX_ATTR_GRAPHS && k < dst->n; k++)
            if (!(dst->graphs[k] = pxi_import_graph(c, a->graphs[k], g))) return -1;
    }
    return 0;
}

static int add_node(px_import_ctx *c, px_graph *g, const Onnx__NodeProto *np, size_t index) {
    const char *nname = np->name ? np->name : "";
    if (!nonempty(np->op_type))
        return px_error(c->d, "graph '%s': node #%zu '%s' has no op_type", graph_label(g), index,
                        nname);
    if (np->n_input > INT_MAX || np->n_output > INT_MAX)
        return px_error(c->d, "node '%s' (%s) has too many inputs or outputs", nname, np->op_type);
    int rc = -1;
    px_value **ins = calloc(np->n_input ? np->n_input : 1, sizeof *ins);
    px_value **outs = calloc(np->n_output ? np->n_output : 1, sizeof *outs);
    if (!ins || !outs) abort();
    for (size_t j = 0; j < np->n_input; j++) {
        const char *name = nonempty(np->input[j]);
        if (!name) continue; /* omitted optional input */
        ins[j] = resolve_name(c, g, name);
        if (!ins[j]) {
            px_error(c->d,
                     "graph '%s': node '%s' (%s) reads '%s' (input #%zu), which is not defined",
                     graph_label(g), nname, np->op_type, name, j);
            goto cleanup;
        }
    }
    for (size_t j = 0; j < np->n_output; j++)
        outs[j] = px_graph_find_value(g, nonempty(np->output[j])); /* made by add_node_outputs */
    px_node *n = px_graph_add_node(g, np->op_type, np->domain, nname, (int)np->n_input, ins,
                                   (int)np->n_output, outs);
    n->doc = pxi_strdup(nonempty(np->doc_string));
    rc = import_attrs(c, g, n, np);
cleanup:
    free(ins);
    free(outs);
    return rc;
}

static int add_outputs(px_import_ctx *c, px_graph *g, const Onnx__GraphProto *gp) {
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        const char *name = nonempty(vi->name);
        if (!name) return px_error(c->d, "graph '%s': output #%zu has no name", graph_label(g), i);
        px_value *v = resolve_name(c, g, name);
        if (!v)
            return px_error(c->d,
                            "graph '%s': output '%s' is not produced by any node and is not an "
                            "input or initializer",
                            graph_label(g), name);
        px_dtype dt;
        px_shape shape;
        int is_tensor;
        if (pxi_type_from_proto(c, vi->type, name, &dt, &shape, &is_tensor)) return -1;
        if (v->kind == PX_VALUE_INTERMEDIATE) {
            if (v->dtype == PX_UNDEFINED) v->dtype = dt;
            if (v->shape.rank < 0) v->shape = shape;
        }
        if (!v->doc) v->doc = pxi_strdup(nonempty(vi->doc_string));
        px_graph_add_output(g, v);
    }
    return 0;
}

px_graph *pxi_import_graph(px_import_ctx *c, const Onnx__GraphProto *gp, px_graph *parent) {
    px_graph *g = px_graph_new(gp->name ? gp->name : "");
    g->parent = parent;
    g->doc = pxi_strdup(nonempty(gp->doc_string));
    if (add_initializers(c, g, gp) || add_inputs(c, g, gp) || add_node_outputs(c, g, gp) ||
        apply_value_info(c, g, gp))
        goto fail;
    for (size_t i = 0; i < gp->n_node; i++)
        if (add_node(c, g, gp->node[i], i)) goto fail;
    if (add_outputs(c, g, gp)) goto fail;
    /* (A graph without nodes needs no sorting.) */
    if ((g->n_nodes > 0 && px_graph_toposort(g, c->d)) || px_graph_verify(g, c->d)) goto fail;
    return g;
fail:
    px_graph_free(g);
    return NULL;
}
