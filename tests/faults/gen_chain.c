/* Writes the large models of the linear-time checks of the fault catalogue:
 *   gen_chain N OUT.onnx [relu|add|sum]
 * relu (the default): a chain of N Relu nodes, v0 -> v1 -> ... -> vN;
 * add: a chain of N Adds, v(i+1) = Add(v(i), w(i)), each with its own
 *      float[4] initializer w(i);
 * sum: one Sum of the input and N initializers w(i).
 * add and sum end in loss = ReduceSum(vN) (keepdims 0), a scalar: they
 * also train. The input is float[N_batch, 4]. Built with protobuf-c directly so that a
 * million nodes take a second, not Python's minutes. */
#include "onnx.pb-c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xcalloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz);
    if (!p) {
        fprintf(stderr, "gen_chain: out of memory\n");
        exit(1);
    }
    return p;
}

static char *name_of(const char *prefix, long i) {
    char *s = xcalloc(24, 1);
    snprintf(s, 24, "%s%ld", prefix, i);
    return s;
}

static Onnx__ValueInfoProto *value_info(char *name) {
    Onnx__ValueInfoProto *vi = xcalloc(1, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = name;
    Onnx__TypeProto *tp = xcalloc(1, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = xcalloc(1, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    Onnx__TensorShapeProto *sp = xcalloc(1, sizeof *sp);
    onnx__tensor_shape_proto__init(sp);
    sp->n_dim = 2;
    sp->dim = xcalloc(2, sizeof *sp->dim);
    for (int i = 0; i < 2; i++) {
        sp->dim[i] = xcalloc(1, sizeof *sp->dim[i]);
        onnx__tensor_shape_proto__dimension__init(sp->dim[i]);
    }
    sp->dim[0]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    sp->dim[0]->dim_param = "N";
    sp->dim[1]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    sp->dim[1]->dim_value = 4;
    tt->shape = sp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    return vi;
}

/* float[4] initializer named name, holding i in every element. */
static Onnx__TensorProto *initializer(char *name, long i) {
    static int64_t dims[1] = {4};
    Onnx__TensorProto *t = xcalloc(1, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = name;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->n_dims = 1;
    t->dims = dims;
    t->n_float_data = 4;
    t->float_data = xcalloc(4, sizeof(float));
    for (int k = 0; k < 4; k++) t->float_data[k] = (float)(i % 7) * 0.125f;
    return t;
}

static Onnx__NodeProto *node(char *op, size_t n_in, char **in, char **out) {
    Onnx__NodeProto *nd = xcalloc(1, sizeof *nd);
    onnx__node_proto__init(nd);
    nd->op_type = op;
    nd->n_input = n_in;
    nd->input = in;
    nd->n_output = 1;
    nd->output = out;
    return nd;
}

int main(int argc, char **argv) {
    const char *kind = argc == 4 ? argv[3] : "relu";
    int add = !strcmp(kind, "add"), sum = !strcmp(kind, "sum");
    if (argc < 3 || argc > 4 || atol(argv[1]) < 1 || (!add && !sum && strcmp(kind, "relu"))) {
        fprintf(stderr, "usage: gen_chain N OUT.onnx [relu|add|sum]\n");
        return 2;
    }
    long n = atol(argv[1]);
    char **names = xcalloc((size_t)n + 1, sizeof *names);
    for (long i = 0; i <= n; i++) names[i] = name_of("v", i);
    Onnx__GraphProto g;
    onnx__graph_proto__init(&g);
    g.name = "chain";
    if (add || sum) {
        g.n_initializer = (size_t)n;
        g.initializer = xcalloc((size_t)n, sizeof *g.initializer);
        for (long i = 0; i < n; i++) g.initializer[i] = initializer(name_of("w", i), i);
    }
    char *out_name = names[n];
    if (sum) {
        /* Sum(v0, w0, ..., w(N-1)) -> vN */
        char **in = xcalloc((size_t)n + 1, sizeof *in);
        in[0] = names[0];
        for (long i = 0; i < n; i++) in[i + 1] = g.initializer[i]->name;
        g.n_node = 1;
        g.node = xcalloc(1, sizeof *g.node);
        g.node[0] = node("Sum", (size_t)n + 1, in, &names[n]);
    } else {
        g.n_node = (size_t)n;
        g.node = xcalloc((size_t)n, sizeof *g.node);
        for (long i = 0; i < n; i++) {
            char **in = xcalloc(2, sizeof *in);
            in[0] = names[i];
            if (add) in[1] = g.initializer[i]->name;
            g.node[i] = node(add ? "Add" : "Relu", add ? 2 : 1, in, &names[i + 1]);
        }
    }
    if (add || sum) {
        /* loss = ReduceSum(vN), keepdims 0 */
        Onnx__NodeProto **nodes = xcalloc(g.n_node + 1, sizeof *nodes);
        memcpy(nodes, g.node, g.n_node * sizeof *nodes);
        out_name = "loss";
        Onnx__NodeProto *r = node("ReduceSum", 1, &names[n], &out_name);
        Onnx__AttributeProto *keep = xcalloc(1, sizeof *keep);
        onnx__attribute_proto__init(keep);
        keep->name = "keepdims";
        keep->has_type = 1;
        keep->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        keep->has_i = 1;
        keep->i = 0;
        r->n_attribute = 1;
        r->attribute = xcalloc(1, sizeof *r->attribute);
        r->attribute[0] = keep;
        nodes[g.n_node++] = r;
        g.node = nodes;
    }
    Onnx__ValueInfoProto *in = value_info(names[0]), *out = value_info(out_name);
    if (add || sum) {
        /* a scalar: no shape dims */
        out->type->tensor_type->shape->n_dim = 0;
    }
    g.n_input = g.n_output = 1;
    g.input = &in;
    g.output = &out;
    Onnx__OperatorSetIdProto opset;
    onnx__operator_set_id_proto__init(&opset);
    opset.domain = "";
    opset.has_version = 1;
    opset.version = 17;
    Onnx__OperatorSetIdProto *opsets[1] = {&opset};
    Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.n_opset_import = 1;
    m.opset_import = opsets;
    m.graph = &g;
    size_t len = onnx__model_proto__get_packed_size(&m);
    unsigned char *buf = xcalloc(len, 1);
    onnx__model_proto__pack(&m, buf);
    FILE *f = fopen(argv[2], "wb");
    if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
        perror(argv[2]);
        return 1;
    }
    return 0; /* the process exit frees the rest */
}
