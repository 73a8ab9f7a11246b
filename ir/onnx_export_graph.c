/* Builds protobuf-c ONNX messages (ModelProto, GraphProto, ...) from the IR.
 * Strings and tensor contents are borrowed from the px_graph; everything else
 * is allocated in the px_export_ctx. Nothing is written here: see onnx_export.c. */
#include "onnx_export_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_IR_VERSION 8
#define DEFAULT_ONNX_OPSET 17

void *px_export_alloc(px_export_ctx *c, size_t size) {
    if (c->n_allocs == c->cap_allocs) {
        size_t cap = c->cap_allocs ? 2 * c->cap_allocs : 256;
        void **grown = realloc(c->allocs, cap * sizeof *grown);
        if (!grown) goto oom;
        c->allocs = grown;
        c->cap_allocs = cap;
    }
    void *p = calloc(1, size ? size : 1);
    if (!p) goto oom;
    c->allocs[c->n_allocs++] = p;
    return p;
oom:
    px_error(c->d, "ONNX export: out of memory allocating %zu bytes", size);
    return NULL;
}

void px_export_ctx_free(px_export_ctx *c) {
    for (size_t i = 0; i < c->n_allocs; i++) free(c->allocs[i]);
    free(c->allocs);
    free(c->blobs);
    c->allocs = NULL;
    c->blobs = NULL;
    c->n_allocs = c->cap_allocs = c->n_blobs = c->cap_blobs = 0;
}

#define ALLOC_ARRAY(c, n, type) ((type *)px_export_alloc((c), (size_t)(n) * sizeof(type)))

/* protobuf-c takes char * even for fields it only reads. */
static char *borrow(const char *s) {
    return (char *)s;
}

/* NULL stays NULL; "" becomes NULL so optional string fields are left out. */
static char *borrow_nonempty(const char *s) {
    return s && *s ? (char *)s : NULL;
}

static int record_blob(px_export_ctx *c, Onnx__TensorProto *tp) {
    if (c->n_blobs == c->cap_blobs) {
        size_t cap = c->cap_blobs ? 2 * c->cap_blobs : 64;
        px_export_blob *grown = realloc(c->blobs, cap * sizeof *grown);
        if (!grown) return px_error(c->d, "ONNX export: out of memory");
        c->blobs = grown;
        c->cap_blobs = cap;
    }
    px_export_blob *b = &c->blobs[c->n_blobs++];
    memset(b, 0, sizeof *b);
    b->proto = tp;
    b->data = tp->raw_data.data;
    b->len = tp->raw_data.len;
    return 0;
}

/* ---- types and shapes ---- */

static Onnx__TensorShapeProto *export_shape(px_export_ctx *c, const px_shape *s) {
    Onnx__TensorShapeProto *sp = px_export_alloc(c, sizeof *sp);
    if (!sp) return NULL;
    onnx__tensor_shape_proto__init(sp);
    if (s->rank == 0) return sp;
    sp->dim = ALLOC_ARRAY(c, s->rank, Onnx__TensorShapeProto__Dimension *);
    if (!sp->dim) return NULL;
    sp->n_dim = (size_t)s->rank;
    for (int i = 0; i < s->rank; i++) {
        Onnx__TensorShapeProto__Dimension *dim = px_export_alloc(c, sizeof *dim);
        if (!dim) return NULL;
        onnx__tensor_shape_proto__dimension__init(dim);
        if (s->dims[i] >= 0) {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim->dim_value = s->dims[i];
        } else if (px_shape_sym(s, i) && px_shape_sym(s, i)[0]) {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dim->dim_param = borrow(px_shape_sym(s, i));
        } /* else: an empty Dimension, ONNX's "unknown, unnamed" */
        sp->dim[i] = dim;
    }
    return sp;
}

/* A tensor type; the shape field is left out entirely when the rank is unknown.
 * An UNDEFINED dtype (e.g. a TYPE_PROTO attribute holding a sequence or
 * optional type, which the IR does not model) gives an empty TypeProto. */
static Onnx__TypeProto *export_type(px_export_ctx *c, px_dtype dtype, const px_shape *s) {
    Onnx__TypeProto *tp = px_export_alloc(c, sizeof *tp);
    if (!tp) return NULL;
    onnx__type_proto__init(tp);
    if (dtype == PX_UNDEFINED) return tp;
    Onnx__TypeProto__Tensor *tt = px_export_alloc(c, sizeof *tt);
    if (!tt) return NULL;
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = (int32_t)dtype;
    if (s->rank >= 0 && !(tt->shape = export_shape(c, s))) return NULL;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    return tp;
}

/* Values of unknown dtype get no type at all: writing a made-up one would be
 * worse than ONNX's "type not given". */
static Onnx__ValueInfoProto *export_value_info(px_export_ctx *c, const px_value *v) {
    Onnx__ValueInfoProto *vi = px_export_alloc(c, sizeof *vi);
    if (!vi) return NULL;
    onnx__value_info_proto__init(vi);
    vi->name = borrow(v->name);
    vi->doc_string = borrow_nonempty(v->doc);
    if (v->dtype != PX_UNDEFINED && !(vi->type = export_type(c, v->dtype, &v->shape))) return NULL;
    return vi;
}

/* ---- tensors ---- */

static int tensor_header(px_export_ctx *c, const px_tensor *t, const char *what,
                         Onnx__TensorProto *tp, int64_t *numel) {
    if (!t) return px_error(c->d, "ONNX export: %s has no tensor", what);
    if (t->dtype == PX_UNDEFINED || !px_dtype_valid((int)t->dtype))
        return px_error(c->d, "ONNX export: %s has invalid dtype %d", what, (int)t->dtype);
    *numel = px_shape_numel(&t->shape);
    if (*numel < 0) {
        char buf[128];
        return px_error(c->d, "ONNX export: %s has non-static shape %s", what,
                        px_shape_str(&t->shape, buf, sizeof buf));
    }
    onnx__tensor_proto__init(tp);
    tp->has_data_type = 1;
    tp->data_type = (int32_t)t->dtype;
    if (t->shape.rank > 0) {
        tp->dims = ALLOC_ARRAY(c, t->shape.rank, int64_t);
        if (!tp->dims) return -1;
        tp->n_dims = (size_t)t->shape.rank;
        memcpy(tp->dims, t->shape.dims, (size_t)t->shape.rank * sizeof(int64_t));
    }
    return 0;
}

/* Contents go to raw_data (little-endian, as px_tensor already holds them),
 * except STRING, which ONNX only allows in string_data. */
static Onnx__TensorProto *export_tensor(px_export_ctx *c, const px_tensor *t, const char *name,
                                        const char *doc, const char *what) {
    Onnx__TensorProto *tp = px_export_alloc(c, sizeof *tp);
    int64_t numel = 0;
    if (!tp || tensor_header(c, t, what, tp, &numel)) return NULL;
    tp->name = borrow_nonempty(name);
    tp->doc_string = borrow_nonempty(doc);
    if (t->dtype == PX_STRING) {
        if (numel > 0) {
            const px_bytes *s = t->data;
            tp->string_data = ALLOC_ARRAY(c, numel, ProtobufCBinaryData);
            if (!tp->string_data) return NULL;
            tp->n_string_data = (size_t)numel;
            for (int64_t i = 0; i < numel; i++) {
                tp->string_data[i].len = s[i].len;
                tp->string_data[i].data = (uint8_t *)s[i].data;
            }
        }
        return tp;
    }
    size_t expect = (size_t)numel * px_dtype_size(t->dtype);
    if (t->nbytes != expect || (expect && !t->data)) {
        px_error(c->d, "ONNX export: %s holds %zu bytes, expected %zu for %lld %s elements", what,
                 t->nbytes, expect, (long long)numel, px_dtype_name(t->dtype));
        return NULL;
    }
    tp->has_raw_data = 1;
    tp->raw_data.len = expect;
    tp->raw_data.data = (uint8_t *)t->data;
    if (expect && record_blob(c, tp)) return NULL;
    return tp;
}

static int element_is_nonzero(const px_tensor *t, int64_t i, size_t esize) {
    if (t->dtype == PX_STRING) return ((const px_bytes *)t->data)[i].len > 0;
    const uint8_t *p = (const uint8_t *)t->data + (size_t)i * esize;
    for (size_t k = 0; k < esize; k++)
        if (p[k]) return 1;
    return 0;
}

/* The IR keeps sparse attributes densified. We write back a real
 * SparseTensorProto holding every element whose bits are not all zero (so
 * -0.0 and NaN payloads survive), with linearized int64 indices of shape
 * [NNZ] in increasing order: densifying it gives back the same bits. */
static Onnx__SparseTensorProto *export_sparse(px_export_ctx *c, const px_tensor *t,
                                              const char *what) {
    Onnx__SparseTensorProto *sp = px_export_alloc(c, sizeof *sp);
    Onnx__TensorProto *values = px_export_alloc(c, sizeof *values);
    Onnx__TensorProto *indices = px_export_alloc(c, sizeof *indices);
    int64_t numel = 0;
    if (!sp || !values || !indices || tensor_header(c, t, what, values, &numel)) return NULL;
    onnx__sparse_tensor_proto__init(sp);
    size_t esize = t->dtype == PX_STRING ? 0 : px_dtype_size(t->dtype);
    if (t->dtype != PX_STRING && t->nbytes != (size_t)numel * esize) {
        px_error(c->d, "ONNX export: %s holds %zu bytes, expected %zu", what, t->nbytes,
                 (size_t)numel * esize);
        return NULL;
    }
    int64_t nnz = 0;
    for (int64_t i = 0; i < numel; i++) nnz += element_is_nonzero(t, i, esize);

    /* the dense shape moves from values to the sparse tensor itself */
    sp->n_dims = values->n_dims;
    sp->dims = values->dims;
    values->n_dims = 1;
    values->dims = ALLOC_ARRAY(c, 1, int64_t);
    onnx__tensor_proto__init(indices);
    indices->has_data_type = 1;
    indices->data_type = PX_I64;
    indices->n_dims = 1;
    indices->dims = ALLOC_ARRAY(c, 1, int64_t);
    uint8_t *idx = ALLOC_ARRAY(c, nnz * 8, uint8_t);
    if (!values->dims || !indices->dims || !idx) return NULL;
    values->dims[0] = indices->dims[0] = nnz;
    indices->has_raw_data = 1;
    indices->raw_data.len = (size_t)nnz * 8;
    indices->raw_data.data = idx;

    if (t->dtype == PX_STRING) {
        values->string_data = ALLOC_ARRAY(c, nnz, ProtobufCBinaryData);
        if (!values->string_data) return NULL;
        values->n_string_data = (size_t)nnz;
    } else {
        values->has_raw_data = 1;
        values->raw_data.len = (size_t)nnz * esize;
        values->raw_data.data = ALLOC_ARRAY(c, nnz * esize, uint8_t);
        if (!values->raw_data.data) return NULL;
    }
    int64_t k = 0;
    for (int64_t i = 0; i < numel; i++) {
        if (!element_is_nonzero(t, i, esize)) continue;
        for (int b = 0; b < 8; b++) idx[k * 8 + b] = (uint8_t)((uint64_t)i >> (8 * b));
        if (t->dtype == PX_STRING) {
            const px_bytes *s = &((const px_bytes *)t->data)[i];
            values->string_data[k].len = s->len;
            values->string_data[k].data = (uint8_t *)s->data;
        } else {
            memcpy(values->raw_data.data + (size_t)k * esize,
                   (const uint8_t *)t->data + (size_t)i * esize, esize);
        }
        k++;
    }
    if (values->raw_data.len && record_blob(c, values)) return NULL;
    if (indices->raw_data.len && record_blob(c, indices)) return NULL;
    sp->values = values;
    sp->indices = indices;
    return sp;
}

/* ---- attributes, nodes, graphs ---- */

static Onnx__GraphProto *export_graph(px_export_ctx *c, const px_graph *g);

/* 1 unless a list kind has a count but no array behind it. */
static int list_storage_present(const px_attr *a) {
    switch (a->kind) {
    case PX_ATTR_FLOATS: return a->floats != NULL;
    case PX_ATTR_INTS: return a->ints != NULL;
    case PX_ATTR_STRINGS: return a->strings != NULL;
    case PX_ATTR_TENSORS:
    case PX_ATTR_SPARSE_TENSORS: return a->tensors != NULL;
    case PX_ATTR_GRAPHS: return a->graphs != NULL;
    case PX_ATTR_TYPE_PROTO: return a->tp_shape != NULL;
    case PX_ATTR_TYPE_PROTOS: return a->tp_dtypes && a->tp_shapes;
    default: return 1;
    }
}

static int export_attr(px_export_ctx *c, const px_node *n, const px_attr *a,
                       Onnx__AttributeProto **out) {
    char label[256], what[512];
    px_node_label(n, label, sizeof label);
    snprintf(what, sizeof what, "attribute '%s' of node %s", a->name ? a->name : "", label);
    if (!a->name || !a->name[0]) return px_error(c->d, "ONNX export: %s has no name", what);

    Onnx__AttributeProto *ap = px_export_alloc(c, sizeof *ap);
    if (!ap) return -1;
    onnx__attribute_proto__init(ap);
    ap->name = borrow(a->name);
    ap->ref_attr_name = borrow_nonempty(a->ref_attr_name);
    ap->has_type = 1;
    ap->type = (Onnx__AttributeProto__AttributeType)a->kind;
    int count = a->n;
    if (count < 0) return px_error(c->d, "ONNX export: %s has %d elements", what, count);
    if (count > 0 && !list_storage_present(a))
        return px_error(c->d, "ONNX export: %s claims %d elements but holds none", what, count);

    switch (a->kind) {
    case PX_ATTR_FLOAT:
        ap->has_f = 1;
        ap->f = a->f;
        break;
    case PX_ATTR_INT:
        ap->has_i = 1;
        ap->i = a->i;
        break;
    case PX_ATTR_STRING:
        ap->has_s = 1;
        ap->s.len = a->s.len;
        ap->s.data = (uint8_t *)a->s.data;
        break;
    case PX_ATTR_TENSOR:
        if (!(ap->t = export_tensor(c, a->t, NULL, NULL, what))) return -1;
        break;
    case PX_ATTR_SPARSE_TENSOR:
        if (!(ap->sparse_tensor = export_sparse(c, a->t, what))) return -1;
        break;
    case PX_ATTR_GRAPH:
        if (!a->g) return px_error(c->d, "ONNX export: %s has no graph", what);
        if (!(ap->g = export_graph(c, a->g))) return -1;
        break;
    case PX_ATTR_TYPE_PROTO:
        if (!(ap->tp = export_type(c, a->tp_dtype, a->tp_shape))) return -1;
        break;
    case PX_ATTR_FLOATS:
        ap->n_floats = (size_t)count;
        ap->floats = (float *)a->floats;
        break;
    case PX_ATTR_INTS:
        ap->n_ints = (size_t)count;
        ap->ints = (int64_t *)a->ints;
        break;
    case PX_ATTR_STRINGS:
        ap->strings = ALLOC_ARRAY(c, count, ProtobufCBinaryData);
        if (!ap->strings) return -1;
        ap->n_strings = (size_t)count;
        for (int i = 0; i < count; i++) {
            ap->strings[i].len = a->strings[i].len;
            ap->strings[i].data = (uint8_t *)a->strings[i].data;
        }
        break;
    case PX_ATTR_TENSORS:
        ap->tensors = ALLOC_ARRAY(c, count, Onnx__TensorProto *);
        if (!ap->tensors) return -1;
        ap->n_tensors = (size_t)count;
        for (int i = 0; i < count; i++)
            if (!(ap->tensors[i] = export_tensor(c, a->tensors[i], NULL, NULL, what))) return -1;
        break;
    case PX_ATTR_SPARSE_TENSORS:
        ap->sparse_tensors = ALLOC_ARRAY(c, count, Onnx__SparseTensorProto *);
        if (!ap->sparse_tensors) return -1;
        ap->n_sparse_tensors = (size_t)count;
        for (int i = 0; i < count; i++)
            if (!(ap->sparse_tensors[i] = export_sparse(c, a->tensors[i], what))) return -1;
        break;
    case PX_ATTR_GRAPHS:
        ap->graphs = ALLOC_ARRAY(c, count, Onnx__GraphProto *);
        if (!ap->graphs) return -1;
        ap->n_graphs = (size_t)count;
        for (int i = 0; i < count; i++) {
            if (!a->graphs[i])
                return px_error(c->d, "ONNX export: %s: graph %d is missing", what, i);
            if (!(ap->graphs[i] = export_graph(c, a->graphs[i]))) return -1;
        }
        break;
    case PX_ATTR_TYPE_PROTOS:
        ap->type_protos = ALLOC_ARRAY(c, count, Onnx__TypeProto *);
        if (!ap->type_protos) return -1;
        ap->n_type_protos = (size_t)count;
        for (int i = 0; i < count; i++)
            if (!(ap->type_protos[i] = export_type(c, a->tp_dtypes[i], &a->tp_shapes[i])))
                return -1;
        break;
    default:
        return px_error(c->d, "ONNX export: %s has kind %d, which ONNX cannot represent", what,
                        (int)a->kind);
    }
    *out = ap;
    return 0;
}

/* Omitted optional inputs/outputs (NULL) become "" as ONNX spells them. */
static char **export_names(px_export_ctx *c, int n, px_value *const *values) {
    char **names = ALLOC_ARRAY(c, n, char *);
    if (!names) return NULL;
    for (int i = 0; i < n; i++) names[i] = values[i] ? borrow(values[i]->name) : borrow("");
    return names;
}

static Onnx__NodeProto *export_node(px_export_ctx *c, const px_node *n) {
    Onnx__NodeProto *np = px_export_alloc(c, sizeof *np);
    if (!np) return NULL;
    onnx__node_proto__init(np);
    if (!n->op_type || !n->op_type[0]) {
        px_error(c->d, "ONNX export: node '%s' has no op_type", n->name ? n->name : "");
        return NULL;
    }
    np->op_type = borrow(n->op_type);
    np->name = borrow_nonempty(n->name);
    np->domain = borrow_nonempty(n->domain);
    np->doc_string = borrow_nonempty(n->doc);
    if (!(np->input = export_names(c, n->n_inputs, n->inputs))) return NULL;
    np->n_input = (size_t)n->n_inputs;
    if (!(np->output = export_names(c, n->n_outputs, n->outputs))) return NULL;
    np->n_output = (size_t)n->n_outputs;
    if (n->n_attrs > 0) {
        np->attribute = ALLOC_ARRAY(c, n->n_attrs, Onnx__AttributeProto *);
        if (!np->attribute) return NULL;
        for (int i = 0; i < n->n_attrs; i++)
            if (export_attr(c, n, &n->attrs[i], &np->attribute[np->n_attribute++])) return NULL;
    }
    return np;
}

static int value_index_ok(const px_graph *g, const px_value *v) {
    return v->id >= 0 && v->id < g->n_values && g->values[v->id] == v;
}

static Onnx__TensorProto *export_initializer(px_export_ctx *c, const px_value *v) {
    char what[300];
    snprintf(what, sizeof what, "initializer '%s'", v->name);
    return export_tensor(c, v->data, v->name, v->doc, what);
}

/* A CONSTANT value (folded by a pass, never trained) becomes a Constant node,
 * not an initializer: re-imported, an initializer would read as a weight. */
static Onnx__NodeProto *export_constant_node(px_export_ctx *c, const px_value *v) {
    char what[300];
    snprintf(what, sizeof what, "constant '%s'", v->name);
    Onnx__NodeProto *np = px_export_alloc(c, sizeof *np);
    Onnx__AttributeProto *ap = px_export_alloc(c, sizeof *ap);
    char **out = ALLOC_ARRAY(c, 1, char *);
    Onnx__AttributeProto **attrs = ALLOC_ARRAY(c, 1, Onnx__AttributeProto *);
    if (!np || !ap || !out || !attrs) return NULL;
    onnx__node_proto__init(np);
    onnx__attribute_proto__init(ap);
    np->op_type = borrow("Constant");
    out[0] = borrow(v->name);
    np->output = out;
    np->n_output = 1;
    ap->name = borrow("value");
    ap->has_type = 1;
    ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (!(ap->t = export_tensor(c, v->data, NULL, NULL, what))) return NULL;
    attrs[0] = ap;
    np->attribute = attrs;
    np->n_attribute = 1;
    return np;
}

/* Initializers: g->inits in model order (IR < 4 requires every initializer to
 * be a graph input too). CONSTANT values that are still used come first in the
 * node list as Constant nodes. */
static Onnx__GraphProto *export_graph(px_export_ctx *c, const px_graph *g) {
    Onnx__GraphProto *gp = px_export_alloc(c, sizeof *gp);
    unsigned char *exported = px_export_alloc(c, (size_t)g->n_values + 1);
    if (!gp || !exported) return NULL;
    onnx__graph_proto__init(gp);
    /* the checker insists on a graph name */
    gp->name = borrow(g->name && g->name[0] ? g->name : "graph");
    gp->doc_string = borrow_nonempty(g->doc);
    const int all_inits_are_inputs = c->ir_version < 4;

    size_t max_vals = (size_t)g->n_values + (size_t)g->n_inputs + (size_t)g->n_inits + 1;
    gp->input = ALLOC_ARRAY(c, max_vals, Onnx__ValueInfoProto *);
    gp->output = ALLOC_ARRAY(c, g->n_outputs + 1, Onnx__ValueInfoProto *);
    gp->initializer = ALLOC_ARRAY(c, max_vals, Onnx__TensorProto *);
    gp->value_info = ALLOC_ARRAY(c, g->n_values + 1, Onnx__ValueInfoProto *);
    gp->node = ALLOC_ARRAY(c, (size_t)g->n_nodes + (size_t)g->n_values + 1, Onnx__NodeProto *);
    if (!gp->input || !gp->output || !gp->initializer || !gp->value_info || !gp->node) return NULL;

    for (int i = 0; i < g->n_inputs; i++)
        if (!(gp->input[gp->n_input++] = export_value_info(c, g->inputs[i]))) return NULL;

    for (int i = 0; i < g->n_inits + g->n_values; i++) {
        const px_value *v = i < g->n_inits ? g->inits[i] : g->values[i - g->n_inits];
        if (v->kind != PX_VALUE_INITIALIZER && v->kind != PX_VALUE_CONSTANT) continue;
        if (!value_index_ok(g, v)) {
            px_error(c->d, "ONNX export: value '%s' has a stale id %d in graph '%s'", v->name,
                     v->id, g->name ? g->name : "");
            return NULL;
        }
        if (exported[v->id]) continue;
        if (v->kind == PX_VALUE_CONSTANT && v->n_uses == 0 && !v->is_output) continue; /* dead */
        exported[v->id] = 1;
        if (v->kind == PX_VALUE_CONSTANT) {
            if (!(gp->node[gp->n_node++] = export_constant_node(c, v))) return NULL;
            if (!v->is_output && !(gp->value_info[gp->n_value_info++] = export_value_info(c, v)))
                return NULL;
            continue;
        }
        if (!v->omit_in_export &&
            !(gp->initializer[gp->n_initializer++] = export_initializer(c, v)))
            return NULL;
        if ((v->also_input || all_inits_are_inputs) &&
            !(gp->input[gp->n_input++] = export_value_info(c, v)))
            return NULL;
    }

    for (int i = 0; i < g->n_outputs; i++)
        if (!(gp->output[gp->n_output++] = export_value_info(c, g->outputs[i]))) return NULL;

    for (int i = 0; i < g->n_values; i++) {
        const px_value *v = g->values[i];
        if (v->kind != PX_VALUE_INTERMEDIATE || v->is_output || v->dtype == PX_UNDEFINED) continue;
        if (!v->producer || v->producer->dead) continue;
        if (!(gp->value_info[gp->n_value_info++] = export_value_info(c, v))) return NULL;
    }

    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i]->dead) continue;
        if (!(gp->node[gp->n_node++] = export_node(c, g->nodes[i]))) return NULL;
    }
    return gp;
}

/* ---- model ---- */

typedef struct domain_set {
    const char *names[64];
    int n;
} domain_set;

static const char *canonical_domain(const char *d) {
    return !d || strcmp(d, "ai.onnx") == 0 ? "" : d;
}

static void add_domain(domain_set *s, const char *d) {
    d = canonical_domain(d);
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->names[i], d) == 0) return;
    if (s->n < (int)(sizeof s->names / sizeof s->names[0])) s->names[s->n++] = d;
}

static void collect_domains(const px_graph *g, domain_set *s) {
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        if (n->dead) continue;
        add_domain(s, n->domain);
        for (int k = 0; k < n->n_attrs; k++) {
            const px_attr *a = &n->attrs[k];
            if (a->kind == PX_ATTR_GRAPH && a->g) collect_domains(a->g, s);
            if (a->kind == PX_ATTR_GRAPHS)
                for (int j = 0; j < a->n; j++)
                    if (a->graphs[j]) collect_domains(a->graphs[j], s);
        }
    }
}

/* Versions for domains a pass introduced without recording an opset. */
static int64_t default_opset(const char *domain) {
    if (!domain[0]) return DEFAULT_ONNX_OPSET;
    return 1; /* ai.onnx.preview.training, ai.parallax and anything else */
}

static int export_opsets(px_export_ctx *c, const px_graph *g, Onnx__ModelProto *m) {
    domain_set used = {.n = 0};
    add_domain(&used, ""); /* IR >= 3 requires an ai.onnx entry */
    collect_domains(g, &used);
    m->opset_import = ALLOC_ARRAY(c, g->n_opsets + used.n, Onnx__OperatorSetIdProto *);
    if (!m->opset_import) return -1;
    for (int i = 0; i < g->n_opsets + used.n; i++) {
        const char *domain;
        int64_t version;
        if (i < g->n_opsets) {
            domain = g->opsets[i].domain ? g->opsets[i].domain : "";
            version = g->opsets[i].version;
        } else {
            domain = used.names[i - g->n_opsets];
            if (px_graph_opset(g, domain) > 0) continue;
            version = default_opset(domain);
        }
        Onnx__OperatorSetIdProto *op = px_export_alloc(c, sizeof *op);
        if (!op) return -1;
        onnx__operator_set_id_proto__init(op);
        op->domain = borrow(domain);
        op->has_version = 1;
        op->version = version;
        m->opset_import[m->n_opset_import++] = op;
    }
    return 0;
}

static int export_metadata(px_export_ctx *c, const px_graph *g, Onnx__ModelProto *m) {
    if (g->n_meta <= 0) return 0;
    m->metadata_props = ALLOC_ARRAY(c, g->n_meta, Onnx__StringStringEntryProto *);
    if (!m->metadata_props) return -1;
    for (int i = 0; i < g->n_meta; i++) {
        Onnx__StringStringEntryProto *kv = px_export_alloc(c, sizeof *kv);
        if (!kv) return -1;
        onnx__string_string_entry_proto__init(kv);
        kv->key = borrow(g->meta[i].key ? g->meta[i].key : "");
        kv->value = borrow(g->meta[i].value ? g->meta[i].value : "");
        m->metadata_props[m->n_metadata_props++] = kv;
    }
    return 0;
}

#ifndef PX_VERSION
#define PX_VERSION "0.1"
#endif

Onnx__ModelProto *px_export_build_model(px_export_ctx *c, const px_graph *g) {
    Onnx__ModelProto *m = px_export_alloc(c, sizeof *m);
    if (!m) return NULL;
    onnx__model_proto__init(m);
    c->ir_version = g->ir_version > 0 ? g->ir_version : DEFAULT_IR_VERSION;
    m->has_ir_version = 1;
    m->ir_version = c->ir_version;
    m->producer_name = borrow("parallax");
    m->producer_version = borrow(PX_VERSION);
    m->domain = borrow_nonempty(g->model_domain);
    if (g->model_version) {
        m->has_model_version = 1;
        m->model_version = g->model_version;
    }
    m->doc_string = borrow_nonempty(g->model_doc);
    if (export_opsets(c, g, m) || export_metadata(c, g, m)) return NULL;
    if (!(m->graph = export_graph(c, g))) return NULL;
    return m;
}
