/* A layout's own exchanges and its prediction per rank (layout_traffic.h). */
#include "layout_traffic.h"

#include "tensor_parallel.h"

#include <stdlib.h>

static int64_t numel(const px_value *v) {
    return v && px_shape_is_static(&v->shape) ? px_shape_numel(&v->shape) : 0;
}

int px_stage_bytes_add(const px_node *n, int pp, int transfers, px_stage_bytes *st,
                       px_stage_bytes *all) {
    int64_t stage = pp > 1 && px_node_attr(n, "pp_stage") ? px_attr_int(n, "pp_stage", 0) : -1;
    if (n->op == PX_OP_PPTransfer || n->op == PX_OP_PPBroadcast) {
        /* a transfer from one stage to another; the broadcast of the loss
         * from its stage to every other */
        int from = (int)px_attr_int(n, "from", 0), to = (int)px_attr_int(n, "to", -1);
        int64_t bytes = 4 * numel(n->n_inputs > 0 ? n->inputs[0] : NULL);
        for (int s = 0; s < pp && transfers && from >= 0 && from < pp; s++) {
            if (s == from || (n->op == PX_OP_PPTransfer && s != to)) continue;
            st[from].out += bytes, st[from].messages += 1;
            st[s].in += bytes, st[s].messages += 1;
        }
        return 1;
    }
    if (px_tp_group_values(n) > 0)
        (stage >= 0 && stage < pp ? &st[stage] : all)->group += px_tp_group_sum_bytes(n);
    return 0;
}

/* A rank's bytes of its layout's own exchanges, for each stage (extra: pp
 * entries, one without --pp): its stage's group sums and transfers and the
 * group sums of the nodes every rank runs. -1 when out of memory. */
static int layout_extra_bytes(const px_graph *g, const px_train_plan *plan, int64_t *extra) {
    int S = plan->pp > 1 ? plan->pp : 1;
    px_stage_bytes *st = calloc((size_t)S, sizeof *st), all = {0};
    if (!st) return -1;
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i]->dead) px_stage_bytes_add(g->nodes[i], plan->pp, 1, st, &all);
    for (int s = 0; s < S; s++) extra[s] = all.group + st[s].group + st[s].out + st[s].in;
    free(st);
    return 0;
}

static void add_bytes(px_traffic_prediction *p, int64_t b) {
    p->hybrid += b, p->allreduce += b, p->ps += b, p->auto_ += b;
}

int px_predict_layout_traffic(const px_graph *g, const px_train_plan *plan, int lo, int hi,
                              const px_train_config *cfg, px_traffic_prediction *by_stage,
                              px_traffic_prediction *mean) {
    int S = plan->pp > 1 ? plan->pp : 1, n = hi - lo + 1;
    int64_t *extra = calloc((size_t)S, sizeof *extra);
    if (!extra || layout_extra_bytes(g, plan, extra)) {
        free(extra);
        return -1;
    }
    px_predict_traffic_range(plan, lo, hi, cfg, mean);
    if (S == 1) { /* one stage: the data-parallel bytes of every rank */
        for (int i = 0; i < n; i++) {
            add_bytes(&mean[i], extra[0]);
            if (by_stage) by_stage[i] = mean[i];
        }
        free(extra);
        return 0;
    }
    px_traffic_prediction *one = by_stage ? by_stage : calloc((size_t)S * n, sizeof *one);
    if (!one) {
        free(extra);
        return -1;
    }
    for (int s = 0; s < S; s++) {
        px_predict_stage_traffic_range(plan, lo, hi, cfg, s, &one[(size_t)s * n]);
        for (int i = 0; i < n; i++) add_bytes(&one[(size_t)s * n + i], extra[s]);
    }
    for (int i = 0; i < n; i++) { /* the stages have as many ranks each */
        px_traffic_prediction sum = {0};
        for (int s = 0; s < S; s++) {
            const px_traffic_prediction *p = &one[(size_t)s * n + i];
            sum.hybrid += p->hybrid, sum.allreduce += p->allreduce, sum.ps += p->ps;
            sum.auto_ += p->auto_;
        }
        mean[i].hybrid = (sum.hybrid + S / 2) / S;
        mean[i].allreduce = (sum.allreduce + S / 2) / S;
        mean[i].ps = (sum.ps + S / 2) / S;
        mean[i].auto_ = (sum.auto_ + S / 2) / S;
    }
    if (one != by_stage) free(one);
    free(extra);
    return 0;
}
