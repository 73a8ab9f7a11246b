/* --save-infer OUT.onnx --outputs NAME[,NAME...] (save_infer.h).
 *
 * The compiler records the original model in eval mode without the trained
 * initializers (px_program_desc.infer_base). Here, on the protobuf wire
 * format, its graph keeps only what the chosen outputs need: the nodes they
 * depend on (walking back from each output through the producers of the
 * inputs), the initializers and graph inputs those nodes read, the chosen
 * outputs (their ValueInfo from the graph's outputs or value_info, where
 * the compiler wrote every value's type and shape) and the value_info of
 * the kept values. Fields are copied as they are; the model's other fields
 * too, except the parallax.* metadata (a serving model is not trained). */
#include "save_infer.h"

#include "hash64.h"
#include "onnx_wire.h"
#include "px_kernel.h"
#include "save_onnx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    MODEL_GRAPH = 7,
    MODEL_METADATA = 14,
    GRAPH_NODE = 1,
    GRAPH_NAME = 2,
    GRAPH_INITIALIZER = 5,
    GRAPH_DOC = 10,
    GRAPH_INPUT = 11,
    GRAPH_OUTPUT = 12,
    GRAPH_VALUE_INFO = 13,
    NODE_INPUT = 1,
    NODE_OUTPUT = 2,
    NODE_NAME = 3,
    NODE_OP_TYPE = 4,
    NODE_ATTRIBUTE = 5,
    ATTR_G = 6,
    ATTR_GRAPHS = 11,
    TENSOR_NAME = 8,
    VALUE_INFO_NAME = 1,
    ENTRY_KEY = 1,
};

typedef struct node {
    px_wire_str whole, name, op;
    int first_in, n_in, first_out, n_out; /* into the names table */
    int subgraph;                         /* an attribute holds a graph: not pruned */
    int kept;
} node;

/* A named piece of the graph (initializer, input, output, value_info). */
typedef struct named {
    px_wire_str whole, name;
} named;

typedef struct graph {
    node *nodes;
    int n_nodes;
    px_wire_str *names; /* node inputs and outputs, node by node */
    int n_names;
    named *inits, *inputs, *outputs, *infos;
    int n_inits, n_inputs, n_outputs, n_infos;
    px_wire_str name, doc; /* graph name and doc_string fields (whole) */
} graph;

/* ---- a set of names: open addressing, values are ints ---- */

typedef struct name_map {
    px_wire_str *keys;
    int *vals;
    size_t cap;
} name_map;

static uint64_t hash_name(px_wire_str s) {
    return px_hash64(PX_HASH64_INIT, s.p, s.len);
}

static int same(px_wire_str a, px_wire_str b) {
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

static int map_init(name_map *m, size_t n) {
    m->cap = 16;
    while (m->cap < 2 * n + 2) m->cap *= 2;
    m->keys = calloc(m->cap, sizeof *m->keys);
    m->vals = calloc(m->cap, sizeof *m->vals);
    return m->keys && m->vals ? 0 : -1;
}

static void map_free(name_map *m) {
    free(m->keys);
    free(m->vals);
}

/* The slot of key (empty: keys[slot].p NULL). */
static size_t map_slot(const name_map *m, px_wire_str key) {
    size_t i = (size_t)hash_name(key) & (m->cap - 1);
    while (m->keys[i].p && !same(m->keys[i], key)) i = (i + 1) & (m->cap - 1);
    return i;
}

/* -1 when absent. */
static int map_get(const name_map *m, px_wire_str key) {
    size_t i = map_slot(m, key);
    return m->keys[i].p ? m->vals[i] : -1;
}

/* Adds key (the map was sized for every key it gets); keeps a value set. */
static void map_put(name_map *m, px_wire_str key, int val) {
    size_t i = map_slot(m, key);
    if (m->keys[i].p) return;
    m->keys[i] = key.p ? key : (px_wire_str){(const uint8_t *)"", 0};
    m->vals[i] = val;
}

/* ---- parsing ---- */

static int grow(void **arr, int n, int *cap, size_t elem) {
    if (n < *cap) return 0;
    int c = *cap ? 2 * *cap : 64;
    void *p = realloc(*arr, elem * (size_t)c);
    if (!p) return -1;
    *arr = p;
    *cap = c;
    return 0;
}

/* The string field `num` of a message (the first; empty when absent). */
static px_wire_str string_field(px_wire_str msg, int num) {
    size_t pos = 0;
    px_wire_field f;
    while (px_wire_next_field(msg, &pos, &f) == 1)
        if (f.num == num && f.wire == 2) return f.s;
    return (px_wire_str){(const uint8_t *)"", 0};
}

typedef struct caps {
    int nodes, names, inits, inputs, outputs, infos;
} caps;

static int add_named(named **arr, int *n, int *cap, px_wire_field f, int name_field) {
    if (grow((void **)arr, *n, cap, sizeof **arr)) return -1;
    (*arr)[(*n)++] = (named){f.whole, string_field(f.s, name_field)};
    return 0;
}

static int parse_node(graph *g, caps *c, px_wire_field nf) {
    if (grow((void **)&g->nodes, g->n_nodes, &c->nodes, sizeof *g->nodes)) return -1;
    node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->whole = nf.whole;
    /* inputs first, then outputs, into the names table */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0)
            n->first_in = g->n_names;
        else
            n->first_out = g->n_names;
        size_t pos = 0;
        px_wire_field f;
        int rc;
        while ((rc = px_wire_next_field(nf.s, &pos, &f)) == 1) {
            if (f.wire == 2 && f.num == (pass == 0 ? NODE_INPUT : NODE_OUTPUT)) {
                if (grow((void **)&g->names, g->n_names, &c->names, sizeof *g->names)) return -1;
                g->names[g->n_names++] = f.s;
            } else if (pass == 0 && f.wire == 2 && f.num == NODE_NAME) {
                n->name = f.s;
            } else if (pass == 0 && f.wire == 2 && f.num == NODE_OP_TYPE) {
                n->op = f.s;
            } else if (pass == 0 && f.wire == 2 && f.num == NODE_ATTRIBUTE) {
                size_t ap = 0;
                px_wire_field a;
                while (px_wire_next_field(f.s, &ap, &a) == 1)
                    if (a.num == ATTR_G || a.num == ATTR_GRAPHS) n->subgraph = 1;
            }
        }
        if (rc < 0) return -1;
        if (pass == 0)
            n->n_in = g->n_names - n->first_in;
        else
            n->n_out = g->n_names - n->first_out;
    }
    g->n_nodes++;
    return 0;
}

static int parse_graph(px_wire_str msg, graph *g) {
    caps c = {0};
    size_t pos = 0;
    px_wire_field f;
    int rc;
    while ((rc = px_wire_next_field(msg, &pos, &f)) == 1) {
        if (f.wire != 2) continue;
        int bad = 0;
        switch (f.num) {
        case GRAPH_NODE: bad = parse_node(g, &c, f); break;
        case GRAPH_NAME: g->name = f.whole; break;
        case GRAPH_DOC: g->doc = f.whole; break;
        case GRAPH_INITIALIZER:
            bad = add_named(&g->inits, &g->n_inits, &c.inits, f, TENSOR_NAME);
            break;
        case GRAPH_INPUT:
            bad = add_named(&g->inputs, &g->n_inputs, &c.inputs, f, VALUE_INFO_NAME);
            break;
        case GRAPH_OUTPUT:
            bad = add_named(&g->outputs, &g->n_outputs, &c.outputs, f, VALUE_INFO_NAME);
            break;
        case GRAPH_VALUE_INFO:
            bad = add_named(&g->infos, &g->n_infos, &c.infos, f, VALUE_INFO_NAME);
            break;
        default: break; /* sparse initializers, quantization annotations: none here */
        }
        if (bad) return -1;
    }
    return rc;
}

static void graph_free(graph *g) {
    free(g->nodes);
    free(g->names);
    free(g->inits);
    free(g->inputs);
    free(g->outputs);
    free(g->infos);
}

/* ---- the plan ---- */

static const named *find_named(const named *arr, int n, px_wire_str name) {
    for (int i = 0; i < n; i++)
        if (same(arr[i].name, name)) return &arr[i];
    return NULL;
}

static px_wire_str cstr(const char *s) {
    return (px_wire_str){(const uint8_t *)s, strlen(s)};
}

/* The model's outputs and the loss node's inputs, for the message naming
 * an unknown output. */
static void describe_choices(const graph *g, const name_map *producer, const char *loss, char *buf,
                             size_t cap) {
    size_t len = (size_t)snprintf(buf, cap, "the model's outputs: ");
    for (int i = 0; i < g->n_outputs && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%.*s", i ? ", " : "",
                                (int)g->outputs[i].name.len, (const char *)g->outputs[i].name.p);
    int k = loss ? map_get(producer, cstr(loss)) : -1;
    if (k < 0 || len >= cap) return;
    const node *n = &g->nodes[k];
    len += (size_t)snprintf(buf + len, cap - len, "; the loss '%s' is computed by %.*s from ", loss,
                            (int)n->op.len, (const char *)n->op.p);
    for (int i = 0; i < n->n_in && len < cap; i++) {
        px_wire_str s = g->names[n->first_in + i];
        len += (size_t)snprintf(buf + len, cap - len, "%s'%.*s'", i ? ", " : "", (int)s.len,
                                (const char *)s.p);
    }
}

/* Keeps the nodes the named values need; marks every value they read in
 * `needed`. -1 with a message for a name nothing produces or holds. */
static int walk_back(graph *g, const name_map *producer, name_map *needed, int n_names,
                     char *const *names, const char *loss, char *err, size_t cap) {
    int n_stack = 0;
    int *stack = malloc(sizeof(int) * (size_t)(g->n_nodes + 1));
    if (!stack) return snprintf(err, cap, "--save-infer: out of memory"), -1;
    for (int i = 0; i < n_names; i++) {
        px_wire_str want = cstr(names[i]);
        map_put(needed, want, 1);
        int k = map_get(producer, want);
        if (k >= 0) {
            if (!g->nodes[k].kept) {
                g->nodes[k].kept = 1;
                stack[n_stack++] = k;
            }
            continue;
        }
        if (find_named(g->inputs, g->n_inputs, want) || find_named(g->inits, g->n_inits, want))
            continue;
        char choices[2048];
        describe_choices(g, producer, loss, choices, sizeof choices);
        snprintf(err, cap, "--outputs: the model has no value named '%s' (%s)", names[i], choices);
        free(stack);
        return -1;
    }
    while (n_stack > 0) {
        const node *n = &g->nodes[stack[--n_stack]];
        if (n->subgraph) {
            snprintf(err, cap,
                     "--save-infer: node '%.*s' (%.*s) holds a subgraph; pruning through control "
                     "flow is not supported",
                     (int)n->name.len, (const char *)n->name.p, (int)n->op.len,
                     (const char *)n->op.p);
            free(stack);
            return -1;
        }
        for (int i = 0; i < n->n_in; i++) {
            px_wire_str in = g->names[n->first_in + i];
            if (in.len == 0) continue; /* an omitted optional input */
            map_put(needed, in, 1);
            int k = map_get(producer, in);
            if (k >= 0 && !g->nodes[k].kept) {
                g->nodes[k].kept = 1;
                stack[n_stack++] = k;
            }
        }
    }
    free(stack);
    return 0;
}

static void put_whole(px_pb_buf *b, px_wire_str whole) {
    px_pb_put_raw(b, whole.p, whole.len);
}

/* A ValueInfoProto (whole field) written as field `num`. */
static void put_as(px_pb_buf *b, int num, px_wire_str whole) {
    size_t pos = 0;
    px_wire_field f;
    if (px_wire_next_field(whole, &pos, &f) == 1) px_pb_put_bytes(b, num, f.s.p, f.s.len);
}

/* The pruned graph: kept nodes in order, the graph's name, the initializers
 * and inputs they read, the chosen outputs, the kept values' value_info. */
static int write_graph(const graph *g, const name_map *needed, int n_names, char *const *names,
                       px_pb_buf *out, char *err, size_t cap) {
    for (int k = 0; k < g->n_nodes; k++)
        if (g->nodes[k].kept) put_whole(out, g->nodes[k].whole);
    if (g->name.p) put_whole(out, g->name);
    for (int i = 0; i < g->n_inits; i++)
        if (map_get(needed, g->inits[i].name) >= 0) put_whole(out, g->inits[i].whole);
    if (g->doc.p) put_whole(out, g->doc);
    for (int i = 0; i < g->n_inputs; i++)
        if (map_get(needed, g->inputs[i].name) >= 0) put_whole(out, g->inputs[i].whole);
    for (int i = 0; i < n_names; i++) {
        px_wire_str want = cstr(names[i]);
        const named *vi = find_named(g->outputs, g->n_outputs, want);
        if (!vi) vi = find_named(g->infos, g->n_infos, want);
        if (!vi) vi = find_named(g->inputs, g->n_inputs, want);
        if (!vi)
            return snprintf(err, cap,
                            "--save-infer: the model records no type for '%s' (export it as an "
                            "output of the model)",
                            names[i]),
                   -1;
        put_as(out, GRAPH_OUTPUT, vi->whole);
    }
    for (int i = 0; i < g->n_infos; i++)
        if (map_get(needed, g->infos[i].name) >= 0) put_whole(out, g->infos[i].whole);
    return 0;
}

/* metadata_props entries whose key starts with "parallax." */
static int parallax_metadata(px_wire_str entry) {
    px_wire_str key = string_field(entry, ENTRY_KEY);
    return key.len >= 9 && memcmp(key.p, "parallax.", 9) == 0;
}

int px_infer_plan_build(const px_program_desc *p, int n_names, char *const *names,
                        px_infer_plan *plan, char *err, size_t cap) {
    memset(plan, 0, sizeof *plan);
    if (!p->infer_base || p->infer_base_bytes <= 0)
        return snprintf(err, cap,
                        "--save-infer: this program was compiled without its eval-mode model "
                        "(compile it again with this parallaxc)"),
               -1;
    px_wire_str model = {p->infer_base, (size_t)p->infer_base_bytes};
    px_wire_str graph_msg = {0};
    size_t pos = 0;
    px_wire_field f;
    int rc;
    while ((rc = px_wire_next_field(model, &pos, &f)) == 1)
        if (f.num == MODEL_GRAPH && f.wire == 2) graph_msg = f.s;
    graph g = {0};
    name_map producer = {0}, needed = {0};
    int result = -1;
    if (rc < 0 || !graph_msg.p || parse_graph(graph_msg, &g)) {
        snprintf(err, cap, "--save-infer: the program's eval-mode model is malformed");
        goto done;
    }
    if (map_init(&producer, (size_t)g.n_names) ||
        map_init(&needed, (size_t)g.n_names + (size_t)n_names)) {
        snprintf(err, cap, "--save-infer: out of memory");
        goto done;
    }
    for (int k = 0; k < g.n_nodes; k++)
        for (int o = 0; o < g.nodes[k].n_out; o++)
            if (g.names[g.nodes[k].first_out + o].len)
                map_put(&producer, g.names[g.nodes[k].first_out + o], k);
    const char *loss = p->loss_output >= 0 && p->loss_output < p->n_outputs
                           ? p->outputs[p->loss_output].name
                           : NULL;
    if (walk_back(&g, &producer, &needed, n_names, names, loss, err, cap)) goto done;
    px_pb_buf gb = {0};
    if (write_graph(&g, &needed, n_names, names, &gb, err, cap)) {
        px_pb_free(&gb);
        goto done;
    }
    /* the model's fields, its graph replaced by the pruned one */
    pos = 0;
    while (px_wire_next_field(model, &pos, &f) == 1) {
        if (f.num == MODEL_GRAPH && f.wire == 2)
            px_pb_put_bytes(&plan->model, MODEL_GRAPH, gb.data, gb.len);
        else if (!(f.num == MODEL_METADATA && f.wire == 2 && parallax_metadata(f.s)))
            put_whole(&plan->model, f.whole);
    }
    px_pb_free(&gb);
    plan->var_kept = calloc((size_t)(p->n_vars + p->n_tied) + 1, 1);
    if (!plan->var_kept || plan->model.oom) {
        snprintf(err, cap, "--save-infer: out of memory");
        px_infer_plan_free(plan);
        goto done;
    }
    for (int64_t v = 0; v < p->n_vars; v++)
        plan->var_kept[v] = map_get(&needed, cstr(p->vars[v].name)) >= 0;
    for (int64_t t = 0; t < p->n_tied; t++) /* the tied copies follow the variables */
        plan->var_kept[p->n_vars + t] = map_get(&needed, cstr(p->tied[t].name)) >= 0;
    result = 0;
done:
    map_free(&producer);
    map_free(&needed);
    graph_free(&g);
    return result;
}

void px_infer_plan_free(px_infer_plan *plan) {
    px_pb_free(&plan->model);
    free(plan->var_kept);
    memset(plan, 0, sizeof *plan);
}

void px_save_infer(const char *path, const px_program_desc *p, const px_infer_plan *plan,
                   int external) {
    px_save_model(path, p, plan->model.data, (int64_t)plan->model.len, plan->var_kept, external);
}
