#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- name index: open addressing, name -> value ---- */

/* suffixes: base name -> the next suffix k to try for a fresh "base_k"
 * (px_graph_new_value), so that making n values from one base costs O(n),
 * not the O(n^2) of probing base_1, base_2, ... every time. */
typedef struct suffix_slot {
    char *base;
    long next;
} suffix_slot;

/* A slot keeps the name's hash: probes past other names and regrowing
 * never touch their values (cache misses on a large graph). */
typedef struct name_slot {
    uint64_t hash;
    px_value *v; /* NULL: empty */
} name_slot;

typedef struct name_index {
    name_slot *slots;
    size_t cap, count;
    suffix_slot *suffixes;
    size_t suffix_cap, suffix_count;
} name_index;

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void slot_put(name_slot *slots, size_t cap, name_slot s) {
    size_t j = s.hash & (cap - 1);
    while (slots[j].v) j = (j + 1) & (cap - 1);
    slots[j] = s;
}

static int index_grow(name_index *ix) {
    size_t cap = ix->cap ? ix->cap * 2 : 64;
    name_slot *bigger = calloc(cap, sizeof *bigger);
    if (!bigger) return -1;
    for (size_t i = 0; i < ix->cap; i++)
        if (ix->slots[i].v) slot_put(bigger, cap, ix->slots[i]);
    free(ix->slots);
    ix->slots = bigger;
    ix->cap = cap;
    return 0;
}

static int index_insert(name_index *ix, px_value *v) {
    if ((ix->count + 1) * 2 > ix->cap && index_grow(ix)) return -1;
    slot_put(ix->slots, ix->cap, (name_slot){hash_name(v->name), v});
    ix->count++;
    return 0;
}

static px_value *index_find(const name_index *ix, const char *name) {
    if (!ix || !ix->cap) return NULL;
    uint64_t h = hash_name(name);
    size_t j = h & (ix->cap - 1);
    while (ix->slots[j].v) {
        if (ix->slots[j].hash == h && strcmp(ix->slots[j].v->name, name) == 0)
            return ix->slots[j].v;
        j = (j + 1) & (ix->cap - 1);
    }
    return NULL;
}

/* The counter of base (created at 1); NULL when out of memory. */
static long *suffix_counter(name_index *ix, const char *base) {
    if ((ix->suffix_count + 1) * 2 > ix->suffix_cap) {
        size_t cap = ix->suffix_cap ? ix->suffix_cap * 2 : 64;
        suffix_slot *bigger = calloc(cap, sizeof *bigger);
        if (!bigger) return NULL;
        for (size_t i = 0; i < ix->suffix_cap; i++) {
            if (!ix->suffixes[i].base) continue;
            size_t j = hash_name(ix->suffixes[i].base) & (cap - 1);
            while (bigger[j].base) j = (j + 1) & (cap - 1);
            bigger[j] = ix->suffixes[i];
        }
        free(ix->suffixes);
        ix->suffixes = bigger;
        ix->suffix_cap = cap;
    }
    size_t j = hash_name(base) & (ix->suffix_cap - 1);
    while (ix->suffixes[j].base) {
        if (strcmp(ix->suffixes[j].base, base) == 0) return &ix->suffixes[j].next;
        j = (j + 1) & (ix->suffix_cap - 1);
    }
    if (!(ix->suffixes[j].base = strdup(base))) return NULL;
    ix->suffixes[j].next = 1;
    ix->suffix_count++;
    return &ix->suffixes[j].next;
}

static void index_free(name_index *ix) {
    if (!ix) return;
    for (size_t i = 0; i < ix->suffix_cap; i++) free(ix->suffixes[i].base);
    free(ix->suffixes);
    free(ix->slots);
    free(ix);
}

/* Takes v out of the index (nothing when it is not there): the entries
 * after it in its probe run move back into the hole where their home slot
 * allows, so that no lookup stops early at it. */
static void index_remove(name_index *ix, const px_value *v) {
    if (!ix || !ix->cap) return;
    size_t mask = ix->cap - 1, hole = hash_name(v->name) & mask;
    while (ix->slots[hole].v != v) {
        if (!ix->slots[hole].v) return;
        hole = (hole + 1) & mask;
    }
    for (size_t k = (hole + 1) & mask; ix->slots[k].v; k = (k + 1) & mask) {
        size_t home = ix->slots[k].hash & mask;
        if (((k - home) & mask) >= ((k - hole) & mask)) { /* home is not in (hole, k] */
            ix->slots[hole] = ix->slots[k];
            hole = k;
        }
    }
    ix->slots[hole] = (name_slot){0};
    ix->count--;
}

/* ---- small helpers ---- */

/* Grows *arr (of elem-size es) so that index n fits. Aborts the process only on
 * allocation failure, which the IR treats as unrecoverable. */
static void *grow_from(void *arr, int *cap, int need, size_t es, int first) {
    if (need <= *cap) return arr;
    int c = *cap ? *cap : first;
    while (c < need) c *= 2;
    void *p = realloc(arr, (size_t)c * es);
    if (!p) {
        fprintf(stderr, "parallax: out of memory\n");
        abort();
    }
    *cap = c;
    return p;
}

static void *grow(void *arr, int *cap, int need, size_t es) {
    return grow_from(arr, cap, need, es, 8);
}

static char *dup_or_empty(const char *s) {
    char *p = strdup(s ? s : "");
    if (!p) {
        fprintf(stderr, "parallax: out of memory\n");
        abort();
    }
    return p;
}

static void *xcalloc(size_t n, size_t sz) {
    void *p = calloc(n ? n : 1, sz);
    if (!p) {
        fprintf(stderr, "parallax: out of memory\n");
        abort();
    }
    return p;
}

/* ---- graph ---- */

px_graph *px_graph_new(const char *name) {
    px_graph *g = xcalloc(1, sizeof *g);
    g->name = dup_or_empty(name);
    g->name_index = xcalloc(1, sizeof(name_index));
    return g;
}

static void value_free(px_value *v) {
    free(v->name);
    free(v->doc);
    px_tensor_free(v->data);
    free(v->uses);
    free(v);
}

void px_attr_clear(px_attr *a) {
    free(a->name);
    free(a->ref_attr_name);
    free(a->s.data);
    px_tensor_free(a->t);
    px_graph_free(a->g);
    free(a->floats);
    free(a->ints);
    if (a->strings)
        for (int i = 0; i < a->n; i++) free(a->strings[i].data);
    free(a->strings);
    if (a->tensors)
        for (int i = 0; i < a->n; i++) px_tensor_free(a->tensors[i]);
    free(a->tensors);
    if (a->graphs)
        for (int i = 0; i < a->n; i++) px_graph_free(a->graphs[i]);
    free(a->graphs);
    free(a->tp_dtypes);
    free(a->tp_shapes);
    free(a->tp_shape);
    memset(a, 0, sizeof *a);
}

static void node_free(px_node *n) {
    free(n->name);
    free(n->op_type);
    free(n->domain);
    free(n->doc);
    free(n->inputs);
    free(n->outputs);
    for (int i = 0; i < n->n_attrs; i++) px_attr_clear(&n->attrs[i]);
    free(n->attrs);
    free(n);
}

void px_graph_free(px_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_nodes; i++) node_free(g->nodes[i]);
    for (int i = 0; i < g->n_values; i++) value_free(g->values[i]);
    free(g->nodes);
    free(g->values);
    free(g->inputs);
    free(g->outputs);
    free(g->inits);
    for (int i = 0; i < g->n_opsets; i++) free(g->opsets[i].domain);
    free(g->opsets);
    for (int i = 0; i < g->n_meta; i++) {
        free(g->meta[i].key);
        free(g->meta[i].value);
    }
    free(g->meta);
    free(g->name);
    free(g->doc);
    free(g->producer_name);
    free(g->producer_version);
    free(g->model_domain);
    free(g->model_doc);
    index_free(g->name_index);
    free(g);
}

static int is_default_domain(const char *d) {
    return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

static int same_domain(const char *a, const char *b) {
    if (is_default_domain(a) || is_default_domain(b))
        return is_default_domain(a) && is_default_domain(b);
    return strcmp(a, b) == 0;
}

int64_t px_graph_opset(const px_graph *g, const char *domain) {
    while (g->parent) g = g->parent; /* subgraphs inherit the model's opsets */
    for (int i = 0; i < g->n_opsets; i++)
        if (same_domain(g->opsets[i].domain, domain)) return g->opsets[i].version;
    return 0;
}

void px_graph_set_opset(px_graph *g, const char *domain, int64_t version) {
    for (int i = 0; i < g->n_opsets; i++)
        if (same_domain(g->opsets[i].domain, domain)) {
            g->opsets[i].version = version;
            return;
        }
    int cap = g->n_opsets;
    g->opsets = grow(g->opsets, &cap, g->n_opsets + 1, sizeof *g->opsets);
    g->opsets[g->n_opsets].domain = dup_or_empty(domain);
    g->opsets[g->n_opsets].version = version;
    g->n_opsets++;
}

/* ---- values ---- */

static px_value *value_create(px_graph *g, const char *name, px_dtype dtype,
                              const px_shape *shape) {
    px_value *v = xcalloc(1, sizeof *v);
    v->name = dup_or_empty(name);
    v->dtype = dtype;
    v->shape = shape ? *shape : px_shape_unknown();
    v->id = g->n_values;
    g->values = grow(g->values, &g->cap_values, g->n_values + 1, sizeof *g->values);
    g->values[g->n_values++] = v;
    if (index_insert(g->name_index, v)) {
        fprintf(stderr, "parallax: out of memory\n");
        abort();
    }
    return v;
}

px_value *px_graph_add_value(px_graph *g, const char *name, px_dtype dtype, const px_shape *shape,
                             px_diag *d) {
    if (!name || !*name) {
        px_error(d, "graph '%s': a value needs a non-empty name", g->name);
        return NULL;
    }
    if (index_find(g->name_index, name)) {
        px_error(d, "graph '%s': value name '%s' is defined twice", g->name, name);
        return NULL;
    }
    return value_create(g, name, dtype, shape);
}

px_value *px_graph_new_value(px_graph *g, const char *base, px_dtype dtype, const px_shape *shape) {
    if (!base || !*base) base = "v";
    if (!index_find(g->name_index, base)) return value_create(g, base, dtype, shape);
    size_t len = strlen(base) + 24;
    char *name = xcalloc(len, 1);
    long *next = suffix_counter(g->name_index, base), k0 = next ? *next : 1;
    for (long k = k0;; k++) {
        snprintf(name, len, "%s_%ld", base, k);
        if (index_find(g->name_index, name)) continue;
        if (next) *next = k + 1;
        break;
    }
    px_value *v = value_create(g, name, dtype, shape);
    free(name);
    return v;
}

px_value *px_graph_find_value(const px_graph *g, const char *name) {
    return name ? index_find(g->name_index, name) : NULL;
}

void px_graph_add_input(px_graph *g, px_value *v) {
    v->kind = PX_VALUE_INPUT;
    g->inputs = grow(g->inputs, &g->cap_inputs, g->n_inputs + 1, sizeof *g->inputs);
    g->inputs[g->n_inputs++] = v;
}

void px_graph_add_output(px_graph *g, px_value *v) {
    v->is_output = 1;
    g->outputs = grow(g->outputs, &g->cap_outputs, g->n_outputs + 1, sizeof *g->outputs);
    g->outputs[g->n_outputs++] = v;
}

void px_graph_add_initializer(px_graph *g, px_value *v, px_tensor *t) {
    if (v->kind != PX_VALUE_INITIALIZER) {
        g->inits = grow(g->inits, &g->cap_inits, g->n_inits + 1, sizeof *g->inits);
        g->inits[g->n_inits++] = v;
    }
    v->kind = PX_VALUE_INITIALIZER;
    px_tensor_free(v->data);
    v->data = t;
    v->dtype = t->dtype;
    v->shape = t->shape;
}

px_value *px_graph_add_constant(px_graph *g, const char *base, px_tensor *t) {
    px_value *v = px_graph_new_value(g, base, t->dtype, &t->shape);
    v->kind = PX_VALUE_CONSTANT;
    v->data = t;
    return v;
}

int px_value_is_const(const px_value *v) {
    return v && (v->kind == PX_VALUE_INITIALIZER || v->kind == PX_VALUE_CONSTANT) && v->data;
}

static void use_add(px_value *v, px_node *n, int index) {
    /* Most values have one or two readers: room for 2 at first, not 8 (a
     * large trained graph has over a million values). */
    v->uses = grow_from(v->uses, &v->cap_uses, v->n_uses + 1, sizeof *v->uses, 2);
    v->uses[v->n_uses].node = n;
    v->uses[v->n_uses].index = index;
    v->n_uses++;
}

static void use_remove(px_value *v, px_node *n, int index) {
    for (int i = 0; i < v->n_uses; i++)
        if (v->uses[i].node == n && v->uses[i].index == index) {
            memmove(&v->uses[i], &v->uses[i + 1], (size_t)(v->n_uses - i - 1) * sizeof *v->uses);
            v->n_uses--;
            return;
        }
}

void px_value_replace_uses(px_graph *g, px_value *old_v, px_value *new_v) {
    while (old_v->n_uses > 0) {
        px_use u = old_v->uses[old_v->n_uses - 1];
        px_node_set_input(u.node, u.index, new_v);
    }
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == old_v) {
            g->outputs[i] = new_v;
            new_v->is_output = 1;
            old_v->is_output = 0;
        }
}

/* ---- nodes ---- */

static px_node *node_create(px_graph *g, const char *op_type, const char *domain, const char *name,
                            int n_inputs, px_value *const *inputs, int n_outputs,
                            px_value *const *outputs) {
    px_node *n = xcalloc(1, sizeof *n);
    n->op_type = dup_or_empty(op_type);
    n->domain = dup_or_empty(is_default_domain(domain) ? "" : domain);
    n->name = dup_or_empty(name);
    n->op = px_op_lookup(n->op_type, n->domain);
    n->n_inputs = n_inputs;
    n->inputs = xcalloc((size_t)n_inputs, sizeof *n->inputs);
    n->n_outputs = n_outputs;
    n->outputs = xcalloc((size_t)n_outputs, sizeof *n->outputs);
    for (int i = 0; i < n_inputs; i++) px_node_set_input(n, i, inputs ? inputs[i] : NULL);
    for (int i = 0; i < n_outputs; i++) {
        px_value *v = outputs ? outputs[i] : NULL;
        n->outputs[i] = v;
        if (v) {
            v->producer = n;
            v->producer_index = i;
        }
    }
    (void)g;
    return n;
}

px_node *px_graph_add_node(px_graph *g, const char *op_type, const char *domain, const char *name,
                           int n_inputs, px_value *const *inputs, int n_outputs,
                           px_value *const *outputs) {
    return px_graph_insert_node(g, g->n_nodes, op_type, domain, name, n_inputs, inputs, n_outputs,
                                outputs);
}

px_node *px_graph_insert_node(px_graph *g, int pos, const char *op_type, const char *domain,
                              const char *name, int n_inputs, px_value *const *inputs,
                              int n_outputs, px_value *const *outputs) {
    px_node *n = node_create(g, op_type, domain, name, n_inputs, inputs, n_outputs, outputs);
    if (pos < 0 || pos > g->n_nodes) pos = g->n_nodes;
    g->nodes = grow(g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes);
    memmove(&g->nodes[pos + 1], &g->nodes[pos], (size_t)(g->n_nodes - pos) * sizeof *g->nodes);
    g->nodes[pos] = n;
    g->n_nodes++;
    for (int i = pos; i < g->n_nodes; i++) g->nodes[i]->id = i;
    return n;
}

int px_graph_after_producers(int n_in, px_value *const *ins) {
    int at = 0;
    for (int i = 0; i < n_in; i++) {
        const px_node *p = ins[i] ? ins[i]->producer : NULL;
        if (p && p->id + 1 > at) at = p->id + 1;
    }
    return at;
}

void px_node_set_input(px_node *n, int i, px_value *v) {
    if (n->inputs[i]) use_remove(n->inputs[i], n, i);
    n->inputs[i] = v;
    if (v) use_add(v, n, i);
}

void px_node_add_input(px_node *n, px_value *v) {
    int cap = n->n_inputs;
    n->inputs = grow(n->inputs, &cap, n->n_inputs + 1, sizeof *n->inputs);
    n->inputs[n->n_inputs] = NULL;
    n->n_inputs++;
    px_node_set_input(n, n->n_inputs - 1, v);
}

void px_graph_remove_node(px_graph *g, px_node *n) {
    (void)g;
    if (n->dead) return;
    for (int i = 0; i < n->n_inputs; i++) px_node_set_input(n, i, NULL);
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] && n->outputs[i]->producer == n) n->outputs[i]->producer = NULL;
    n->dead = 1;
}

static int value_is_listed(const px_graph *g, const px_value *v) {
    if (v->kind == PX_VALUE_INPUT || v->kind == PX_VALUE_INITIALIZER || v->is_output) return 1;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == v) return 1;
    return 0;
}

void px_graph_compact(px_graph *g) {
    int k = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        px_node *n = g->nodes[i];
        if (n->dead) {
            node_free(n);
            continue;
        }
        n->id = k;
        g->nodes[k++] = n;
    }
    g->n_nodes = k;
    k = 0;
    for (int i = 0; i < g->n_values; i++) {
        px_value *v = g->values[i];
        if (v->n_uses == 0 && !v->producer && !value_is_listed(g, v)) {
            index_remove(g->name_index, v);
            value_free(v);
            continue;
        }
        v->id = k;
        g->values[k++] = v;
    }
    g->n_values = k;
}

/* ---- topological order ---- */

/* Min-heap of node positions: Kahn's algorithm takes the earliest ready node,
 * so an order that is already topological stays as it is. */
typedef struct ready_heap {
    int *pos;
    int n;
} ready_heap;

static void heap_push(ready_heap *h, int p) {
    int i = h->n++;
    while (i > 0 && h->pos[(i - 1) / 2] > p) {
        h->pos[i] = h->pos[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->pos[i] = p;
}

static int heap_pop(ready_heap *h) {
    int top = h->pos[0], last = h->pos[--h->n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->pos[c + 1] < h->pos[c]) c++;
        if (h->pos[c] >= last) break;
        h->pos[i] = h->pos[c];
        i = c;
    }
    if (h->n > 0) h->pos[i] = last;
    return top;
}

/* Kahn's algorithm with in-degrees: O((nodes + edges) log nodes). An input
 * produced by the node itself or by a dead node adds no edge. */
int px_graph_toposort(px_graph *g, px_diag *d) {
    int n = g->n_nodes, rc = -1, done = 0;
    int *pending = xcalloc((size_t)n, sizeof(int));
    px_node **order = xcalloc((size_t)n, sizeof(px_node *));
    ready_heap ready = {xcalloc((size_t)n, sizeof(int)), 0};
    for (int i = 0; i < n; i++) g->nodes[i]->id = i;
    for (int i = 0; i < n; i++) {
        px_node *nd = g->nodes[i];
        for (int j = 0; j < nd->n_inputs; j++) {
            px_value *v = nd->inputs[j];
            if (v && v->producer && !v->producer->dead && v->producer != nd) pending[i]++;
        }
        if (pending[i] == 0) heap_push(&ready, i);
    }
    while (ready.n > 0) {
        px_node *nd = g->nodes[heap_pop(&ready)];
        order[done++] = nd;
        for (int o = 0; o < nd->n_outputs; o++) {
            px_value *v = nd->outputs[o];
            if (!v || v->producer != nd) continue;
            for (int u = 0; u < v->n_uses; u++) {
                px_node *user = v->uses[u].node;
                if (user != nd && !user->dead && --pending[user->id] == 0)
                    heap_push(&ready, user->id);
            }
        }
    }
    if (done < n) {
        char buf[256];
        for (int i = 0; i < n; i++)
            if (pending[i] > 0) {
                px_error(d, "graph '%s' has a cycle through node %s", g->name,
                         px_node_label(g->nodes[i], buf, sizeof buf));
                break;
            }
        goto cleanup;
    }
    if (n > 0) memcpy(g->nodes, order, (size_t)n * sizeof *order);
    for (int i = 0; i < n; i++) g->nodes[i]->id = i;
    rc = 0;
cleanup:
    free(pending);
    free(order);
    free(ready.pos);
    return rc;
}

int px_graph_verify(const px_graph *g, px_diag *d) {
    char buf[256];
    int errors = 0;
    for (int i = 0; i < g->n_values; i++) {
        px_value *v = g->values[i];
        if (px_graph_find_value(g, v->name) != v) {
            errors++;
            px_error(d, "graph '%s': value '%s' is not uniquely named", g->name, v->name);
        }
        for (int u = 0; u < v->n_uses; u++) {
            px_use use = v->uses[u];
            if (use.index >= use.node->n_inputs || use.node->inputs[use.index] != v) {
                errors++;
                px_error(d, "graph '%s': use list of '%s' is out of date", g->name, v->name);
            }
        }
        if ((v->kind == PX_VALUE_INITIALIZER || v->kind == PX_VALUE_CONSTANT) && !v->data) {
            errors++;
            px_error(d, "graph '%s': constant '%s' has no data", g->name, v->name);
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        px_node *n = g->nodes[i];
        if (n->dead) continue;
        for (int j = 0; j < n->n_inputs; j++) {
            px_value *v = n->inputs[j];
            if (!v) continue;
            int defined = v->kind != PX_VALUE_INTERMEDIATE ||
                          (v->producer && !v->producer->dead && v->producer->id < n->id);
            if (!defined) {
                errors++;
                px_error(d, "graph '%s': node %s reads '%s' before it is produced", g->name,
                         px_node_label(n, buf, sizeof buf), v->name);
            }
        }
        for (int j = 0; j < n->n_outputs; j++) {
            px_value *v = n->outputs[j];
            if (v &&
                (v->producer != n || v->producer_index != j || v->kind != PX_VALUE_INTERMEDIATE)) {
                errors++;
                px_error(d,
                         "graph '%s': output '%s' of node %s has another producer or is an input",
                         g->name, v->name, px_node_label(n, buf, sizeof buf));
            }
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        px_value *v = g->outputs[i];
        if (v->kind == PX_VALUE_INTERMEDIATE && (!v->producer || v->producer->dead)) {
            errors++;
            px_error(d, "graph '%s': output '%s' is never produced", g->name, v->name);
        }
    }
    return errors ? -1 : 0;
}

/* ---- attributes ---- */

const px_attr *px_node_attr(const px_node *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

int64_t px_attr_int(const px_node *n, const char *name, int64_t dflt) {
    const px_attr *a = px_node_attr(n, name);
    return a && a->kind == PX_ATTR_INT ? a->i : dflt;
}

float px_attr_float(const px_node *n, const char *name, float dflt) {
    const px_attr *a = px_node_attr(n, name);
    if (a && a->kind == PX_ATTR_FLOAT) return a->f;
    if (a && a->kind == PX_ATTR_INT) return (float)a->i;
    return dflt;
}

const char *px_attr_string(const px_node *n, const char *name, const char *dflt) {
    const px_attr *a = px_node_attr(n, name);
    return a && a->kind == PX_ATTR_STRING ? (a->s.data ? a->s.data : "") : dflt;
}

const int64_t *px_attr_ints(const px_node *n, const char *name, int *count) {
    const px_attr *a = px_node_attr(n, name);
    if (a && a->kind == PX_ATTR_INTS) {
        *count = a->n;
        return a->ints;
    }
    *count = 0;
    return NULL;
}

const float *px_attr_floats(const px_node *n, const char *name, int *count) {
    const px_attr *a = px_node_attr(n, name);
    if (a && a->kind == PX_ATTR_FLOATS) {
        *count = a->n;
        return a->floats;
    }
    *count = 0;
    return NULL;
}

const px_tensor *px_attr_tensor(const px_node *n, const char *name) {
    const px_attr *a = px_node_attr(n, name);
    return a && (a->kind == PX_ATTR_TENSOR || a->kind == PX_ATTR_SPARSE_TENSOR) ? a->t : NULL;
}

px_attr *px_node_add_attr(px_node *n, const char *name, px_attr_kind kind) {
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) {
            px_attr_clear(&n->attrs[i]);
            n->attrs[i].name = dup_or_empty(name);
            n->attrs[i].kind = kind;
            return &n->attrs[i];
        }
    /* Exactly one more: a px_attr is large (its type-proto shape), and
     * grow's minimum of 8 would cost kilobytes per node. */
    px_attr *more = realloc(n->attrs, sizeof *n->attrs * (size_t)(n->n_attrs + 1));
    if (!more) {
        fprintf(stderr, "parallax: out of memory\n");
        abort();
    }
    n->attrs = more;
    px_attr *a = &n->attrs[n->n_attrs++];
    memset(a, 0, sizeof *a);
    a->name = dup_or_empty(name);
    a->kind = kind;
    return a;
}

void px_node_set_attr_int(px_node *n, const char *name, int64_t v) {
    px_node_add_attr(n, name, PX_ATTR_INT)->i = v;
}

void px_node_set_attr_float(px_node *n, const char *name, float v) {
    px_node_add_attr(n, name, PX_ATTR_FLOAT)->f = v;
}

void px_node_set_attr_string(px_node *n, const char *name, const char *v) {
    px_attr *a = px_node_add_attr(n, name, PX_ATTR_STRING);
    a->s.data = dup_or_empty(v);
    a->s.len = strlen(a->s.data);
}

void px_node_set_attr_ints(px_node *n, const char *name, int count, const int64_t *v) {
    px_attr *a = px_node_add_attr(n, name, PX_ATTR_INTS);
    a->n = count;
    a->ints = xcalloc((size_t)count, sizeof *a->ints);
    if (count) memcpy(a->ints, v, (size_t)count * sizeof *v);
}

void px_node_set_attr_floats(px_node *n, const char *name, int count, const float *v) {
    px_attr *a = px_node_add_attr(n, name, PX_ATTR_FLOATS);
    a->n = count;
    a->floats = xcalloc((size_t)count, sizeof *a->floats);
    if (count) memcpy(a->floats, v, (size_t)count * sizeof *v);
}

void px_node_set_attr_tensor(px_node *n, const char *name, px_tensor *t) {
    px_node_add_attr(n, name, PX_ATTR_TENSOR)->t = t;
}

void px_node_remove_attr(px_node *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) {
            px_attr_clear(&n->attrs[i]);
            memmove(&n->attrs[i], &n->attrs[i + 1],
                    (size_t)(n->n_attrs - i - 1) * sizeof *n->attrs);
            n->n_attrs--;
            return;
        }
}

int px_node_verror(px_diag *d, const px_node *n, const char *prefix, const char *fmt, va_list ap) {
    char label[256], msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return px_error(d, "%s%s: %s", prefix, px_node_label(n, label, sizeof label), msg);
}

const char *px_node_label(const px_node *n, char *buf, size_t cap) {
    if (n->domain && *n->domain)
        snprintf(buf, cap, "'%s' (%s::%s)", n->name, n->domain, n->op_type);
    else
        snprintf(buf, cap, "'%s' (%s)", n->name, n->op_type);
    return buf;
}

int px_node_copy_attr(px_node *dst, const px_attr *a, px_diag *d) {
    switch (a->kind) {
    case PX_ATTR_INT: px_node_set_attr_int(dst, a->name, a->i); return 0;
    case PX_ATTR_FLOAT: px_node_set_attr_float(dst, a->name, a->f); return 0;
    case PX_ATTR_INTS: px_node_set_attr_ints(dst, a->name, a->n, a->ints); return 0;
    case PX_ATTR_FLOATS: px_node_set_attr_floats(dst, a->name, a->n, a->floats); return 0;
    case PX_ATTR_STRING: {
        px_attr *c = px_node_add_attr(dst, a->name, PX_ATTR_STRING);
        c->s.data = malloc(a->s.len + 1);
        if (!c->s.data) abort();
        if (a->s.len) memcpy(c->s.data, a->s.data, a->s.len);
        ((char *)c->s.data)[a->s.len] = '\0';
        c->s.len = a->s.len;
        return 0;
    }
    case PX_ATTR_TENSOR: {
        px_tensor *t = px_tensor_clone(a->t, d);
        if (!t) return -1;
        px_node_set_attr_tensor(dst, a->name, t);
        return 0;
    }
    default: return px_error(d, "internal error: attribute '%s' cannot be copied", a->name);
    }
}
