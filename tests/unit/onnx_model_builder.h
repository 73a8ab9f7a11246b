/* Test helper: builds ONNX models in memory with the protobuf-c structs and
 * serializes them, so importer tests control every field byte for byte.
 * Everything is allocated from a small arena freed by mb_free_all(). */
#ifndef PX_TEST_ONNX_MODEL_BUILDER_H
#define PX_TEST_ONNX_MODEL_BUILDER_H

#include "onnx.pb-c.h"
#include "onnx_io.h"

#include <stdlib.h>
#include <string.h>

#define MB_LIST_CAP 32 /* entries per repeated field; plenty for tests */
/* Not every test file uses every helper. */
#define MB_FN static __attribute__((unused))

static void **mb_allocs;
static size_t mb_n_allocs, mb_cap_allocs;

MB_FN void *mb_alloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p) abort();
    if (mb_n_allocs == mb_cap_allocs) {
        mb_cap_allocs = mb_cap_allocs ? 2 * mb_cap_allocs : 64;
        mb_allocs = realloc(mb_allocs, mb_cap_allocs * sizeof *mb_allocs);
        if (!mb_allocs) abort();
    }
    mb_allocs[mb_n_allocs++] = p;
    return p;
}

MB_FN void mb_free_all(void) {
    for (size_t i = 0; i < mb_n_allocs; i++) free(mb_allocs[i]);
    free(mb_allocs);
    mb_allocs = NULL;
    mb_n_allocs = mb_cap_allocs = 0;
}

MB_FN char *mb_str(const char *s) {
    char *r = mb_alloc(strlen(s) + 1);
    strcpy(r, s);
    return r;
}

MB_FN void *mb_dup(const void *p, size_t n) {
    void *r = mb_alloc(n);
    if (n) memcpy(r, p, n);
    return r;
}

#define MB_LIST(type) ((type *)mb_alloc(MB_LIST_CAP * sizeof(type)))

/* A tensor with dims but no data: callers fill raw_data or a typed field. */
MB_FN Onnx__TensorProto *mb_tensor(const char *name, int dtype, int rank, const int64_t *dims) {
    Onnx__TensorProto *t = mb_alloc(sizeof *t);
    onnx__tensor_proto__init(t);
    if (name) t->name = mb_str(name);
    t->has_data_type = 1;
    t->data_type = dtype;
    t->n_dims = (size_t)rank;
    t->dims = mb_dup(dims, (size_t)rank * sizeof(int64_t));
    return t;
}

MB_FN void mb_raw(Onnx__TensorProto *t, const void *data, size_t len) {
    t->has_raw_data = 1;
    t->raw_data.len = len;
    t->raw_data.data = mb_dup(data, len);
}

/* 1-D float tensor with raw_data. */
MB_FN Onnx__TensorProto *mb_floats_tensor(const char *name, int n, const float *v) {
    int64_t dims[1] = {n};
    Onnx__TensorProto *t = mb_tensor(name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, dims);
    mb_raw(t, v, (size_t)n * sizeof(float));
    return t;
}

MB_FN void mb_external(Onnx__TensorProto *t, const char *location, const char *offset,
                       const char *length) {
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    t->external_data = MB_LIST(Onnx__StringStringEntryProto *);
    const char *keys[3] = {"location", "offset", "length"};
    const char *vals[3] = {location, offset, length};
    for (int i = 0; i < 3; i++) {
        if (!vals[i]) continue;
        Onnx__StringStringEntryProto *e = mb_alloc(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = mb_str(keys[i]);
        e->value = mb_str(vals[i]);
        t->external_data[t->n_external_data++] = e;
    }
}

/* A tensor type; dims[i] == -1 becomes dim_param syms[i] (or no value if
 * syms is NULL or syms[i] NULL). rank -1: no shape at all. */
MB_FN Onnx__TypeProto *mb_type(int elem, int rank, const int64_t *dims, const char *const *syms) {
    Onnx__TypeProto *tp = mb_alloc(sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = mb_alloc(sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    if (rank < 0) return tp;
    Onnx__TensorShapeProto *sp = mb_alloc(sizeof *sp);
    onnx__tensor_shape_proto__init(sp);
    sp->n_dim = (size_t)rank;
    sp->dim = mb_alloc((size_t)(rank ? rank : 1) * sizeof *sp->dim);
    for (int i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *dm = mb_alloc(sizeof *dm);
        onnx__tensor_shape_proto__dimension__init(dm);
        if (dims[i] >= 0) {
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dm->dim_value = dims[i];
        } else if (syms && syms[i]) {
            dm->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dm->dim_param = mb_str(syms[i]);
        }
        sp->dim[i] = dm;
    }
    tt->shape = sp;
    return tp;
}

MB_FN Onnx__ValueInfoProto *mb_vi(const char *name, Onnx__TypeProto *type) {
    Onnx__ValueInfoProto *vi = mb_alloc(sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = mb_str(name);
    vi->type = type;
    return vi;
}

/* 1-D float value info of length n. */
MB_FN Onnx__ValueInfoProto *mb_vi_f(const char *name, int64_t n) {
    return mb_vi(name, mb_type(ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, &n, NULL));
}

/* ins/outs: space-separated names; "-" is an omitted (empty) name. */
MB_FN size_t mb_split(const char *list, char ***out) {
    *out = MB_LIST(char *);
    size_t n = 0;
    char *copy = mb_str(list ? list : "");
    for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " "))
        (*out)[n++] = strcmp(tok, "-") == 0 ? mb_str("") : mb_str(tok);
    return n;
}

MB_FN Onnx__NodeProto *mb_node(const char *op, const char *domain, const char *name,
                               const char *ins, const char *outs) {
    Onnx__NodeProto *n = mb_alloc(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = mb_str(op);
    if (domain) n->domain = mb_str(domain);
    if (name) n->name = mb_str(name);
    n->n_input = mb_split(ins, &n->input);
    n->n_output = mb_split(outs, &n->output);
    n->attribute = MB_LIST(Onnx__AttributeProto *);
    return n;
}

MB_FN Onnx__AttributeProto *mb_attr(Onnx__NodeProto *n, const char *name, int type) {
    Onnx__AttributeProto *a = mb_alloc(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = mb_str(name);
    if (type) {
        a->has_type = 1;
        a->type = type;
    }
    n->attribute[n->n_attribute++] = a;
    return a;
}

MB_FN Onnx__GraphProto *mb_graph(const char *name) {
    Onnx__GraphProto *g = mb_alloc(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = mb_str(name);
    g->node = MB_LIST(Onnx__NodeProto *);
    g->initializer = MB_LIST(Onnx__TensorProto *);
    g->sparse_initializer = MB_LIST(Onnx__SparseTensorProto *);
    g->input = MB_LIST(Onnx__ValueInfoProto *);
    g->output = MB_LIST(Onnx__ValueInfoProto *);
    g->value_info = MB_LIST(Onnx__ValueInfoProto *);
    return g;
}

#define MB_PUSH(g, field, x) ((g)->field[(g)->n_##field++] = (x))

MB_FN Onnx__ModelProto *mb_model(Onnx__GraphProto *g, int64_t opset) {
    Onnx__ModelProto *m = mb_alloc(sizeof *m);
    onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = 8;
    m->graph = g;
    m->opset_import = MB_LIST(Onnx__OperatorSetIdProto *);
    m->metadata_props = MB_LIST(Onnx__StringStringEntryProto *);
    if (opset > 0) {
        Onnx__OperatorSetIdProto *o = mb_alloc(sizeof *o);
        onnx__operator_set_id_proto__init(o);
        o->domain = mb_str("");
        o->has_version = 1;
        o->version = opset;
        m->opset_import[m->n_opset_import++] = o;
    }
    return m;
}

/* Serializes m (arena-owned buffer). */
MB_FN void *mb_pack(const Onnx__ModelProto *m, size_t *len) {
    *len = onnx__model_proto__get_packed_size(m);
    void *buf = mb_alloc(*len);
    onnx__model_proto__pack(m, buf);
    return buf;
}

MB_FN px_graph *mb_load(const Onnx__ModelProto *m, const char *base_dir, int allow_unsupported,
                        px_diag *d) {
    size_t len;
    void *buf = mb_pack(m, &len);
    px_import_opts opts = {allow_unsupported};
    px_diag_init(d);
    return px_onnx_load_buffer(buf, len, base_dir, &opts, d);
}

#endif
