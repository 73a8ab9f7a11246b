/* `inspect`'s memory per rank: the training program compile would build
 * from the same flags, its buffer plan, and the memory model over the
 * ranks and nodes of --ranks / --ranks-per-node. */
#include "memory_model.h"

#include "print.h"
#include "train_program.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int px_memory_plan_or_why(const px_graph *g, px_memory_report *r, char *why, size_t cap) {
    px_diag *d = px_diag_scratch(why, cap);
    if (!d) return -1;
    int rc = px_memory_plan_report(g, r, d);
    px_diag_scratch_end(d, rc != 0, why, cap);
    return rc ? -1 : 0;
}

int px_inspect_memory(const px_cli *cli, const px_graph *g, const px_train_plan *plan,
                      const px_memory_report *g_buffers, px_memory_prediction *out, char *why,
                      size_t cap, px_diag *d) {
    memset(out, 0, sizeof *out);
    px_train_config cfg;
    px_train_config_from_cli(cli, &cfg);
    px_built_program own = {0};
    px_memory_report arena = {0};
    int rc = 1;
    if (!g) {
        if (px_train_program_or_why(cli->model, &cli->bindings, &cfg, &own, why, cap) != 0)
            goto done;
        g = own.graph;
        plan = &own.plan;
    }
    if (!g_buffers && px_memory_plan_or_why(g, &arena, why, cap) != 0) goto done;
    rc = px_predict_memory(g, plan, cfg.optimizer, g_buffers ? g_buffers : &arena, cli->ranks,
                           cli->ranks_per_node, out, d);
done:
    px_memory_report_free(&arena);
    px_built_program_free(&own);
    return rc;
}

static void print_row(FILE *out, const char *who, const px_rank_memory *m) {
    fprintf(out,
            "  %-16s %14" PRId64 " %14" PRId64 " %12" PRId64 " %14" PRId64 " %14" PRId64
            " %14" PRId64 " %14" PRId64 "\n",
            who, m->shard_rows, m->optimizer_state, m->row_cache, m->dense_replicas,
            m->frozen_weights, m->activations, m->total);
}

void px_print_memory_text(FILE *out, const px_memory_prediction *m, const char *why) {
    if (!m || !m->per_rank) {
        if (why && why[0]) fprintf(out, "memory per rank: none (%s)\n", why);
        return;
    }
    fprintf(out, "memory per rank (%d rank%s, %d shard%s, bytes):\n", m->ranks,
            m->ranks == 1 ? "" : "s", m->shards, m->shards == 1 ? "" : "s");
    fprintf(out, "  %-16s %14s %14s %12s %14s %14s %14s %14s\n", "rank", "shard_rows", "optimizer",
            "row_cache", "dense_replicas", "frozen", "activations", "total");
    char who[64];
    for (int r = 0; r < m->ranks; r++)
        if (m->per_rank[r].shard >= 0) {
            snprintf(who, sizeof who, "%d (shard %d)", r, m->per_rank[r].shard);
            print_row(out, who, &m->per_rank[r]);
        }
    int workers = m->ranks - m->shards, alike = 1;
    const px_rank_memory *first = NULL;
    for (int r = 0; r < m->ranks; r++) {
        const px_rank_memory *x = &m->per_rank[r];
        if (x->shard >= 0) continue;
        if (first && (x->dense_replicas != first->dense_replicas || x->total != first->total ||
                      x->row_cache != first->row_cache))
            alike = 0;
        if (!first) first = x;
    }
    /* --pp: each stage's ranks hold its own variables and pull its own
     * tables' rows, so the others differ */
    for (int r = 0; !alike && r < m->ranks; r++)
        if (m->per_rank[r].shard < 0) {
            snprintf(who, sizeof who, "%d", r);
            print_row(out, who, &m->per_rank[r]);
        }
    if (workers > 0 && alike) {
        const px_rank_memory *w = &m->per_rank[1 % m->ranks];
        for (int r = 0; r < m->ranks; r++)
            if (m->per_rank[r].shard < 0) w = &m->per_rank[r];
        snprintf(who, sizeof who, "%d other%s", workers, workers == 1 ? "" : "s");
        print_row(out, who, w);
    }
    fputs("  (row_cache lives in the activation arena and is counted there once; not "
          "predicted: the process baseline: binary, MPI, BLAS, data set)\n",
          out);
    if (m->auto_partitions)
        fputs("  (--partitions auto: one partition per shard assumed, the run-time search's "
              "first candidate)\n",
              out);
}

void px_print_memory_json(FILE *out, const px_memory_prediction *m) {
    if (!m || !m->per_rank) {
        fputs(",\n \"predicted_memory_per_rank\": null", out);
        return;
    }
    fprintf(out,
            ",\n \"predicted_memory_layout\": {\"ranks\": %d, \"ranks_per_node\": %d, "
            "\"shards\": %d, \"optimizer_slots\": %d, \"auto_partitions_assumed\": %s}",
            m->ranks, m->ranks_per_node, m->shards, m->n_slots,
            m->auto_partitions ? "\"one per shard\"" : "null");
    fputs(",\n \"predicted_memory_per_rank\": [", out);
    for (int r = 0; r < m->ranks; r++) {
        const px_rank_memory *x = &m->per_rank[r];
        fprintf(out, "%s\n  {\"rank\": %d, \"shard\": ", r ? "," : "", x->rank);
        if (x->shard >= 0)
            fprintf(out, "%d", x->shard);
        else
            fputs("null", out);
        fprintf(out,
                ", \"shard_rows\": %" PRId64 ", \"optimizer_state\": %" PRId64
                ", \"row_cache\": %" PRId64 ", \"dense_replicas\": %" PRId64
                ", \"frozen_weights\": %" PRId64 ", \"activations\": %" PRId64
                ", \"total\": %" PRId64 "}",
                x->shard_rows, x->optimizer_state, x->row_cache, x->dense_replicas,
                x->frozen_weights, x->activations, x->total);
    }
    fputc(']', out);
}
