/* --stats of the masked weights (sparse_stats.h). The kernels run on the
 * rank's compute thread only. */
#include "sparse_stats.h"

#include "dst.h"
#include "masked.h"
#include "px_train.h"

static int64_t flops;

void px_sparse_count_flops(int64_t n) {
    if (!px_train.eval_pass) flops += n;
}

void px_sparse_flops_reset(void) {
    flops = 0;
}

void px_sparse_stats_json(FILE *f, int64_t steps) {
    int64_t n = px_sparse_count();
    if (!n) return;
    int64_t live = 0, total = 0;
    fprintf(f, " \"sparse\": {\"weights\": [");
    for (int64_t i = 0; i < n; i++) {
        const px_masked *m = px_sparse_get(i);
        const px_masked_desc *d = m->d;
        live += d->nnz;
        total += m->numel;
        fprintf(f,
                "%s\n   {\"name\": \"%s\", \"live\": %lld, \"total\": %lld, \"sparsity\": %.9g, "
                "\"pattern\": \"%s\", \"path\": \"%s\"}",
                i ? "," : "", m->name, (long long)d->nnz, (long long)m->numel,
                1.0 - (double)d->nnz / (double)m->numel, px_sparsity_pattern_name(d->pattern),
                d->dense_path ? "dense" : "sparse");
    }
    fprintf(f,
            "],\n  \"live_weights\": %lld, \"total_weights\": %lld, \"flops_per_step\": %.17g, "
            "\"dst\": \"%s\"},\n",
            (long long)live, (long long)total, steps > 0 ? (double)flops / (double)steps : 0.0,
            px_dst_kind_name(px_dst_options()->kind));
}
