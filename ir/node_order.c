#include "node_order.h"

#include <stdint.h>
#include <stdlib.h>

/* A doubly linked list over node ids with order keys: a key between its
 * neighbours' for each insertion; when two neighbours' keys touch, the keys
 * of the smallest window around the insertion (doubling) whose key range
 * leaves MIN_GAP between them are spread evenly over that range. A pass
 * that inserts many nodes at one spot (every gradient's wait before the
 * first update) then relabels a few neighbours each time, not the whole
 * graph, which cost O(n) every ~32 insertions there. Index 0 is the head
 * sentinel (key 0): node id i is list index i + 1. */
struct px_node_order {
    px_graph *g;
    size_t cap; /* entries of prev, next, key */
    int *prev, *next;
    uint64_t *key;
    px_node **scratch; /* for _end, allocated ahead so that _end cannot fail */
};

#define GAP ((uint64_t)1 << 32)
#define MIN_GAP ((uint64_t)1 << 20)

static int grow(px_node_order *o, size_t need) {
    if (need <= o->cap) return 0;
    size_t cap = o->cap ? o->cap : 64;
    while (cap < need) cap *= 2;
    int *prev = realloc(o->prev, cap * sizeof *prev);
    if (prev) o->prev = prev;
    int *next = realloc(o->next, cap * sizeof *next);
    if (next) o->next = next;
    uint64_t *key = realloc(o->key, cap * sizeof *key);
    if (key) o->key = key;
    px_node **scratch = realloc(o->scratch, cap * sizeof *scratch);
    if (scratch) o->scratch = scratch;
    if (!prev || !next || !key || !scratch) return -1;
    o->cap = cap;
    return 0;
}

/* Keys 1, 2, ... times GAP along the list (the head keeps 0). */
static void spread(px_node_order *o) {
    uint64_t k = 0;
    for (int i = o->next[0]; i != 0; i = o->next[i]) o->key[i] = (k += GAP);
}

px_node_order *px_node_order_begin(px_graph *g) {
    px_node_order *o = calloc(1, sizeof *o);
    if (!o || grow(o, (size_t)g->n_nodes + 1)) {
        if (o) px_node_order_end(o); /* o->g is NULL: g is left alone */
        return NULL;
    }
    o->g = g;
    int n = g->n_nodes;
    for (int i = 0; i <= n; i++) {
        o->prev[i] = i == 0 ? n : i - 1;
        o->next[i] = i == n ? 0 : i + 1;
    }
    o->key[0] = 0;
    for (int i = 0; i < n; i++) g->nodes[i]->id = i;
    spread(o);
    return o;
}

/* Gives list index x (just linked, its key not set) and its neighbours keys
 * MIN_GAP apart or more, spread evenly between the keys around the
 * smallest window that has the room; the whole list always has it (keys
 * are 64-bit, lists far shorter than 2^44). */
static void relabel_around(px_node_order *o, int x) {
    int l = x, r = x;
    uint64_t w = 1; /* entries from l to r */
    for (;;) {
        int before = o->prev[l], after = o->next[r];
        uint64_t lo = o->key[before], hi = after == 0 ? UINT64_MAX : o->key[after];
        uint64_t step = (hi - lo) / (w + 1);
        if (step >= MIN_GAP || (before == 0 && after == 0)) {
            uint64_t k = lo;
            for (int i = l;; i = o->next[i]) {
                o->key[i] = (k += step);
                if (i == r) return;
            }
        }
        uint64_t grow = w;
        for (uint64_t j = 0; j < grow && o->prev[l] != 0; j++, w++) l = o->prev[l];
        for (uint64_t j = 0; j < grow && o->next[r] != 0; j++, w++) r = o->next[r];
    }
}

/* Links list index x between a and its successor. */
static void link_after(px_node_order *o, int a, int x) {
    int b = o->next[a];
    o->prev[x] = a;
    o->next[x] = b;
    o->next[a] = x;
    o->prev[b] = x;
    /* The head's successor wraps to 0: past the last node, keys may grow up
     * to UINT64_MAX. */
    uint64_t lo = o->key[a], hi = b == 0 ? UINT64_MAX : o->key[b];
    if (hi - lo >= 2) {
        o->key[x] = lo + (hi - lo) / 2;
        return;
    }
    relabel_around(o, x);
}

px_node *px_node_order_insert(px_node_order *o, px_node *at, int after, const char *op_type,
                              const char *domain, const char *name, int n_inputs,
                              px_value *const *inputs, int n_outputs, px_value *const *outputs) {
    px_graph *g = o->g;
    if (grow(o, (size_t)g->n_nodes + 2)) return NULL;
    /* Appended to the array: no shift, no renumbering; its id is its index. */
    px_node *n = px_graph_insert_node(g, g->n_nodes, op_type, domain, name, n_inputs, inputs,
                                      n_outputs, outputs);
    if (!n) return NULL;
    int x = n->id + 1, a;
    if (at)
        a = after ? at->id + 1 : o->prev[at->id + 1];
    else
        a = after ? 0 : o->prev[0];
    link_after(o, a, x);
    return n;
}

int px_node_order_before(const px_node_order *o, const px_node *a, const px_node *b) {
    return o->key[a->id + 1] < o->key[b->id + 1];
}

px_node *px_node_order_first(const px_node_order *o) {
    int i = o->next[0];
    return i ? o->g->nodes[i - 1] : NULL;
}

px_node *px_node_order_next(const px_node_order *o, const px_node *n) {
    int i = o->next[n->id + 1];
    return i ? o->g->nodes[i - 1] : NULL;
}

void px_node_order_end(px_node_order *o) {
    if (!o) return;
    px_graph *g = o->g;
    if (g) {
        /* The list holds every node once: rewrite the array in its order. */
        int k = 0;
        for (int i = o->next[0]; i != 0; i = o->next[i]) o->scratch[k++] = g->nodes[i - 1];
        for (int i = 0; i < k; i++) {
            g->nodes[i] = o->scratch[i];
            g->nodes[i]->id = i;
        }
    }
    free(o->scratch);
    free(o->prev);
    free(o->next);
    free(o->key);
    free(o);
}
