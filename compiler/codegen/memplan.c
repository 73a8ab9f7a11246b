#include "memplan.h"
#include "emit.h"

#include "arena_blocks.h"
#include "buffer_stages.h"
#include "lower_view.h"

#include <stdlib.h>
#include <string.h>

typedef struct interval {
    int value, start, end;
    int64_t bytes;
} interval;

static int64_t align_up(int64_t x) {
    return (x + PX_ARENA_ALIGN - 1) / PX_ARENA_ALIGN * PX_ARENA_ALIGN;
}

static int by_start_then_size(const void *a, const void *b) {
    const interval *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return x->value - y->value;
}

/* In-place candidate for the output of a fused elementwise call: an input of
 * the same element size and count that is an ordinary intermediate and dies
 * at this call.
 * A fused loop reads element i of every input before writing element i of
 * its output, so sharing the buffer is safe (the emitter then drops noalias
 * for that pair). Returns the value id, or -1. */
static int inplace_input(const px_graph *g, const px_plan *plan, int call, const int *last,
                         const int *root, const int *stage) {
    if (call < 0 || call >= plan->n_calls || !plan->calls[call].fusion) return -1;
    const px_kcall *k = &plan->calls[call];
    const px_value *out = k->bufs[k->n_bufs - 1];
    int64_t out_bytes = px_shape_numel(&out->shape) * (int64_t)px_dtype_size(out->dtype);
    for (int b = 0; b + 1 < k->n_bufs; b++) {
        const px_value *in = k->bufs[b];
        /* the input's whole view group must die here, not just the input */
        if (!in || in->kind != PX_VALUE_INTERMEDIATE || in->is_output || last[root[in->id]] != call)
            continue;
        const px_value *r = g->values[root[in->id]];
        if (r->kind != PX_VALUE_INTERMEDIATE || r->is_output) continue;
        /* --pp: the same ranks' region of the arena */
        if (stage[r->id] != stage[out->id]) continue;
        /* same element size too: a float input as big as a bool output holds a
         * quarter of its elements and is broadcast, read again after writes */
        if (px_dtype_size(in->dtype) != px_dtype_size(out->dtype) ||
            px_shape_numel(&in->shape) * (int64_t)px_dtype_size(in->dtype) != out_bytes)
            continue;
        return root[in->id];
    }
    return -1;
}

/* root[v]: the value whose buffer v uses: itself, or for the output of a
 * view node (lower_view.h) the root of the node's input. Nodes are in
 * topological order, so an input's root is final before its views. */
static void view_roots(const px_graph *g, int *root) {
    for (int i = 0; i < g->n_values; i++) root[i] = i;
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        if (px_lower_is_view(n)) root[n->outputs[0]->id] = root[n->inputs[0]->id];
    }
}

/* The offsets of the intervals iv[0..n_iv) (sorted by start), each in the
 * region of the ranks that touch it (buffer_stages.h): set 0 the shared
 * buffers, set 1 + s stage s's, each its own first fit over the blocks live
 * in it. Offsets are within the set; peak[set] its size. -1: out of memory. */
static int place(const px_graph *g, const px_plan *plan, const interval *iv, int n_iv,
                 const int *last, const int *root, const int *stage, int n_sets,
                 px_arena_blocks *live, int64_t *peak, int64_t *offset) {
    for (int k = 0; k < n_iv; k++) {
        const px_value *v = g->values[iv[k].value];
        int set = stage[v->id] >= 0 ? 1 + stage[v->id] : 0;
        if (set >= n_sets) set = 0;
        /* Release blocks whose last use is before this value's first write. */
        px_arena_blocks_expire(&live[set], iv[k].start);
        int in_id = v->producer ? inplace_input(g, plan, iv[k].start, last, root, stage) : -1;
        int64_t in_bytes;
        int in_end;
        if (in_id >= 0 && px_arena_blocks_find(&live[set], offset[in_id], &in_bytes, &in_end) &&
            in_end == iv[k].start && in_bytes >= iv[k].bytes) {
            if (px_arena_blocks_extend(&live[set], offset[in_id], iv[k].end)) return -1;
            offset[iv[k].value] = offset[in_id];
            continue;
        }
        /* first fit between live blocks */
        int64_t off = px_arena_blocks_first_fit(&live[set], iv[k].bytes);
        if (px_arena_blocks_add(&live[set], off, iv[k].bytes, iv[k].end)) return -1;
        offset[iv[k].value] = off;
        if (off + iv[k].bytes > peak[set]) peak[set] = off + iv[k].bytes;
    }
    return 0;
}

int px_memplan_build(const px_graph *g, const px_plan *plan, px_memplan *mp, px_diag *d) {
    int n = g->n_values, rc = -1, n_iv = 0, n_sets = 1;
    int *root = malloc(sizeof(int) * (size_t)(n + 1));
    int *first = malloc(sizeof(int) * (size_t)(n + 1));
    int *last = malloc(sizeof(int) * (size_t)(n + 1));
    int *stage = malloc(sizeof(int) * (size_t)(n + 1));
    interval *iv = malloc(sizeof *iv * (size_t)(n + 1));
    px_arena_blocks *live = NULL; /* per set: the blocks in use, by offset */
    int64_t *peak = NULL;
    memset(mp, 0, sizeof *mp);
    mp->n_values = n;
    mp->offset = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!root || !first || !last || !stage || !iv || !mp->offset) {
        px_error(d, "out of memory planning buffers");
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        first[i] = last[i] = -2;
        mp->offset[i] = -1;
    }
    for (int c = 0; c < plan->n_calls; c++)
        for (int b = 0; b < plan->calls[c].n_bufs; b++) {
            const px_value *v = plan->calls[c].bufs[b];
            if (!v || px_value_is_const(v)) continue;
            if (first[v->id] == -2) first[v->id] = c;
            last[v->id] = c;
        }
    /* Runtime-fed inputs are written before the first call; outputs are read
     * after the last one. */
    for (int i = 0; i < g->n_inputs; i++) {
        int id = g->inputs[i]->id;
        first[id] = -1;
        if (last[id] == -2) last[id] = -1;
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const px_value *v = g->outputs[i];
        if (px_value_is_const(v)) continue;
        if (first[v->id] == -2) first[v->id] = -1;
        last[v->id] = plan->n_calls;
    }
    /* A view group is live from its first member's first use to its last
     * member's last use; only its root gets an interval. */
    view_roots(g, root);
    for (int i = 0; i < n; i++) {
        int r = root[i];
        if (r == i || first[i] == -2) continue;
        if (first[r] == -2 || first[i] < first[r]) first[r] = first[i];
        if (last[i] > last[r]) last[r] = last[i];
    }
    mp->n_stages = px_buffer_stages(g, plan, root, stage);
    n_sets = 1 + mp->n_stages;
    live = malloc(sizeof *live * (size_t)n_sets);
    peak = calloc((size_t)n_sets, sizeof *peak);
    mp->stage_bytes = calloc((size_t)mp->n_stages + 1, sizeof *mp->stage_bytes);
    if (!live || !peak || !mp->stage_bytes) {
        n_sets = 0;
        goto oom;
    }
    for (int s = 0; s < n_sets; s++) px_arena_blocks_init(&live[s]);
    for (int i = 0; i < n; i++) {
        if (first[i] == -2 || root[i] != i) continue;
        const px_value *v = g->values[i];
        int64_t numel = px_shape_numel(&v->shape);
        if (numel < 0) {
            char buf[64];
            px_error(d, "value '%s' has no static shape (%s): cannot plan its buffer", v->name,
                     px_shape_str(&v->shape, buf, sizeof buf));
            goto cleanup;
        }
        int64_t bytes = align_up(numel * (int64_t)px_dtype_size(v->dtype));
        if (bytes == 0) bytes = PX_ARENA_ALIGN; /* empty tensors still get a distinct address */
        iv[n_iv++] = (interval){i, first[i], last[i], bytes};
        mp->naive_bytes += bytes;
    }
    qsort(iv, (size_t)n_iv, sizeof *iv, by_start_then_size);
    if (place(g, plan, iv, n_iv, last, root, stage, n_sets, live, peak, mp->offset)) goto oom;
    /* each stage's region follows the shared one */
    mp->arena_bytes = peak[0];
    for (int s = 0; s < mp->n_stages; s++) {
        mp->stage_bytes[s] = peak[0] + peak[1 + s];
        if (mp->stage_bytes[s] > mp->arena_bytes) mp->arena_bytes = mp->stage_bytes[s];
    }
    for (int i = 0; i < n; i++)
        if (root[i] == i && mp->offset[i] >= 0 && stage[i] >= 0) mp->offset[i] += peak[0];
    for (int i = 0; i < n; i++)
        if (root[i] != i) mp->offset[i] = mp->offset[root[i]];
    rc = 0;
    goto cleanup;
oom:
    px_error(d, "out of memory planning buffers");
cleanup:
    for (int s = 0; live && s < n_sets; s++) px_arena_blocks_free(&live[s]);
    free(live);
    free(peak);
    free(root);
    free(first);
    free(last);
    free(stage);
    free(iv);
    if (rc) px_memplan_free(mp);
    return rc;
}

void px_memplan_free(px_memplan *mp) {
    free(mp->offset);
    free(mp->stage_bytes);
    mp->offset = NULL;
    mp->stage_bytes = NULL;
}

/* Here, below both the report (compile.c) and the emitter (emit_llvm.c),
 * which writes each stage's arena into the program. */
int64_t px_memory_report_arena(const px_memory_report *r, int stage) {
    if (stage >= 0 && stage < r->n_stages) return r->stage_arena_bytes[stage];
    return r->arena_bytes;
}
