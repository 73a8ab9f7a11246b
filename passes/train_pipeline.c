/* The training pipeline (fold, dropout rewrite, variable plan, autodiff +
 * optimizer, sync choice, comm). The cost model (traffic prediction, --comm
 * auto's choice) is traffic.c. */
#include "dropout_rewrite.h"
#include "train.h"

int px_pipeline_train(px_graph *g, const px_bindings *b, const px_train_config *cfg, int parallel,
                      px_train_plan *plan, px_diag *d) {
    if (px_pipeline_fold(g, b, d)) return -1;
    if (px_pass_dropout_rewrite(g, d) || px_verify_after(g, "dropout_rewrite", d)) return -1;
    if (px_plan_variables(g, &cfg->spec, plan, d)) return -1;
    if (px_plan_weight_sparsity(g, &cfg->sparsity, plan, d)) return -1;
    if (px_pass_optimizer(g, cfg, plan, d) || px_verify_after(g, "optimizer", d)) return -1;
    px_plan_sync(plan, cfg);
    if (parallel && (px_pass_comm(g, cfg, plan, d) || px_verify_after(g, "comm", d))) return -1;
    if (px_pass_dce(g, d)) return -1;
    if (px_graph_verify(g, d)) return -1;
    return 0;
}
