/* The graph IR: values (SSA, one producer, a use list), nodes with typed
 * attributes, graph inputs/outputs/initializers. Owns all its memory; holds
 * no pointers into protobuf messages. */
#ifndef PX_GRAPH_H
#define PX_GRAPH_H

#include "diag.h"
#include "op.h"
#include "tensor.h"

#include <stdarg.h>

typedef struct px_graph px_graph;
typedef struct px_node px_node;
typedef struct px_value px_value;

/* Attribute kinds: values equal ONNX AttributeProto.AttributeType. */
typedef enum px_attr_kind {
    PX_ATTR_UNDEFINED = 0,
    PX_ATTR_FLOAT = 1,
    PX_ATTR_INT = 2,
    PX_ATTR_STRING = 3,
    PX_ATTR_TENSOR = 4,
    PX_ATTR_GRAPH = 5,
    PX_ATTR_FLOATS = 6,
    PX_ATTR_INTS = 7,
    PX_ATTR_STRINGS = 8,
    PX_ATTR_TENSORS = 9,
    PX_ATTR_GRAPHS = 10,
    PX_ATTR_SPARSE_TENSOR = 11, /* stored densified in t (shape/dtype kept) */
    PX_ATTR_SPARSE_TENSORS = 12,
    PX_ATTR_TYPE_PROTO = 13, /* stored as tp_dtype + tp_shape (tensor types only) */
    PX_ATTR_TYPE_PROTOS = 14,
} px_attr_kind;

typedef struct px_attr {
    char *name;
    px_attr_kind kind;
    char *ref_attr_name; /* ONNX ref_attr_name (functions), usually NULL */
    float f;
    int64_t i;
    px_bytes s;
    px_tensor *t;
    px_graph *g;
    int n; /* element count of the list kinds below */
    float *floats;
    int64_t *ints;
    px_bytes *strings;
    px_tensor **tensors; /* TENSORS and SPARSE_TENSORS (densified) */
    px_graph **graphs;
    px_dtype tp_dtype; /* TYPE_PROTO: element type; TYPE_PROTOS: per entry in tp_dtypes */
    /* TYPE_PROTO: its shape (owned); a pointer, as a px_shape inline would
     * make every attribute of every node 2.7 times larger */
    px_shape *tp_shape;
    px_dtype *tp_dtypes;
    px_shape *tp_shapes;
} px_attr;

typedef enum px_value_kind {
    PX_VALUE_INTERMEDIATE = 0, /* produced by a node */
    PX_VALUE_INPUT = 1,        /* graph input fed at run time */
    PX_VALUE_INITIALIZER = 2,  /* graph initializer: a weight (trainable if float) */
    PX_VALUE_CONSTANT = 3,     /* a constant made by folding or a Constant node: never trained */
    PX_VALUE_OUTER = 4,        /* inside a subgraph: a value captured from an enclosing graph */
} px_value_kind;

typedef struct px_use {
    px_node *node;
    int index; /* which input of node */
} px_use;

struct px_value {
    char *name;     /* unique within its graph */
    px_dtype dtype; /* PX_UNDEFINED until known */
    px_shape shape;
    px_value_kind kind;
    px_tensor *data;    /* INITIALIZER / CONSTANT: the contents (owned) */
    int is_output;      /* listed in graph outputs */
    int also_input;     /* INITIALIZER that ONNX also listed in graph.input (default value) */
    int is_variable;    /* INITIALIZER trained by the step (set by passes/optimizer.c): its
                           storage is writable, not a constant */
    int omit_in_export; /* INITIALIZER left out of ONNX export (a training program's
                           save base: the runtime appends the trained values) */
    char *doc;          /* doc_string, may be NULL */
    px_node *producer;
    int producer_index;
    px_use *uses;
    int n_uses, cap_uses;
    int id; /* index in graph->values (stable until px_graph_compact) */
};

struct px_node {
    char *name;    /* may be empty but never NULL */
    px_op op;      /* PX_OP_UNKNOWN if op_type/domain not in the op table */
    char *op_type; /* as written in the model */
    char *domain;  /* "" for the default ONNX domain */
    char *doc;
    int n_inputs;
    px_value **inputs; /* NULL entries: omitted optional inputs */
    int n_outputs;
    px_value **outputs; /* NULL entries: omitted optional outputs */
    int n_attrs;
    px_attr *attrs;
    int id;
    int dead; /* removed; dropped by px_graph_compact */
};

typedef struct px_opset {
    char *domain; /* "" = ai.onnx */
    int64_t version;
} px_opset;

typedef struct px_kv {
    char *key, *value;
} px_kv;

struct px_graph {
    char *name;
    char *doc;
    px_graph *parent; /* enclosing graph of a subgraph, else NULL */
    int n_values, cap_values;
    px_value **values;
    int n_nodes, cap_nodes;
    px_node **nodes; /* kept in topological order by the passes */
    int n_inputs, cap_inputs;
    px_value **inputs; /* runtime inputs, in model order (initializers excluded) */
    int n_outputs, cap_outputs;
    px_value **outputs;
    int n_inits, cap_inits;
    px_value **inits; /* initializers in model order */
    /* Samples per step: the leading dim that every graph input shares, set
     * by px_pass_bind_shapes and read by the code generator; 0 when the
     * inputs share none (no inputs, a scalar input, leading dims that
     * disagree). */
    int64_t batch;
    /* model-level data (top-level graph only) */
    int64_t ir_version;
    int n_opsets;
    px_opset *opsets;
    char *producer_name, *producer_version, *model_domain, *model_doc;
    int64_t model_version;
    int n_meta;
    px_kv *meta;
    void *name_index; /* private: name -> value hash */
};

/* ---- graph ---- */
px_graph *px_graph_new(const char *name);
void px_graph_free(px_graph *g);
/* Opset version imported for a domain ("" or "ai.onnx" = default); 0 if none. */
int64_t px_graph_opset(const px_graph *g, const char *domain);
void px_graph_set_opset(px_graph *g, const char *domain, int64_t version);

/* ---- values ---- */
/* New value with a unique name (NULL if name taken; diag gets an error). */
px_value *px_graph_add_value(px_graph *g, const char *name, px_dtype dtype, const px_shape *shape,
                             px_diag *d);
/* New value named after base, made unique ("base", "base_1", ...). */
px_value *px_graph_new_value(px_graph *g, const char *base, px_dtype dtype, const px_shape *shape);
px_value *px_graph_find_value(const px_graph *g, const char *name);
void px_graph_add_input(px_graph *g, px_value *v);  /* sets kind INPUT */
void px_graph_add_output(px_graph *g, px_value *v); /* sets is_output */
/* Makes v an initializer (or constant) holding t (takes ownership). */
void px_graph_add_initializer(px_graph *g, px_value *v, px_tensor *t);
px_value *px_graph_add_constant(px_graph *g, const char *base, px_tensor *t);
/* Rewires every use of old (and old's slot in graph outputs) to new. */
void px_value_replace_uses(px_graph *g, px_value *old_v, px_value *new_v);
/* 1 if the value's contents are known at compile time (INITIALIZER or CONSTANT). */
int px_value_is_const(const px_value *v);

/* ---- nodes ---- */
/* Appends a node; inputs/outputs arrays are copied (entries may be NULL).
 * op is resolved from (op_type, domain) via the op table. */
px_node *px_graph_add_node(px_graph *g, const char *op_type, const char *domain, const char *name,
                           int n_inputs, px_value *const *inputs, int n_outputs,
                           px_value *const *outputs);
/* Inserts before position pos in g->nodes (else as px_graph_add_node). */
px_node *px_graph_insert_node(px_graph *g, int pos, const char *op_type, const char *domain,
                              const char *name, int n_inputs, px_value *const *inputs,
                              int n_outputs, px_value *const *outputs);
/* The position right after the last producer of ins[0..n_in) (0: none),
 * from the node ids, which px_graph_insert_node keeps equal to positions. */
int px_graph_after_producers(int n_in, px_value *const *ins);
void px_node_set_input(px_node *n, int i, px_value *v);
void px_node_add_input(px_node *n, px_value *v);
/* Marks node dead and unlinks it from its inputs' use lists and outputs' producer. */
void px_graph_remove_node(px_graph *g, px_node *n);
/* Drops dead nodes and values that are unused, unproduced and not graph I/O or
 * initializers; renumbers ids. */
void px_graph_compact(px_graph *g);
/* Reorders nodes topologically (stable). Error on a cycle. */
int px_graph_toposort(px_graph *g, px_diag *d);
/* Checks the invariants: unique names, one producer per value, use lists
 * match inputs, topological order, inputs defined, outputs produced. */
int px_graph_verify(const px_graph *g, px_diag *d);

/* ---- attributes ---- */
const px_attr *px_node_attr(const px_node *n, const char *name);
int64_t px_attr_int(const px_node *n, const char *name, int64_t dflt);
float px_attr_float(const px_node *n, const char *name, float dflt);
/* Returns a borrowed pointer; *len set (0 and dflt NULL if absent). */
const char *px_attr_string(const px_node *n, const char *name, const char *dflt);
const int64_t *px_attr_ints(const px_node *n, const char *name, int *count);
const float *px_attr_floats(const px_node *n, const char *name, int *count);
const px_tensor *px_attr_tensor(const px_node *n, const char *name);
/* Adds or replaces; the value is copied (tensors cloned, graphs taken over). */
px_attr *px_node_add_attr(px_node *n, const char *name, px_attr_kind kind);
void px_node_set_attr_int(px_node *n, const char *name, int64_t v);
void px_node_set_attr_float(px_node *n, const char *name, float v);
void px_node_set_attr_string(px_node *n, const char *name, const char *v);
void px_node_set_attr_ints(px_node *n, const char *name, int count, const int64_t *v);
void px_node_set_attr_floats(px_node *n, const char *name, int count, const float *v);
void px_node_set_attr_tensor(px_node *n, const char *name, px_tensor *t /* owned */);
void px_node_remove_attr(px_node *n, const char *name);
void px_attr_clear(px_attr *a); /* frees contents of one attribute */
/* Copies attribute a onto dst (int, float, string, ints, floats, tensor);
 * -1 with an error in d for another kind. */
int px_node_copy_attr(px_node *dst, const px_attr *a, px_diag *d);

/* Records "<prefix><node label>: <message>" in d and returns -1: the one
 * formatter behind the per-layer node-error helpers (shape inference,
 * autodiff, lowering). */
int px_node_verror(px_diag *d, const px_node *n, const char *prefix, const char *fmt, va_list ap);

/* Convenience: "name (op)" for messages, e.g. "'/fc1/Gemm' (Gemm)". */
const char *px_node_label(const px_node *n, char *buf, size_t cap);

#endif
