#include "arena_blocks.h"

#include <stdlib.h>

typedef struct arena_block {
    int64_t offset, bytes;
    int end;
    uint32_t prio;
    int left, right;
    /* the subtree's: first offset, last end, largest gap between its blocks */
    int64_t first, last, gap;
} arena_block;

typedef struct expiry {
    int end;
    int64_t offset;
} expiry;

void px_arena_blocks_init(px_arena_blocks *a) {
    *a = (px_arena_blocks){.seed = 0x9e3779b97f4a7c15ull};
}

void px_arena_blocks_free(px_arena_blocks *a) {
    free(a->nodes);
    free(a->heap);
    *a = (px_arena_blocks){0};
}

static int64_t max64(int64_t x, int64_t y) {
    return x > y ? x : y;
}

static void update(arena_block *t, int i) {
    arena_block *n = &t[i];
    n->first = n->left ? t[n->left].first : n->offset;
    n->last = n->right ? t[n->right].last : n->offset + n->bytes;
    n->gap = 0;
    if (n->left) n->gap = max64(t[n->left].gap, n->offset - t[n->left].last);
    if (n->right)
        n->gap = max64(n->gap, max64(t[n->right].gap, t[n->right].first - n->offset - n->bytes));
}

/* Splits subtree i into offsets < key (*l) and >= key (*r). */
static void split(arena_block *t, int i, int64_t key, int *l, int *r) {
    if (!i) {
        *l = *r = 0;
        return;
    }
    if (t[i].offset < key) {
        split(t, t[i].right, key, &t[i].right, r);
        *l = i;
    } else {
        split(t, t[i].left, key, l, &t[i].left);
        *r = i;
    }
    update(t, i);
}

/* Every offset in l is below every offset in r. */
static int merge(arena_block *t, int l, int r) {
    if (!l || !r) return l ? l : r;
    if (t[l].prio > t[r].prio) {
        t[l].right = merge(t, t[l].right, r);
        update(t, l);
        return l;
    }
    t[r].left = merge(t, l, t[r].left);
    update(t, r);
    return r;
}

static int find(const arena_block *t, int i, int64_t offset) {
    while (i && t[i].offset != offset) i = offset < t[i].offset ? t[i].left : t[i].right;
    return i;
}

static int heap_push(px_arena_blocks *a, expiry e) {
    if (a->n_heap == a->cap_heap) {
        int cap = a->cap_heap ? 2 * a->cap_heap : 64;
        expiry *h = realloc(a->heap, sizeof *h * (size_t)cap);
        if (!h) return -1;
        a->heap = h;
        a->cap_heap = cap;
    }
    int k = a->n_heap++;
    while (k > 0 && a->heap[(k - 1) / 2].end > e.end) {
        a->heap[k] = a->heap[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    a->heap[k] = e;
    return 0;
}

static expiry heap_pop(px_arena_blocks *a) {
    expiry top = a->heap[0], last = a->heap[--a->n_heap];
    int k = 0;
    for (;;) {
        int c = 2 * k + 1;
        if (c >= a->n_heap) break;
        if (c + 1 < a->n_heap && a->heap[c + 1].end < a->heap[c].end) c++;
        if (a->heap[c].end >= last.end) break;
        a->heap[k] = a->heap[c];
        k = c;
    }
    if (a->n_heap) a->heap[k] = last;
    return top;
}

static void remove_block(px_arena_blocks *a, int64_t offset) {
    int l, mid, r;
    split(a->nodes, a->root, offset, &l, &mid);
    split(a->nodes, mid, offset + 1, &mid, &r);
    if (mid) {
        a->nodes[mid].left = a->free_list;
        a->free_list = mid;
    }
    a->root = merge(a->nodes, l, r);
}

void px_arena_blocks_expire(px_arena_blocks *a, int call) {
    while (a->n_heap && a->heap[0].end < call) {
        expiry e = heap_pop(a);
        int i = find(a->nodes, a->root, e.offset);
        /* an entry from before the block was extended, or of a block gone */
        if (i && a->nodes[i].end == e.end) remove_block(a, e.offset);
    }
}

int64_t px_arena_blocks_first_fit(const px_arena_blocks *a, int64_t bytes) {
    const arena_block *t = a->nodes;
    int i = a->root;
    int64_t prev_end = 0; /* end of the block before subtree i */
    if (!i) return 0;
    if (t[i].first - prev_end < bytes && t[i].gap < bytes) return t[i].last;
    /* Some gap in subtree i (or before it) fits: find the first. */
    for (;;) {
        int l = t[i].left;
        if (l && (t[l].first - prev_end >= bytes || t[l].gap >= bytes)) {
            i = l;
            continue;
        }
        int64_t before = l ? t[l].last : prev_end;
        if (t[i].offset - before >= bytes) return before;
        prev_end = t[i].offset + t[i].bytes;
        i = t[i].right; /* the fit is there: the subtree test above held */
        if (!i) return prev_end;
    }
}

int px_arena_blocks_add(px_arena_blocks *a, int64_t offset, int64_t bytes, int end) {
    int i = a->free_list;
    if (i) {
        a->free_list = a->nodes[i].left;
    } else {
        if (a->n_nodes + 1 >= a->cap_nodes) {
            int cap = a->cap_nodes ? 2 * a->cap_nodes : 64;
            arena_block *t = realloc(a->nodes, sizeof *t * (size_t)cap);
            if (!t) return -1;
            a->nodes = t;
            a->cap_nodes = cap;
        }
        i = ++a->n_nodes;
    }
    a->seed ^= a->seed << 13;
    a->seed ^= a->seed >> 7;
    a->seed ^= a->seed << 17;
    a->nodes[i] = (arena_block){
        .offset = offset, .bytes = bytes, .end = end, .prio = (uint32_t)(a->seed >> 32)};
    update(a->nodes, i);
    int l, r;
    split(a->nodes, a->root, offset, &l, &r);
    a->root = merge(a->nodes, merge(a->nodes, l, i), r);
    return heap_push(a, (expiry){end, offset});
}

int px_arena_blocks_find(const px_arena_blocks *a, int64_t offset, int64_t *bytes, int *end) {
    int i = find(a->nodes, a->root, offset);
    if (!i) return 0;
    *bytes = a->nodes[i].bytes;
    *end = a->nodes[i].end;
    return 1;
}

int px_arena_blocks_extend(px_arena_blocks *a, int64_t offset, int end) {
    int i = find(a->nodes, a->root, offset);
    if (!i) return -1;
    a->nodes[i].end = end;
    return heap_push(a, (expiry){end, offset});
}
