/* Writes a model that is one chain of N Relu nodes (v0 -> v1 -> ... -> vN,
 * input float[N_batch, 4]) for the linear-time checks of the fault
 * catalogue: usage gen_chain N OUT.onnx. Built with protobuf-c directly so
 * that a million nodes take a second, not Python's minutes. */
#include "onnx.pb-c.h"

#include <stdio.h>
#include <stdlib.h>

static void *xcalloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz);
    if (!p) {
        fprintf(stderr, "gen_chain: out of memory\n");
        exit(1);
    }
    return p;
}

static char *name_of(long i) {
    char *s = xcalloc(24, 1);
    snprintf(s, 24, "v%ld", i);
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

int main(int argc, char **argv) {
    if (argc != 3 || atol(argv[1]) < 1) {
        fprintf(stderr, "usage: gen_chain N OUT.onnx\n");
        return 2;
    }
    long n = atol(argv[1]);
    char **names = xcalloc((size_t)n + 1, sizeof *names);
    for (long i = 0; i <= n; i++) names[i] = name_of(i);
    Onnx__GraphProto g;
    onnx__graph_proto__init(&g);
    g.name = "chain";
    g.n_node = (size_t)n;
    g.node = xcalloc((size_t)n, sizeof *g.node);
    for (long i = 0; i < n; i++) {
        Onnx__NodeProto *nd = xcalloc(1, sizeof *nd);
        onnx__node_proto__init(nd);
        nd->op_type = "Relu";
        nd->n_input = nd->n_output = 1;
        nd->input = &names[i];
        nd->output = &names[i + 1];
        g.node[i] = nd;
    }
    Onnx__ValueInfoProto *in = value_info(names[0]), *out = value_info(names[n]);
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
