/* The memory model of memory_model.h: per rank, the bytes of each kind the
 * training program holds. Each term mirrors one allocation of the runtime:
 *   shard rows, optimizer state  runtime/px_ps_layout.h (the placement itself),
 *                                runtime/comm/ps/partition.c (alloc_part)
 *   row cache                    the PSPull outputs (cache, remap) in the arena
 *   dense replicas               runtime/program/weights.c (variables with local
 *                                storage), train.c alloc_slots, comm/collectives/allreduce.c
 *                                (bucket buffers, ring scratch)
 *   frozen weights               runtime/program/weights.c load_frozen
 *   activations                  the arena (compiler/codegen/memplan.c) */
#include "memory_model.h"

#include "px_program.h"
#include "px_ps_layout.h"

#include <stdlib.h>
#include <string.h>

#define EMBED_MAX (64 * 1024) /* compiler/codegen/emit_weights.c */

static int64_t value_bytes(const px_value *v) {
    int64_t n = px_shape_numel(&v->shape);
    return n > 0 ? n * (int64_t)px_dtype_size(v->dtype) : 0;
}

/* Bytes of master rows placed on each shard, by the runtime's placement
 * (px_ps_layout.h). Partitions: the plan's count, or one per shard for
 * auto, at most one per row, as comm/ps/setup.c takes them, the PS
 * variables in order as its px_comm.ps. Returns -1 when out of memory. */
static int place_shards(const px_train_plan *plan, int shards, int64_t *load, int *any_auto) {
    int n = plan->n_vars > 0 ? plan->n_vars : 1, n_ps = 0;
    int64_t *rows = calloc((size_t)n, sizeof *rows), *row_bytes = calloc((size_t)n, sizeof *rows);
    int64_t *parts = calloc((size_t)n, sizeof *parts);
    int64_t *scratch = calloc(2 * (size_t)shards, sizeof *scratch);
    int *offsets = calloc((size_t)n, sizeof *offsets);
    int ok = rows && row_bytes && parts && scratch && offsets;
    for (int i = 0; ok && i < plan->n_vars; i++) {
        const px_train_var *tv = &plan->vars[i];
        if (tv->sync != PX_SYNC_PS) continue;
        const px_shape *s = &tv->value->shape;
        rows[n_ps] = s->rank > 0 ? s->dims[0] : 1;
        row_bytes[n_ps] = rows[n_ps] > 0 ? value_bytes(tv->value) / rows[n_ps] : 0;
        parts[n_ps] = tv->partitions > 0 ? tv->partitions : shards;
        if (tv->partitions <= 0) *any_auto = 1;
        if (parts[n_ps] > rows[n_ps]) parts[n_ps] = rows[n_ps];
        n_ps++;
    }
    if (ok) {
        px_ps_shard_offsets(n_ps, rows, row_bytes, parts, shards, scratch, offsets);
        for (int i = 0; i < n_ps; i++)
            for (int64_t p = 0; p < parts[i]; p++)
                load[px_ps_part_shard(p, parts[i], shards, offsets[i])] +=
                    row_bytes[i] * (px_ps_part_row0(rows[i], parts[i], p + 1) -
                                    px_ps_part_row0(rows[i], parts[i], p));
    }
    free(rows);
    free(row_bytes);
    free(parts);
    free(scratch);
    free(offsets);
    return ok ? 0 : -1;
}

/* Whether a pull's indices are a graph input's buffer (the input itself or a
 * view of all of it): the runtime then prefetches the next step's rows
 * (runtime/comm/ps/prefetch.c, input_of), which it can only do from data. */
static int indices_from_input(const px_graph *g, const px_value *idx) {
    while (idx->producer) {
        px_op op = idx->producer->op;
        if (op != PX_OP_Reshape && op != PX_OP_Flatten && op != PX_OP_Squeeze &&
            op != PX_OP_Unsqueeze && op != PX_OP_Identity)
            return 0;
        idx = idx->producer->inputs[0];
    }
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == idx) return 1;
    return 0;
}

/* Whether a rank of `stage` pulls rows of the table a PSPull reads: under
 * --pp (stage >= 0) every rank runs every pull, but one of another stage
 * than the table's asks for no rows (runtime/comm/sched/kernels.c). */
static int pulls_rows(const px_train_plan *plan, const px_node *pull, int stage) {
    if (stage < 0) return 1;
    int v = px_plan_var_of(plan, pull->inputs[0]);
    return v < 0 || plan->vars[v].pp_stage == stage;
}

/* PSPull(W, idx) -> (cache, remap): both live in the arena for the step.
 * A table all of whose pulls read graph inputs also has its next step's
 * rows prefetched (runtime/comm/ps/prefetch.c): two requests at a time,
 * each a buffer the size of its pulls' rows (the union is at most their
 * sum; the runtime reserves that much) and one for the fix-ups, those rows
 * again with an int64 position each. With more than
 * one rank each PSPush's row set (indices and rows, at capacity) is copied
 * for the comm thread (runtime/comm/sched/push_async.c; the default flags:
 * not with --no-overlap or --clip-grad-norm). Under --pp, a rank of `stage`
 * pulls the rows of its stage's tables only, but reserves every push's row
 * set (comm_push_enqueue reserves the capacity whatever the count); no
 * prefetch (the indices are slices of the inputs). -1: out of memory. */
static int64_t row_cache_bytes(const px_graph *g, const px_train_plan *plan, int ranks, int stage) {
    int64_t b = 0;
    for (int i = 0; i < g->n_nodes && ranks > 1; i++) {
        const px_node *n = g->nodes[i];
        if (n->dead || n->op != PX_OP_PSPush || n->n_inputs != 4) continue;
        b += value_bytes(n->inputs[1]) + value_bytes(n->inputs[2]);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        if (n->dead || n->op != PX_OP_PSPull || n->n_outputs != 2 || !pulls_rows(plan, n, stage))
            continue;
        for (int k = 0; k < 2; k++)
            if (n->outputs[k]) b += value_bytes(n->outputs[k]);
    }
    /* Per table (by its value id): the bytes of its pulls' rows, their
     * indices, and whether every pull reads a graph input; one walk. */
    int64_t *rows = calloc((size_t)g->n_values + 1, sizeof *rows);
    int64_t *indices = calloc((size_t)g->n_values + 1, sizeof *indices);
    char *pulled = calloc((size_t)g->n_values + 1, 1); /* 1: pulled; 2: from input only */
    if (!rows || !indices || !pulled) {
        b = -1;
        goto done;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *m = g->nodes[i];
        if (m->dead || m->op != PX_OP_PSPull || m->n_outputs != 2) continue;
        int t = m->inputs[0]->id;
        if (!pulled[t]) pulled[t] = 2;
        if (!indices_from_input(g, m->inputs[1])) pulled[t] = 1;
        if (m->outputs[0]) rows[t] += value_bytes(m->outputs[0]);
        int64_t n_idx = px_shape_numel(&m->inputs[1]->shape);
        indices[t] += n_idx > 0 ? n_idx : 0;
    }
    /* two requests (this step's and the next's), each with its rows and
     * room for a fix-up of every row with its position */
    for (int t = 0; t < g->n_values; t++)
        if (pulled[t] == 2) b += 2 * (2 * rows[t] + 8 * indices[t]);
done:
    free(rows);
    free(indices);
    free(pulled);
    return b;
}

/* Replicas a rank keeps: variables with local storage (all but the
 * sparse PS variables read through row caches), the optimizer slots of the
 * variables not on the parameter servers, the buffers of the AllReduce
 * buckets over more than one rank and the ring's scratch (one chunk of the
 * largest of them). Under --pp, only those of the rank's stage (stage >= 0):
 * its variables, and its buckets, each over one rank per pipeline. */
static int64_t dense_replica_bytes(const px_train_plan *plan, int n_slots, int ranks, int stage) {
    int64_t b = 0, max_chunk = 0;
    for (int i = 0; i < plan->n_vars; i++) {
        const px_train_var *tv = &plan->vars[i];
        if (stage >= 0 && tv->pp_stage != stage) continue;
        int64_t bytes = value_bytes(tv->value);
        if (!tv->row_cache_only) b += bytes;
        const px_masked_plan *m = tv->masked;
        if (m) /* packed state and values, the traversal (px_masked_bytes) */
            b += px_masked_bytes(m->out, m->in, m->nnz, n_slots);
        else if (tv->sync != PX_SYNC_PS)
            b += n_slots * bytes;
    }
    int tp = plan->tp > 1 ? plan->tp : 1;
    for (int k = 0; k < plan->n_buckets; k++) {
        if (stage >= 0 && plan->bucket_stage && plan->bucket_stage[k] != stage) continue;
        /* a --tp slab bucket is summed over the ranks holding its slab, a
         * --pp bucket over its stage's ranks at one --tp position; a bucket
         * over one rank passes through, with no buffer (the runtime's
         * comm_allreduce_passes_through) */
        int64_t over = stage >= 0                                  ? ranks / (tp * plan->pp)
                       : plan->bucket_slab && plan->bucket_slab[k] ? ranks / tp
                                                                   : ranks;
        if (over <= 1) continue;
        int64_t n = plan->bucket_bytes[k] / 4, chunk = (n + over - 1) / over;
        b += plan->bucket_bytes[k];
        if (chunk > max_chunk) max_chunk = chunk;
    }
    return b + 4 * max_chunk;
}

/* Initializers of the model the step reads and never trains: the program
 * loads float ones and large others from the model file (emit_weights.c);
 * small integer ones and folded constants are embedded in the binary (the
 * process baseline). */
static int64_t frozen_bytes(const px_graph *g, const px_train_plan *plan) {
    char *seen = calloc((size_t)g->n_values + 1, 1);
    if (!seen) return -1;
    int64_t b = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            const px_value *v = n->inputs[k];
            if (!v || seen[v->id] || v->kind != PX_VALUE_INITIALIZER || !v->data) continue;
            seen[v->id] = 1;
            if (px_plan_var_of(plan, v) >= 0) continue;
            if (px_dtype_is_float(v->dtype) || (int64_t)v->data->nbytes > EMBED_MAX)
                b += (int64_t)v->data->nbytes;
        }
    }
    free(seen);
    return b;
}

int px_predict_memory(const px_graph *g, const px_train_plan *plan, px_optim_kind optimizer,
                      const px_memory_report *arena, int ranks, int ranks_per_node,
                      px_memory_prediction *out, px_diag *d) {
    memset(out, 0, sizeof *out);
    if (ranks < 1) return px_error(d, "memory prediction: %d ranks", ranks);
    int k = ranks_per_node > 0 && ranks_per_node < ranks ? ranks_per_node : ranks;
    out->ranks = ranks;
    out->ranks_per_node = k;
    out->shards = (ranks + k - 1) / k;
    out->n_slots = px_optim_kind_slots(optimizer);
    out->per_rank = calloc((size_t)ranks, sizeof *out->per_rank);
    int64_t *load = calloc((size_t)out->shards, sizeof *load);
    int pp = plan->pp > 1 ? plan->pp : 0, tp = plan->tp > 1 ? plan->tp : 1;
    int64_t frozen = frozen_bytes(g, plan), cache = pp ? 0 : row_cache_bytes(g, plan, ranks, -1);
    int64_t *stage_cache = pp ? calloc((size_t)pp, sizeof *stage_cache) : NULL;
    for (int s = 0; stage_cache && s < pp && cache >= 0; s++)
        if ((stage_cache[s] = row_cache_bytes(g, plan, ranks, s)) < 0) cache = -1;
    if (!out->per_rank || !load || frozen < 0 || cache < 0 || (pp && !stage_cache) ||
        place_shards(plan, out->shards, load, &out->auto_partitions) != 0) {
        free(load);
        free(stage_cache);
        px_memory_prediction_free(out);
        return px_error(d, "out of memory predicting the memory per rank");
    }
    int64_t dense = pp ? 0 : dense_replica_bytes(plan, out->n_slots, ranks, -1);
    for (int r = 0; r < ranks; r++) {
        px_rank_memory *m = &out->per_rank[r];
        int stage = pp ? (r / tp) % pp : -1;
        if (pp) dense = dense_replica_bytes(plan, out->n_slots, ranks, stage);
        m->rank = r;
        m->shard = r % k == 0 ? r / k : -1;
        m->shard_rows = m->shard >= 0 ? load[m->shard] : 0;
        m->optimizer_state = out->n_slots * m->shard_rows;
        m->row_cache = pp ? stage_cache[stage] : cache;
        m->dense_replicas = dense;
        m->frozen_weights = frozen;
        m->activations = px_memory_report_arena(arena, stage);
        m->total = m->shard_rows + m->optimizer_state + m->dense_replicas + m->frozen_weights +
                   m->activations;
    }
    free(load);
    free(stage_cache);
    return 0;
}

void px_memory_prediction_free(px_memory_prediction *m) {
    free(m->per_rank);
    m->per_rank = NULL;
    m->ranks = 0;
}
