/* Communication insertion (design.md §4): rewrites the trained step graph
 * (Update / RowUpdate nodes at its end) for synchronous data parallelism.
 *
 *   dense, allreduce sync:   G ──AllReduceStart/Wait (bucketed)──▶ mean ──▶ Update
 *   sparse, allreduce sync:  RowsToDense(idx, rows, count) ──▶ (dense, mask), both
 *                            bucketed ──▶ MaskedUpdate: the same lazy row update as
 *                            RowUpdate, on the rows some rank touched
 *   sparse, ps sync:         PSPull(W, idx) ──▶ (cache, remap) before every
 *                            Gather of W fetches the rows the batch reads into a
 *                            compact row cache, and the Gather reads
 *                            Gather(cache, remap); RowUpdate ──▶ PSPush: the owning
 *                            shard applies the update. W's storage is not used by
 *                            the step (row_cache_only). Each PSPush then moves up,
 *                            with what it needs, to where its row set can be ready
 *                            (push_early.c)
 *   dense, ps sync:          PSPull(W) at the start of the step; Update ──▶ PSPushDense
 *
 * AllReduceStart of a bucket sits right after the last producer of its
 * gradients, so the reduction overlaps the rest of the backward pass; the
 * waits sit just before the updates. Gradients join buckets in the order the
 * backward pass produces them.
 *
 * Under --tp, a variable stored split has a slab's gradient on each rank;
 * the ranks holding the same slab (rank mod tp) average it among
 * themselves, in buckets of their own (plan->bucket_slab), so it moves at
 * slab size and never over the ranks of its own group.
 *
 * Under --pp, a variable lives on the ranks of its stage only: its
 * gradient goes into a bucket of that stage (plan->bucket_stage), whose
 * AllReduce the stage's ranks run (pp_stage on AllReduceStart/Wait) over
 * the ranks of that stage at the same --tp position, one per pipeline. */
#include "node_order.h"
#include "train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* AllReduceWait's buffers are its k inputs and k outputs (PX_KCALL_MAX_BUFS). */
#define MAX_PER_BUCKET 16

/* The pass inserts next to nodes all over the graph, once or more per
 * variable: it places them through a px_node_order session (O(1) each,
 * where px_graph_insert_node would shift the whole node array), so that a
 * model with 100k variables takes time linear in its size. */
typedef struct comm_ctx {
    px_graph *g;
    px_node_order *order;
    px_node **update_of; /* the Update / RowUpdate / SparseUpdate of each variable, or NULL */
} comm_ctx;

static int is_update(const px_node *n) {
    return n->op == PX_OP_Update || n->op == PX_OP_RowUpdate || n->op == PX_OP_MaskedUpdate ||
           n->op == PX_OP_SparseUpdate || n->op == PX_OP_PSPushDense;
}

/* Where the AllReduce waits go: before the first update at the end of the
 * step (not before a PSPush: those sit early, where their rows are ready).
 * NULL: at the end. */
static px_node *first_update(const comm_ctx *c) {
    for (px_node *n = px_node_order_first(c->order); n; n = px_node_order_next(c->order, n))
        if (!n->dead && is_update(n)) return n;
    return NULL;
}

/* Each variable's Update / RowUpdate, found in one walk over the nodes. */
static int find_updates(comm_ctx *c, int n_vars) {
    c->update_of = calloc((size_t)n_vars + 1, sizeof *c->update_of);
    if (!c->update_of) return -1;
    for (int i = 0; i < c->g->n_nodes; i++) {
        px_node *n = c->g->nodes[i];
        if (n->dead ||
            (n->op != PX_OP_Update && n->op != PX_OP_RowUpdate && n->op != PX_OP_SparseUpdate))
            continue;
        int64_t var = px_attr_int(n, "var", -1);
        if (var >= 0 && var < n_vars && !c->update_of[var]) c->update_of[var] = n;
    }
    return 0;
}

/* The last producer of ins in the current order, or NULL (none). */
static px_node *last_producer(const comm_ctx *c, int n_in, px_value *const *ins) {
    px_node *last = NULL;
    for (int i = 0; i < n_in; i++) {
        px_node *p = ins[i] ? ins[i]->producer : NULL;
        if (p && (!last || px_node_order_before(c->order, last, p))) last = p;
    }
    return last;
}

/* Replaces node old by a node of another op with the given inputs, at the
 * same position, keeping its attributes. */
static px_node *replace_node(comm_ctx *c, px_node *old, const char *op, int n_in,
                             px_value *const *ins) {
    px_node *n = px_node_order_insert(c->order, old, 0, op, PX_DOMAIN_PARALLAX, old->name, n_in,
                                      ins, 0, NULL);
    if (!n) return NULL;
    for (int a = 0; a < old->n_attrs; a++) {
        const px_attr *at = &old->attrs[a];
        if (at->kind == PX_ATTR_INT) px_node_set_attr_int(n, at->name, at->i);
        if (at->kind == PX_ATTR_FLOAT) px_node_set_attr_float(n, at->name, at->f);
        if (at->kind == PX_ATTR_STRING) px_node_set_attr_string(n, at->name, at->s.data);
    }
    px_graph_remove_node(c->g, old);
    return n;
}

typedef struct grad_slot {
    px_value *grad;
    px_node *consumer; /* the update node reading it */
    int input;         /* which input of consumer */
    int seq;           /* order of addition: ties keep it */
    /* 1: the gradient of a variable stored split (px_tp_stored), a slab:
     * it goes into a slab bucket (plan->bucket_slab) */
    int slab;
    int stage; /* --pp: its variable's stage (buckets never mix stages); else -1 */
} grad_slot;

static const px_node_order *sort_order; /* for by_pos (qsort has no context argument) */

/* Slab slots last, then (--pp) by stage, then by the position of the
 * gradient's producer (none: first), then by seq. */
static int by_pos(const void *a, const void *b) {
    const grad_slot *x = a, *y = b;
    if (x->slab != y->slab) return x->slab - y->slab;
    if (x->stage != y->stage) return x->stage - y->stage;
    const px_node *p = x->grad->producer, *q = y->grad->producer;
    if (p != q) {
        if (!p || (q && px_node_order_before(sort_order, p, q))) return -1;
        return 1;
    }
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int add_slot(grad_slot **slots, int *n, int *cap, px_value *gv, px_node *consumer,
                    int input) {
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 16;
        grad_slot *grown = realloc(*slots, sizeof **slots * (size_t)nc);
        if (!grown) return -1;
        *slots = grown;
        *cap = nc;
    }
    (*slots)[*n] = (grad_slot){gv, consumer, input, *n, 0, -1};
    (*n)++;
    return 0;
}

/* Buckets of at most cfg->bucket_bytes (and MAX_PER_BUCKET gradients) in
 * the order of slots, which never mix slabs with whole gradients: a slab
 * bucket is reduced over other ranks (px_train_plan.bucket_slab). */
static int insert_buckets(comm_ctx *c, grad_slot *slots, int n, const px_train_config *cfg,
                          px_train_plan *plan, px_diag *d) {
    px_graph *g = c->g;
    sort_order = c->order;
    if (n > 0) qsort(slots, (size_t)n, sizeof *slots, by_pos); /* qsort(NULL, 0) is UB */
    sort_order = NULL;
    plan->bucket_bytes = calloc((size_t)n + 1, sizeof *plan->bucket_bytes);
    plan->bucket_slab = calloc((size_t)n + 1, sizeof *plan->bucket_slab);
    if (!plan->bucket_bytes || !plan->bucket_slab) return px_error(d, "out of memory");
    if (plan->pp > 1 && !(plan->bucket_stage = calloc((size_t)n + 1, sizeof *plan->bucket_stage)))
        return px_error(d, "out of memory");
    /* Waits are not updates: the first update stays the same for every bucket. */
    px_node *waits_before = first_update(c);
    int start = 0;
    while (start < n) {
        int end = start;
        int64_t bytes = 0;
        while (end < n && end - start < MAX_PER_BUCKET && slots[end].slab == slots[start].slab &&
               slots[end].stage == slots[start].stage) {
            int64_t b = px_shape_numel(&slots[end].grad->shape) * 4;
            if (end > start && bytes + b > cfg->bucket_bytes) break;
            bytes += b;
            end++;
        }
        int k = end - start, bucket = plan->n_buckets++;
        plan->bucket_bytes[bucket] = bytes;
        plan->bucket_slab[bucket] = slots[start].slab;
        if (plan->bucket_stage) plan->bucket_stage[bucket] = slots[start].stage;
        px_value *ins[MAX_PER_BUCKET], *outs[MAX_PER_BUCKET];
        for (int i = 0; i < k; i++) {
            ins[i] = slots[start + i].grad;
            char name[300];
            snprintf(name, sizeof name, "%s.mean", ins[i]->name);
            outs[i] = px_graph_new_value(g, name, ins[i]->dtype, &ins[i]->shape);
        }
        /* Right after the last producer of its gradients (none: first). */
        px_node *last = last_producer(c, k, ins);
        char name[64];
        snprintf(name, sizeof name, "allreduce_start/%d", bucket);
        px_node *s = px_node_order_insert(c->order, last, 1, "AllReduceStart", PX_DOMAIN_PARALLAX,
                                          name, k, ins, 0, NULL);
        snprintf(name, sizeof name, "allreduce_wait/%d", bucket);
        px_node *w = px_node_order_insert(c->order, waits_before, 0, "AllReduceWait",
                                          PX_DOMAIN_PARALLAX, name, k, ins, k, outs);
        if (!s || !w) return px_error(d, "out of memory inserting communication");
        px_node_set_attr_int(s, "bucket", bucket);
        px_node_set_attr_int(w, "bucket", bucket);
        if (plan->bucket_stage) { /* only that stage's ranks reduce it */
            px_node_set_attr_int(s, "pp_stage", slots[start].stage);
            px_node_set_attr_int(w, "pp_stage", slots[start].stage);
        }
        for (int i = 0; i < k; i++)
            px_node_set_input(slots[start + i].consumer, slots[start + i].input, outs[i]);
        start = end;
    }
    return 0;
}

/* Before every Gather(W, idx) of a sparse PS variable: PSPull(W, idx) ->
 * (cache, remap) fetches the rows idx names into a compact cache of one row
 * per index (the most distinct rows the batch can read), and the Gather
 * reads Gather(cache, remap) instead. The step then never touches W's own
 * storage: the worker needs no full-size replica. The backward pass's row
 * set still names global rows (it was built from idx before this pass). */
static int pull_before_gathers(comm_ctx *c, px_value *w, int var, px_diag *d) {
    px_graph *g = c->g;
    px_node **gathers = calloc((size_t)w->n_uses + 1, sizeof *gathers);
    if (!gathers) return px_error(d, "out of memory inserting communication");
    int n = 0;
    for (int u = 0; u < w->n_uses; u++) {
        px_node *gather = w->uses[u].node;
        if (!gather->dead && gather->op == PX_OP_Gather && gather->inputs[0] == w)
            gathers[n++] = gather;
    }
    for (int i = 0; i < n; i++) {
        px_node *gather = gathers[i];
        px_value *idx = gather->inputs[1];
        px_shape cs = w->shape;
        cs.dims[0] = px_shape_numel(&idx->shape);
        char name[300];
        snprintf(name, sizeof name, "%s.rows", w->name);
        px_value *cache = px_graph_new_value(g, name, w->dtype, &cs);
        snprintf(name, sizeof name, "%s.remap", idx->name);
        px_value *remap = px_graph_new_value(g, name, idx->dtype, &idx->shape);
        snprintf(name, sizeof name, "ps_pull/%s", gather->name);
        px_value *ins[2] = {w, idx}, *outs[2] = {cache, remap};
        px_node *p = px_node_order_insert(c->order, gather, 0, "PSPull", PX_DOMAIN_PARALLAX, name,
                                          2, ins, 2, outs);
        if (!p) {
            free(gathers);
            return px_error(d, "out of memory inserting communication");
        }
        px_node_set_attr_int(p, "var", var);
        px_node_set_input(gather, 0, cache);
        px_node_set_input(gather, 1, remap);
    }
    free(gathers);
    return 0;
}

void px_plan_sync(px_train_plan *plan, const px_train_config *cfg) {
    if (cfg->comm == PX_COMM_MODE_AUTO) px_auto_choose(plan, cfg); /* traffic.c's cost model */
    for (int v = 0; v < plan->n_vars; v++) {
        px_train_var *tv = &plan->vars[v];
        tv->sync = !tv->has_grad                    ? PX_SYNC_NONE
                   : cfg->comm == PX_COMM_MODE_AUTO ? px_auto_sync(tv)
                                                    : px_mode_sync(cfg->comm, tv);
        tv->partitions = tv->sync == PX_SYNC_PS ? cfg->partitions : 1;
    }
}

/* Rewrites variable v's update for its sync mode; its gradients that go
 * through AllReduce are added to slots. */
static int sync_var(comm_ctx *c, px_train_plan *plan, int v, grad_slot **slots, int *n_slots,
                    int *cap, px_diag *d) {
    px_graph *g = c->g;
    px_train_var *tv = &plan->vars[v];
    px_node *up = c->update_of[v];
    int sparse = tv->cls == PX_VAR_SPARSE;
    if (!up || (up->op == PX_OP_RowUpdate) != sparse)
        return px_error(d, "internal error: the update of '%s' does not match the variable plan",
                        tv->value->name);
    if (px_tp_stored(tv) && (tv->sync != PX_SYNC_ALLREDUCE || sparse || up->op != PX_OP_Update))
        return px_error(d,
                        "internal error: '%s' is stored split (--tp) but not synchronised by "
                        "AllReduce",
                        tv->value->name);
    if (px_tp_stored(tv)) {
        if (add_slot(slots, n_slots, cap, up->inputs[1], up, 1)) return -1;
        (*slots)[*n_slots - 1].slab = 1;
        return 0;
    }
    if (tv->sync == PX_SYNC_ALLREDUCE && !sparse)
        return add_slot(slots, n_slots, cap, up->inputs[1], up, 1);
    if (tv->sync == PX_SYNC_ALLREDUCE) {
        /* Densify right where the row set is complete. */
        px_value *ins[3] = {up->inputs[1], up->inputs[2], up->inputs[3]};
        const px_shape *ws = &tv->value->shape;
        char name[300];
        snprintf(name, sizeof name, "%s.dense_grad", tv->value->name);
        px_value *dense = px_graph_new_value(g, name, PX_F32, ws);
        px_shape ms = px_shape_make(1, ws->dims);
        snprintf(name, sizeof name, "%s.touched", tv->value->name);
        px_value *mask = px_graph_new_value(g, name, PX_F32, &ms);
        px_value *outs[2] = {dense, mask};
        snprintf(name, sizeof name, "densify/%s", tv->value->name);
        px_node *r = px_node_order_insert(c->order, last_producer(c, 3, ins), 1, "RowsToDense",
                                          PX_DOMAIN_PARALLAX, name, 3, ins, 2, outs);
        if (!r) return -1;
        px_node_set_attr_int(r, "n_rows", ws->dims[0]);
        px_value *mins[3] = {tv->value, dense, mask};
        px_node *m = replace_node(c, up, "MaskedUpdate", 3, mins);
        if (!m) return -1;
        return add_slot(slots, n_slots, cap, dense, m, 1) ||
               add_slot(slots, n_slots, cap, mask, m, 2);
    }
    if (sparse) {
        if (pull_before_gathers(c, tv->value, v, d)) return -1;
        tv->row_cache_only = 1;
        px_value *ins[4] = {up->inputs[0], up->inputs[1], up->inputs[2], up->inputs[3]};
        return replace_node(c, up, "PSPush", 4, ins) ? 0 : -1;
    }
    char name[300];
    snprintf(name, sizeof name, "ps_pull/%s", tv->value->name);
    px_value *w = tv->value;
    px_node *p =
        px_node_order_insert(c->order, NULL, 1, "PSPull", PX_DOMAIN_PARALLAX, name, 1, &w, 0, NULL);
    if (!p) return -1;
    px_node_set_attr_int(p, "var", v);
    px_value *ins[2] = {up->inputs[0], up->inputs[1]};
    return replace_node(c, up, "PSPushDense", 2, ins) ? 0 : -1;
}

int px_pass_comm(px_graph *g, const px_train_config *cfg, px_train_plan *plan, px_diag *d) {
    grad_slot *slots = NULL;
    int n_slots = 0, cap = 0, rc = -1, errors_before = d->errors;
    comm_ctx c = {.g = g, .order = px_node_order_begin(g)};
    if (!c.order || find_updates(&c, plan->n_vars)) goto oom;
    for (int v = 0; v < plan->n_vars; v++) {
        if (plan->vars[v].sync == PX_SYNC_NONE) continue; /* no gradient: nothing to synchronise */
        int first_slot = n_slots;
        if (sync_var(&c, plan, v, &slots, &n_slots, &cap, d)) {
            if (d->errors == errors_before) goto oom; /* failed without a message */
            goto cleanup;
        }
        for (int i = first_slot; plan->pp > 1 && i < n_slots; i++)
            slots[i].stage = plan->vars[v].pp_stage;
    }
    if (insert_buckets(&c, slots, n_slots, cfg, plan, d)) goto cleanup;
    px_node_order_end(c.order);
    c.order = NULL;
    if (px_hoist_pushes(g, d)) goto cleanup;
    rc = 0;
    goto cleanup;
oom:
    px_error(d, "out of memory inserting communication");
cleanup:
    px_node_order_end(c.order);
    free(c.update_of);
    free(slots);
    return rc;
}
