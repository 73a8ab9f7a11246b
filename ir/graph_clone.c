/* Deep copy of a graph (graph_clone.h). Why it exists: compile needs the
 * model as loaded after it has trained a copy of it (the program's --save
 * bases), and copying the loaded graph costs a fraction of reading the
 * file again (no protobuf parse, checks, name resolution or sort), on a
 * model of 100k initializers most of a second. */
#include "graph_clone.h"

#include <stdlib.h>
#include <string.h>

/* Tensors the copy can own: malloc'd. A tensor mapped from external data
 * (or borrowed) would be copied into memory, where loading maps it again. */
static int tensor_copyable(const px_tensor *t) {
    return !t || t->storage == PX_STORAGE_MALLOC;
}

static int attr_copyable(const px_attr *a) {
    if (a->g || a->graphs || !tensor_copyable(a->t)) return 0;
    for (int i = 0; a->tensors && i < a->n; i++)
        if (!tensor_copyable(a->tensors[i])) return 0;
    return 1;
}

int px_graph_clonable(const px_graph *g) {
    if (g->parent) return 0;
    for (int i = 0; i < g->n_values; i++) /* ids index the values: the copy maps by them */
        if (g->values[i]->id != i || !tensor_copyable(g->values[i]->data)) return 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i]->id != i) return 0; /* and so do the nodes' */
        for (int k = 0; k < g->nodes[i]->n_attrs; k++)
            if (!attr_copyable(&g->nodes[i]->attrs[k])) return 0;
    }
    return 1;
}

/* malloc'd copies that fail only when memory runs out (NULL in, NULL out) */
static int dup_str(char **dst, const char *src) {
    if (!src) return 0;
    return (*dst = strdup(src)) ? 0 : -1;
}

static int dup_mem(void **dst, const void *src, size_t bytes) {
    if (!src) return 0;
    if (!(*dst = malloc(bytes ? bytes : 1))) return -1;
    if (bytes) memcpy(*dst, src, bytes);
    return 0;
}

static int dup_bytes(px_bytes *dst, const px_bytes *src) {
    dst->len = src->len;
    if (!src->data) return 0;
    if (!(dst->data = malloc(src->len + 1))) return -1;
    memcpy(dst->data, src->data, src->len);
    dst->data[src->len] = '\0';
    return 0;
}

static int dup_tensor(px_tensor **dst, const px_tensor *src, px_diag *d) {
    if (!src) return 0;
    return (*dst = px_tensor_clone(src, d)) ? 0 : -1;
}

/* Copies every field of src into dst (zeroed); graph attributes excluded
 * (px_graph_clonable). On failure dst holds what was copied: the caller
 * clears it. */
static int copy_attr(px_attr *dst, const px_attr *src, px_diag *d) {
    size_t n = (size_t)src->n;
    dst->kind = src->kind;
    dst->f = src->f;
    dst->i = src->i;
    dst->n = src->n;
    dst->tp_dtype = src->tp_dtype;
    if (dup_str(&dst->name, src->name) || dup_str(&dst->ref_attr_name, src->ref_attr_name) ||
        dup_bytes(&dst->s, &src->s) || dup_tensor(&dst->t, src->t, d) ||
        dup_mem((void **)&dst->floats, src->floats, n * sizeof *src->floats) ||
        dup_mem((void **)&dst->ints, src->ints, n * sizeof *src->ints) ||
        dup_mem((void **)&dst->tp_dtypes, src->tp_dtypes, n * sizeof *src->tp_dtypes) ||
        dup_mem((void **)&dst->tp_shapes, src->tp_shapes, n * sizeof *src->tp_shapes) ||
        dup_mem((void **)&dst->tp_shape, src->tp_shape, sizeof *src->tp_shape))
        return -1;
    if (src->strings) {
        if (!(dst->strings = calloc(n ? n : 1, sizeof *dst->strings))) return -1;
        for (size_t k = 0; k < n; k++)
            if (dup_bytes(&dst->strings[k], &src->strings[k])) return -1;
    }
    if (src->tensors) {
        if (!(dst->tensors = calloc(n ? n : 1, sizeof *dst->tensors))) return -1;
        for (size_t k = 0; k < n; k++)
            if (dup_tensor(&dst->tensors[k], src->tensors[k], d)) return -1;
    }
    return 0;
}

/* The copy's values in src's order (same names, ids and fields). */
static int copy_values(px_graph *g, const px_graph *src, px_diag *d) {
    for (int i = 0; i < src->n_values; i++) {
        const px_value *s = src->values[i];
        px_value *v = px_graph_add_value(g, s->name, s->dtype, &s->shape, d);
        if (!v || dup_tensor(&v->data, s->data, d) || dup_str(&v->doc, s->doc)) return -1;
        v->kind = s->kind;
        v->is_output = s->is_output;
        v->also_input = s->also_input;
        v->is_variable = s->is_variable;
        v->omit_in_export = s->omit_in_export;
    }
    return 0;
}

/* The copy's nodes in src's order, reading and writing the copy's values. */
static int copy_nodes(px_graph *g, const px_graph *src, px_diag *d) {
    int cap = 8;
    px_value **io = malloc((size_t)cap * sizeof *io);
    int rc = io ? 0 : -1;
    for (int i = 0; !rc && i < src->n_nodes; i++) {
        const px_node *s = src->nodes[i];
        int need = s->n_inputs + s->n_outputs;
        if (need > cap) {
            px_value **bigger = realloc(io, (size_t)need * sizeof *io);
            if (!bigger) {
                rc = -1;
                break;
            }
            io = bigger;
            cap = need;
        }
        for (int k = 0; k < s->n_inputs; k++)
            io[k] = s->inputs[k] ? g->values[s->inputs[k]->id] : NULL;
        for (int k = 0; k < s->n_outputs; k++)
            io[s->n_inputs + k] = s->outputs[k] ? g->values[s->outputs[k]->id] : NULL;
        px_node *n = px_graph_add_node(g, s->op_type, s->domain, s->name, s->n_inputs, io,
                                       s->n_outputs, io + s->n_inputs);
        n->dead = s->dead;
        if (dup_str(&n->doc, s->doc) ||
            (s->n_attrs && !(n->attrs = calloc((size_t)s->n_attrs, sizeof *n->attrs)))) {
            rc = -1;
            break;
        }
        for (int k = 0; !rc && k < s->n_attrs; k++) {
            n->n_attrs = k + 1; /* freed with the node, copied or not */
            rc = copy_attr(&n->attrs[k], &s->attrs[k], d);
        }
    }
    free(io);
    /* a removed node still lists its outputs, which it no longer produces */
    for (int i = 0; !rc && i < src->n_values; i++) {
        const px_value *s = src->values[i];
        g->values[i]->producer = s->producer ? g->nodes[s->producer->id] : NULL;
        g->values[i]->producer_index = s->producer_index;
    }
    return rc;
}

/* dst[0..n) = the copy's values at src's values' ids */
static int copy_list(px_graph *g, px_value ***dst, int *n_dst, int *cap, px_value *const *src,
                     int n) {
    if (!n) return 0;
    if (!(*dst = malloc((size_t)n * sizeof **dst))) return -1;
    for (int i = 0; i < n; i++) (*dst)[i] = g->values[src[i]->id];
    *n_dst = *cap = n;
    return 0;
}

static int copy_model_fields(px_graph *g, const px_graph *src) {
    g->batch = src->batch;
    g->ir_version = src->ir_version;
    g->model_version = src->model_version;
    if (dup_str(&g->doc, src->doc) || dup_str(&g->producer_name, src->producer_name) ||
        dup_str(&g->producer_version, src->producer_version) ||
        dup_str(&g->model_domain, src->model_domain) || dup_str(&g->model_doc, src->model_doc))
        return -1;
    if (src->n_opsets) {
        if (!(g->opsets = calloc((size_t)src->n_opsets, sizeof *g->opsets))) return -1;
        for (; g->n_opsets < src->n_opsets; g->n_opsets++) {
            g->opsets[g->n_opsets].version = src->opsets[g->n_opsets].version;
            if (dup_str(&g->opsets[g->n_opsets].domain, src->opsets[g->n_opsets].domain)) return -1;
        }
    }
    if (src->n_meta) {
        if (!(g->meta = calloc((size_t)src->n_meta, sizeof *g->meta))) return -1;
        for (; g->n_meta < src->n_meta; g->n_meta++)
            if (dup_str(&g->meta[g->n_meta].key, src->meta[g->n_meta].key) ||
                dup_str(&g->meta[g->n_meta].value, src->meta[g->n_meta].value)) {
                g->n_meta++; /* freed with the graph */
                return -1;
            }
    }
    return 0;
}

px_graph *px_graph_clone(const px_graph *src, px_diag *d) {
    if (!px_graph_clonable(src)) {
        px_error(d, "internal error: graph '%s' holds subgraphs or mapped tensors: not copied",
                 src->name);
        return NULL;
    }
    int errors = d->errors;
    px_graph *g = px_graph_new(src->name);
    if (copy_model_fields(g, src) || copy_values(g, src, d) || copy_nodes(g, src, d) ||
        copy_list(g, &g->inputs, &g->n_inputs, &g->cap_inputs, src->inputs, src->n_inputs) ||
        copy_list(g, &g->outputs, &g->n_outputs, &g->cap_outputs, src->outputs, src->n_outputs) ||
        copy_list(g, &g->inits, &g->n_inits, &g->cap_inits, src->inits, src->n_inits)) {
        if (d->errors == errors) px_error(d, "out of memory copying graph '%s'", src->name);
        px_graph_free(g);
        return NULL;
    }
    return g;
}
