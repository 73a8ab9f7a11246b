#include "plan_layouts.h"
#include "layout_traffic.h"

#include "parallel_flags.h"
#include "pipeline_parallel.h"
#include "print.h"
#include "tensor_parallel.h"
#include "train_program.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int px_layout_default_micro_batches(int stages, int64_t batch) {
    int best = 1;
    for (int m = 1; m <= 4 * stages && m <= batch; m++)
        if (batch % m == 0) best = m;
    return best;
}

/* The per-rank training program of layout l, as compile builds it, into
 * *out; or -1 with the reason in l->why. */
static int build(const px_cli *cli, px_layout *l, const px_layout_net *net, px_train_config *cfg,
                 px_built_program *out) {
    px_train_config_from_cli(cli, cfg);
    cfg->tp = l->tp;
    cfg->pp = l->pp;
    cfg->micro_batches = l->micro_batches;
    cfg->net_alpha = net->alpha;
    cfg->net_beta = net->beta;
    if (px_check_parallel_flags(l->tp, l->pp, cfg->comm, px_sparsity_requested(&cli->sparsity),
                                l->why, sizeof l->why) != 0)
        return -1;
    px_bindings b = cli->bindings; /* the batch of a group (tp x pp ranks) */
    b.batch *= (int64_t)l->tp * l->pp;
    return px_train_program_or_why(cli->model, &b, cfg, out, l->why, sizeof l->why);
}

/* What one stage of a layout computes and exchanges in a step (the whole
 * program without --pp; the nodes with no stage, which every rank runs,
 * apart). */
typedef struct stage_cost {
    double mb_work, once_work; /* FLOPs: its micro-batches' passes, the rest of its step */
    double group_seconds;
} stage_cost;

static int ceil_log2(int n) {
    int k = 0;
    while ((1 << k) < n) k++;
    return k;
}

/* The nodes of the data-parallel exchange (passes/comm.c): no compute. */
static int data_parallel_exchange(const px_node *n) {
    switch (n->op) {
    case PX_OP_AllReduceStart:
    case PX_OP_AllReduceWait:
    case PX_OP_PSPull:
    case PX_OP_PSPush:
    case PX_OP_PSPushDense: return 1;
    default: return 0;
    }
}

/* Work and exchanges per stage (one stage without --pp) of graph g: st and
 * all, with their bytes in bytes and bytes_all (layout_traffic.h). */
static void tally(const px_graph *g, const px_layout *l, const px_layout_net *net, stage_cost *st,
                  stage_cost *all, px_stage_bytes *bytes, px_stage_bytes *bytes_all) {
    int group_local = net->ranks_per_host % l->tp == 0;
    int pipe_local = net->ranks_per_host % (l->tp * l->pp) == 0;
    for (int k = 0; k < g->n_nodes; k++) {
        const px_node *n = g->nodes[k];
        if (n->dead) continue;
        if (px_stage_bytes_add(n, l->pp, !pipe_local, bytes, bytes_all)) continue;
        int64_t stage =
            l->pp > 1 && px_node_attr(n, "pp_stage") ? px_attr_int(n, "pp_stage", 0) : -1;
        int has_stage = stage >= 0 && stage < l->pp;
        stage_cost *c = has_stage ? &st[stage] : all;
        if (data_parallel_exchange(n)) continue; /* px_predict_traffic's */
        int64_t values = px_tp_group_values(n);
        if (values > 0) {
            if (!group_local)
                c->group_seconds += ceil_log2(l->tp) * net->alpha +
                                    (double)(l->tp - 1) * 4.0 * (double)values * net->beta;
        }
        double flops = px_node_flops(n);
        int64_t phase = px_attr_int(n, "pp_phase", PX_PP_PRE);
        if (has_stage && (phase == PX_PP_FWD || phase == PX_PP_BWD))
            c->mb_work += flops;
        else
            c->once_work += flops;
    }
}

/* Fills l's figures from its program g; its work in FLOPs. */
static void predict(const px_graph *g, px_train_plan *plan, const px_train_config *cfg,
                    const px_layout_net *net, px_layout *l) {
    int S = l->pp, M = l->micro_batches > 0 ? l->micro_batches : 1;
    stage_cost *st = calloc((size_t)S, sizeof *st), all = {0};
    px_stage_bytes *bytes = calloc((size_t)S, sizeof *bytes), bytes_all = {0};
    if (!st || !bytes) {
        snprintf(l->why, sizeof l->why, "out of memory");
        free(st);
        free(bytes);
        return;
    }
    tally(g, l, net, st, &all, bytes, &bytes_all);
    double mb_sum = 0, mb_max = 0, once_max = 0, group = all.group_seconds, xfer = 0;
    for (int s = 0; s < S; s++) {
        double per_mb = st[s].mb_work / M;
        mb_sum += per_mb;
        mb_max = fmax(mb_max, per_mb);
        once_max = fmax(once_max, st[s].once_work);
        group = fmax(group, all.group_seconds + st[s].group_seconds);
        /* links are full duplex and sends do not wait: the larger direction */
        xfer = fmax(xfer, (double)bytes[s].messages * net->alpha +
                              (double)(bytes[s].out > bytes[s].in ? bytes[s].out : bytes[s].in) *
                                  net->beta);
    }
    /* 1F1B: the first micro-batch crosses every stage, the others follow
     * the slowest; with one stage, simply all of its work */
    l->work = all.once_work + once_max + mb_sum + (M - 1) * mb_max;
    l->bubble = S > 1 ? (double)(S - 1) / (double)(M + S - 1) : 0;
    px_traffic_prediction t;
    px_predict_traffic(plan, net->ranks, cfg, &t);
    l->dp_seconds = px_traffic_seconds(&t, cfg->comm);
    /* The bytes of the busiest rank: each stage's ranks move their own
     * stage's AllReduce, group sums and transfers (one stage without --pp) */
    double busiest = -1;
    for (int s = 0; s < S; s++) {
        px_traffic_prediction one;
        px_predict_stage_traffic(plan, net->ranks, cfg, s, &one);
        double dp = (double)px_traffic_bytes(&one, cfg->comm);
        double group = (double)(bytes_all.group + bytes[s].group),
               xfers = (double)(bytes[s].out + bytes[s].in);
        if (dp + group + xfers > busiest) {
            busiest = dp + group + xfers;
            l->dp_bytes = dp, l->group_bytes = group, l->stage_bytes = xfers;
        }
    }
    l->group_seconds = group;
    l->stage_seconds = xfer;
    free(st);
    free(bytes);
}

static void name_layout(px_layout *l) {
    int len = 0;
    l->name[0] = '\0';
    if (l->tp > 1) len += snprintf(l->name + len, sizeof l->name - (size_t)len, "--tp %d", l->tp);
    if (l->pp > 1)
        snprintf(l->name + len, sizeof l->name - (size_t)len, "%s--pp %d --micro-batches %d",
                 len ? " " : "", l->pp, l->micro_batches);
    if (l->tp <= 1 && l->pp <= 1) snprintf(l->name, sizeof l->name, "data parallel");
}

/* Builds and predicts layout l; a failure is its why, not an error (but
 * for data parallelism, which every plan has). */
static int layout(const px_cli *cli, const px_layout_net *net, px_layout *l, px_diag *d) {
    px_built_program p = {0};
    px_train_config cfg;
    int rc = 0;
    if (build(cli, l, net, &cfg, &p) == 0)
        predict(p.graph, &p.plan, &cfg, net, l);
    else if (l->tp <= 1 && l->pp <= 1)
        rc = px_error(d, "plan: --layouts: data parallelism: %s", l->why);
    px_built_program_free(&p);
    return rc;
}

int px_plan_layouts(const px_cli *cli, const px_layout_net *net, px_layout *out, px_diag *d) {
    int n = 0, N = net->ranks;
    for (int k = 1; k <= N && n < PX_MAX_LAYOUTS; k++) { /* k = tp x pp ranks a group */
        if (N % k) continue;
        for (int tp = k; tp >= 1 && n < PX_MAX_LAYOUTS; tp--) {
            if (k % tp) continue;
            px_layout *l = &out[n++];
            memset(l, 0, sizeof *l);
            l->tp = tp;
            l->pp = k / tp;
            l->micro_batches =
                l->pp <= 1 ? 0
                : net->micro_batches
                    ? net->micro_batches
                    : px_layout_default_micro_batches(l->pp, cli->bindings.batch * k);
            name_layout(l);
            if (layout(cli, net, l, d) != 0) return -1;
        }
    }
    const px_layout *dp = &out[0];
    for (int i = 0; i < n; i++) {
        px_layout *l = &out[i];
        if (l->why[0]) continue;
        l->compute = dp->work > 0 ? net->compute * l->work / dp->work : net->compute;
        l->step = l->compute + l->dp_seconds + l->group_seconds + l->stage_seconds;
        l->samples_per_second = (double)N * (double)cli->bindings.batch / l->step;
    }
    return n;
}

const px_layout *px_best_layout(const px_layout *out, int n) {
    const px_layout *best = &out[0];
    for (int i = 1; i < n; i++)
        if (!out[i].why[0] && out[i].samples_per_second > best->samples_per_second) best = &out[i];
    return best;
}

/* The compile flags of layout l for per-rank batch b: its group's batch. */
static void layout_flags(const px_layout *l, int64_t b, char *out, size_t cap) {
    int64_t k = (int64_t)l->tp * l->pp;
    if (k <= 1)
        snprintf(out, cap, "--batch %lld", (long long)b);
    else
        snprintf(out, cap, "%s --batch %lld", l->name, (long long)(k * b));
}

void px_print_layouts_text(FILE *f, const px_layout *l, int n, int hosts, int ranks, int64_t batch,
                           const char *comm) {
    fprintf(f,
            "layouts at %d hosts (%d ranks, global batch %lld: each layout trains the same "
            "numbers; --comm %s; a group of tp x pp ranks takes tp x pp x %lld samples):\n",
            hosts, ranks, (long long)ranks * batch, comm, (long long)batch);
    fprintf(f, "  %-34s %10s %11s %11s %11s %11s %7s %9s\n", "layout", "samples/s", "compute",
            "allreduce", "group sums", "stages", "bubble", "MB/step");
    for (int i = 0; i < n; i++) {
        if (l[i].why[0]) {
            fprintf(f, "  %-34s not predicted: %s\n", l[i].name, l[i].why);
            continue;
        }
        fprintf(f, "  %-34s %10.4g %8.3g ms %8.3g ms %8.3g ms %8.3g ms %6.1f%% %9.3f\n", l[i].name,
                l[i].samples_per_second, 1e3 * l[i].compute, 1e3 * l[i].dp_seconds,
                1e3 * l[i].group_seconds, 1e3 * l[i].stage_seconds, 100 * l[i].bubble,
                (l[i].dp_bytes + l[i].group_bytes + l[i].stage_bytes) / 1e6);
    }
    const px_layout *best = px_best_layout(l, n);
    char flags[128];
    layout_flags(best, batch, flags, sizeof flags);
    fprintf(f,
            "  (compute: the data-parallel step scaled by predicted FLOPs, the 1F1B bubble "
            "included; MB/step: sent + received by the busiest rank)\n"
            "fastest layout at %d hosts: %s, %.4g samples/s, %.2fx data parallelism (compile "
            "with %s).\n",
            hosts, best->name, best->samples_per_second,
            best->samples_per_second / l[0].samples_per_second, flags);
}

void px_print_layouts_json(FILE *f, const px_layout *l, int n, int64_t batch) {
    fprintf(f, ",\n \"layouts\": [");
    for (int i = 0; i < n; i++) {
        char flags[128];
        layout_flags(&l[i], batch, flags, sizeof flags);
        fprintf(f,
                "%s\n  {\"name\": \"%s\", \"tp\": %d, \"pp\": %d, \"micro_batches\": %d, "
                "\"compile_flags\": \"%s\", \"predicted\": %s",
                i ? "," : "", l[i].name, l[i].tp, l[i].pp, l[i].micro_batches, flags,
                l[i].why[0] ? "false" : "true");
        if (l[i].why[0]) {
            fputs(", \"why\": ", f);
            px_print_json_string(f, l[i].why);
        } else {
            fprintf(f,
                    ", \"samples_per_second\": %.9g, \"step_seconds\": %.9g, \"compute_seconds\": "
                    "%.9g, \"work_flops\": %.9g, \"allreduce_seconds\": %.9g, "
                    "\"group_sum_seconds\": %.9g, \"stage_seconds\": %.9g, \"allreduce_bytes\": "
                    "%.9g, \"group_sum_bytes\": %.9g, \"stage_bytes\": %.9g, \"bubble\": %.9g",
                    l[i].samples_per_second, l[i].step, l[i].compute, l[i].work, l[i].dp_seconds,
                    l[i].group_seconds, l[i].stage_seconds, l[i].dp_bytes, l[i].group_bytes,
                    l[i].stage_bytes, l[i].bubble);
        }
        fputc('}', f);
    }
    fprintf(f, "],\n \"fastest_layout\": \"%s\"", px_best_layout(l, n)->name);
}
