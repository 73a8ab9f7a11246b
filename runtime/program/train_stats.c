#include "train_stats.h"

#include "file_atomic.h"
#include "kernels/thread_pool.h"
#include "memory_stats.h"
#include "px_kernel.h"
#include "px_train.h"
#include "rank_threads.h"
#include "sparse/sparse_stats.h"
#include "sync_mode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double px_samples_per_second(const px_run_summary *r) {
    if (r->counted_steps <= 0 || r->counted_seconds <= 0) return 0;
    return (double)(r->counted_steps * r->global_batch) / r->counted_seconds;
}

/* Rank `from`'s value of v on every rank. The comm API has a mean but no
 * gather: the mean of (v * N on rank `from`, 0 elsewhere) is v, exact after
 * rounding for counts below 2^50. Runs once per run, so its cost is moot. */
static int64_t value_of_rank(int64_t v, int from) {
    int n = px_comm_size();
    double mine = px_comm_rank() == from ? (double)v * n : 0.0;
    return (int64_t)llround(px_comm_mean(mine));
}

/* The same for a double (the mean of v * N on rank `from`, 0 elsewhere). */
static double double_of_rank(double v, int from) {
    int n = px_comm_size();
    return px_comm_mean(px_comm_rank() == from ? v * n : 0.0);
}

static const char *const kind_names[PX_TRAFFIC_KINDS] = {"allreduce", "ps_pull", "ps_push",
                                                         "other"};

static void per_step(FILE *f, const int64_t *bytes, int64_t steps) {
    fputc('{', f);
    for (int k = 0; k < PX_TRAFFIC_KINDS; k++)
        fprintf(f, "%s\"%s\": %.17g", k ? ", " : "", kind_names[k],
                steps > 0 ? (double)bytes[k] / (double)steps : 0.0);
    fputc('}', f);
}

void px_write_stats(const char *path, const px_run_summary *r) {
    int n = px_comm_size(), root = px_comm_rank() == 0;
    px_comm_stats mine;
    px_comm_get_stats(&mine);
    px_comm_stats *all = calloc((size_t)n, sizeof *all);
    if (!all) px_rt_fail("out of memory for --stats");
    for (int from = 0; from < n; from++) {
        px_comm_stats *s = &all[from];
        s->steps = value_of_rank(mine.steps, from);
        for (int k = 0; k < PX_TRAFFIC_KINDS; k++) {
            s->sent[k] = value_of_rank(mine.sent[k], from);
            s->received[k] = value_of_rank(mine.received[k], from);
        }
        s->comm_seconds = double_of_rank(mine.comm_seconds, from);
        s->waited_seconds = double_of_rank(mine.waited_seconds, from);
        s->cpu_seconds = double_of_rank(mine.cpu_seconds, from);
        s->comm_thread_cpu_seconds = double_of_rank(mine.comm_thread_cpu_seconds, from);
    }
    uint64_t mem[PX_MEM_FIELDS];
    px_memory_mine(px_train.prog, mem);
    int64_t *mem_counts = calloc((size_t)n, sizeof *mem_counts);
    if (!mem_counts) px_rt_fail("out of memory for --stats");
    uint64_t *mem_all = px_comm_gather_u64(mem, PX_MEM_FIELDS, mem_counts);
    uint64_t data_mine[2] = {(uint64_t)r->data_bytes_read, 0};
    memcpy(&data_mine[1], &r->startup_seconds, 8);
    uint64_t *data_all = px_comm_gather_u64(data_mine, 2, mem_counts);
    free(mem_counts);
    if (!root) {
        free(all);
        return;
    }
    px_atomic_file af;
    char err[4400];
    if (px_atomic_open(&af, path, err, sizeof err)) px_rt_fail("--stats: %s", err);
    FILE *f = af.f;
    fprintf(f,
            "{\"steps\": %lld, \"samples_per_second\": %.17g, \"threads_per_rank\": %d, "
            "\"threads_from\": \"%s\", \"parallel_loops\": %lld,\n",
            (long long)r->steps, px_samples_per_second(r), px_pool_threads(),
            px_rank_threads_reason(), px_pool_splits());
    px_sparse_stats_json(f, r->counted_steps);
    px_comm_opts exact = {0};
    fputc(' ', f);
    px_sync_mode_json(f, r->comm ? r->comm : &exact);
    fputs(",\n", f);
    fprintf(f,
            " \"warmup_steps\": %lld, \"counted_steps\": %lld, \"counted_seconds\": %.9g,\n"
            " \"first_step\": %lld, \"last_step\": %lld, \"global_batch\": %lld, "
            "\"batch_per_rank\": %lld, \"partitions_chosen\": %lld,\n"
            " \"data_layout\": \"%s\", \"data_bytes\": %lld,\n \"ranks\": [",
            (long long)r->warmup_steps, (long long)r->counted_steps, r->counted_seconds,
            (long long)r->first_step, (long long)r->last_step, (long long)r->global_batch,
            (long long)r->batch_per_rank, (long long)mine.partitions_chosen,
            r->sharded ? "sharded" : "folder", (long long)r->data_bytes);
    for (int i = 0; i < n; i++) {
        /* The comm layer counts the steps it saw since the reset; fall back
         * on the loop's count if it does not. */
        int64_t steps = all[i].steps > 0 ? all[i].steps : r->counted_steps;
        fprintf(f, "%s\n  {\"rank\": %d", i ? "," : "", i);
        px_memory_write_json(f, mem_all + (size_t)i * PX_MEM_FIELDS);
        fprintf(f, ",\n   \"bytes_sent_per_step\": ");
        per_step(f, all[i].sent, steps);
        fprintf(f, ", \"bytes_received_per_step\": ");
        per_step(f, all[i].received, steps);
        double hidden = px_comm_hidden_fraction(&all[i]);
        fprintf(f, ",\n   \"comm_seconds_per_step\": %.9g, \"comm_hidden_fraction\": ",
                steps > 0 ? all[i].comm_seconds / (double)steps : 0.0);
        if (hidden < 0)
            fputs("null", f);
        else
            fprintf(f, "%.6g", hidden);
        double per = steps > 0 ? 1.0 / (double)steps : 0.0;
        fprintf(f, ",\n   \"cpu_seconds_per_step\": {\"process\": %.9g, \"comm_thread\": %.9g}",
                all[i].cpu_seconds * per, all[i].comm_thread_cpu_seconds * per);
        double startup;
        memcpy(&startup, &data_all[2 * i + 1], 8);
        fprintf(f, ",\n   \"data_bytes_read\": %lld, \"seconds_to_first_step\": %.6g",
                (long long)data_all[2 * i], startup);
        fputc('}', f);
    }
    fprintf(f, "\n ]}\n");
    free(all);
    free(mem_all);
    free(data_all);
    if (px_atomic_commit(&af, err, sizeof err)) px_rt_fail("--stats: %s", err);
}
