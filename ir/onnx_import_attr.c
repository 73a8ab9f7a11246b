/* ONNX AttributeProto -> px_attr, every attribute kind. Subgraph attributes
 * are checked and sized here but their graphs are imported by the caller
 * (onnx_import_graph.c), so this file never calls back into the graph
 * importer. */
#include "onnx_import_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) abort(); /* same policy as the IR's own allocations */
    return p;
}

static void copy_bytes(px_bytes *dst, const ProtobufCBinaryData *src) {
    dst->len = src->len;
    dst->data = xcalloc(src->len + 1, 1);
    if (src->len) memcpy(dst->data, src->data, src->len);
}

/* What the attribute holds when its 'type' is unset (very old exporters):
 * like onnx's checker, exactly one value field must be present. */
static px_attr_kind infer_kind(const Onnx__AttributeProto *a, int *n_present) {
    px_attr_kind k = PX_ATTR_UNDEFINED;
    int n = 0;
#define HAS(cond, kind)                                                                            \
    if (cond) {                                                                                    \
        k = kind;                                                                                  \
        n++;                                                                                       \
    }
    HAS(a->has_f, PX_ATTR_FLOAT)
    HAS(a->has_i, PX_ATTR_INT)
    HAS(a->has_s, PX_ATTR_STRING)
    HAS(a->t != NULL, PX_ATTR_TENSOR)
    HAS(a->g != NULL, PX_ATTR_GRAPH)
    HAS(a->sparse_tensor != NULL, PX_ATTR_SPARSE_TENSOR)
    HAS(a->tp != NULL, PX_ATTR_TYPE_PROTO)
    HAS(a->n_floats > 0, PX_ATTR_FLOATS)
    HAS(a->n_ints > 0, PX_ATTR_INTS)
    HAS(a->n_strings > 0, PX_ATTR_STRINGS)
    HAS(a->n_tensors > 0, PX_ATTR_TENSORS)
    HAS(a->n_graphs > 0, PX_ATTR_GRAPHS)
    HAS(a->n_sparse_tensors > 0, PX_ATTR_SPARSE_TENSORS)
    HAS(a->n_type_protos > 0, PX_ATTR_TYPE_PROTOS)
#undef HAS
    *n_present = n;
    return k;
}

static size_t list_len(const Onnx__AttributeProto *a, px_attr_kind k) {
    switch (k) {
    case PX_ATTR_FLOATS: return a->n_floats;
    case PX_ATTR_INTS: return a->n_ints;
    case PX_ATTR_STRINGS: return a->n_strings;
    case PX_ATTR_TENSORS: return a->n_tensors;
    case PX_ATTR_GRAPHS: return a->n_graphs;
    case PX_ATTR_SPARSE_TENSORS: return a->n_sparse_tensors;
    case PX_ATTR_TYPE_PROTOS: return a->n_type_protos;
    default: return 0;
    }
}

/* Fills the already-added attribute dst from a (kind k), leaving GRAPH and
 * GRAPHS entries NULL. The node owns dst, so whatever is attached before a
 * failure is freed with the graph. */
static int fill_attr(px_import_ctx *c, px_attr *dst, const Onnx__AttributeProto *a, px_attr_kind k,
                     const char *where) {
    size_t n = list_len(a, k);
    if (n > INT_MAX) return px_error(c->d, "%s: list of %zu entries is too long", where, n);
    dst->n = (int)n;
    switch (k) {
    case PX_ATTR_FLOAT: dst->f = a->f; return 0;
    case PX_ATTR_INT: dst->i = a->i; return 0;
    case PX_ATTR_STRING: copy_bytes(&dst->s, &a->s); return 0;
    case PX_ATTR_TENSOR:
        if (!a->t) return px_error(c->d, "%s has type TENSOR but no tensor", where);
        dst->t = pxi_tensor_from_proto(c, a->t, where);
        return dst->t ? 0 : -1;
    case PX_ATTR_SPARSE_TENSOR:
        if (!a->sparse_tensor)
            return px_error(c->d, "%s has type SPARSE_TENSOR but no sparse tensor", where);
        dst->t = pxi_tensor_from_sparse(c, a->sparse_tensor, where);
        return dst->t ? 0 : -1;
    case PX_ATTR_GRAPH:
        if (!a->g) return px_error(c->d, "%s has type GRAPH but no graph", where);
        return 0;
    case PX_ATTR_TYPE_PROTO: {
        int is_tensor;
        if (!a->tp) return px_error(c->d, "%s has type TYPE_PROTO but no type", where);
        dst->tp_shape = xcalloc(1, sizeof *dst->tp_shape);
        return pxi_type_from_proto(c, a->tp, where, &dst->tp_dtype, dst->tp_shape, &is_tensor);
    }
    case PX_ATTR_FLOATS:
        dst->floats = xcalloc(n, sizeof *dst->floats);
        if (n) memcpy(dst->floats, a->floats, n * sizeof *dst->floats);
        return 0;
    case PX_ATTR_INTS:
        dst->ints = xcalloc(n, sizeof *dst->ints);
        if (n) memcpy(dst->ints, a->ints, n * sizeof *dst->ints);
        return 0;
    case PX_ATTR_STRINGS:
        dst->strings = xcalloc(n, sizeof *dst->strings);
        for (size_t i = 0; i < n; i++) copy_bytes(&dst->strings[i], &a->strings[i]);
        return 0;
    case PX_ATTR_TENSORS:
    case PX_ATTR_SPARSE_TENSORS:
        dst->tensors = xcalloc(n, sizeof *dst->tensors);
        for (size_t i = 0; i < n; i++) {
            dst->tensors[i] = k == PX_ATTR_TENSORS
                                  ? pxi_tensor_from_proto(c, a->tensors[i], where)
                                  : pxi_tensor_from_sparse(c, a->sparse_tensors[i], where);
            if (!dst->tensors[i]) return -1;
        }
        return 0;
    case PX_ATTR_GRAPHS: dst->graphs = xcalloc(n, sizeof *dst->graphs); return 0;
    case PX_ATTR_TYPE_PROTOS:
        dst->tp_dtypes = xcalloc(n, sizeof *dst->tp_dtypes);
        dst->tp_shapes = xcalloc(n, sizeof *dst->tp_shapes);
        for (size_t i = 0; i < n; i++) {
            int is_tensor;
            if (pxi_type_from_proto(c, a->type_protos[i], where, &dst->tp_dtypes[i],
                                    &dst->tp_shapes[i], &is_tensor))
                return -1;
        }
        return 0;
    default: return px_error(c->d, "%s has unknown attribute type %d", where, (int)k);
    }
}

px_attr *pxi_import_attr(px_import_ctx *c, px_node *n, const Onnx__AttributeProto *a,
                         const char *label) {
    char where[512];
    if (!a->name || !*a->name) {
        px_error(c->d, "node %s has an attribute without a name", label);
        return NULL;
    }
    snprintf(where, sizeof where, "attribute '%s' of node %s", a->name, label);
    if (px_node_attr(n, a->name)) {
        px_error(c->d, "%s is given twice", where);
        return NULL;
    }
    px_attr_kind k;
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED) {
        k = (px_attr_kind)a->type;
        if (k < PX_ATTR_FLOAT || k > PX_ATTR_TYPE_PROTOS) {
            px_error(c->d, "%s has unknown type %d", where, (int)a->type);
            return NULL;
        }
    } else {
        int present;
        k = infer_kind(a, &present);
        if (present != 1) {
            px_error(c->d,
                     present == 0 ? "%s has neither a type nor a value"
                                  : "%s has no type and more than one value field",
                     where);
            return NULL;
        }
    }
    px_attr *dst = px_node_add_attr(n, a->name, k);
    dst->ref_attr_name =
        pxi_strdup(a->ref_attr_name && *a->ref_attr_name ? a->ref_attr_name : NULL);
    return fill_attr(c, dst, a, k, where) ? NULL : dst;
}
