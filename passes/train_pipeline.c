/* The training pipeline (fold, autodiff + optimizer, comm) and the traffic
 * prediction that `inspect` reports. */
#include "train.h"

int px_pipeline_train(px_graph *g, const px_bindings *b, const px_train_config *cfg, int parallel,
                      px_train_plan *plan, px_diag *d) {
    if (px_pipeline_fold(g, b, d)) return -1;
    if (px_pass_optimizer(g, cfg, plan, d)) return -1;
    if (parallel && px_pass_comm(g, cfg, plan, d)) return -1;
    if (px_pass_dce(g, d)) return -1;
    if (px_graph_verify(g, d)) return -1;
    return 0;
}

/* Per rank and step, sent + received, assuming one rank per node (shards on
 * every rank, rows spread evenly) so a fraction f = (N-1)/N of every exchange
 * crosses the network:
 *   ring AllReduce of S bytes:            2·f·S sent, as much received
 *   PS variable, U rows of R bytes each:  pull: f·U·8 index bytes out and f·U·R row
 *                                         bytes in as a client, the mirror image as a
 *                                         server; push: f·U·(8+R) out as a client, in
 *                                         as a server: 4·f·U·(8+R) in all
 *   dense PS variable of S bytes:         whole rows both ways: 4·f·S
 * plus, per sparse PS variable, the 8-byte row counts each pull and push
 * exchange with every other shard first: 32·(N-1); and the loss average:
 * 8 bytes sent and 8 received. U is lookups_per_step capped at the row count:
 * an upper bound of the unique rows a batch touches. (runtime/comm/stats.c
 * counts the same way.) */
/* Bytes per rank of one exchange, without the (N-1)/N factor. */
static double ps_sparse_bytes(const px_train_var *tv, double *allreduce_bytes) {
    const px_shape *s = &tv->value->shape;
    double bytes = (double)px_shape_numel(s) * 4, rows = (double)s->dims[0];
    double row_bytes = bytes / rows;
    double u = tv->lookups_per_step < rows ? (double)tv->lookups_per_step : rows;
    *allreduce_bytes = 4 * (bytes + rows * 4); /* densified gradient + touched mask */
    return 4 * u * (8 + row_bytes);
}

int px_sparse_prefers_allreduce(const px_train_var *tv) {
    if (tv->value->shape.rank < 1 || tv->value->shape.dims[0] <= 0) return 0;
    double ar, ps = ps_sparse_bytes(tv, &ar);
    return ar < ps;
}

void px_predict_traffic(const px_train_plan *plan, int ranks, px_traffic_prediction *out) {
    double f = ranks > 1 ? (double)(ranks - 1) / ranks : 0.0;
    double hybrid = 0, allreduce = 0, ps = 0;
    for (int v = 0; v < plan->n_vars; v++) {
        const px_train_var *tv = &plan->vars[v];
        if (!tv->has_grad) continue;
        const px_shape *s = &tv->value->shape;
        double bytes = (double)px_shape_numel(s) * 4;
        if (tv->cls == PX_VAR_SPARSE && s->rank >= 1 && s->dims[0] > 0) {
            double ar, ps_bytes = ps_sparse_bytes(tv, &ar), counts = 32.0 * (ranks - 1);
            hybrid += f * ps_bytes + counts;
            ps += f * ps_bytes + counts;
            allreduce += f * ar;
        } else {
            hybrid += 4 * f * bytes;
            allreduce += 4 * f * bytes;
            ps += 4 * f * bytes;
        }
    }
    if (ranks > 1) {
        hybrid += 16;
        allreduce += 16;
        ps += 16;
    }
    out->hybrid = (int64_t)(hybrid + 0.5);
    out->allreduce = (int64_t)(allreduce + 0.5);
    out->ps = (int64_t)(ps + 0.5);
}
