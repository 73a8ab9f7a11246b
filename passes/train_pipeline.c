/* The training pipeline (fold, dropout rewrite, variable plan, autodiff +
 * optimizer, sync choice, comm). The cost model (traffic prediction, --comm
 * auto's choice) is traffic.c. */
#include "dropout_rewrite.h"
#include "pipeline_parallel.h"
#include "tensor_parallel.h"
#include "train.h"

#include <fnmatch.h>
#include <stdio.h>

/* --no-decay: marks the variables a pattern matches; a pattern that matches
 * none is an error (a typo would otherwise decay what it meant to spare). */
static int plan_no_decay(px_train_plan *plan, const px_train_config *cfg, px_diag *d) {
    for (int k = 0; k < cfg->n_no_decay; k++) {
        int matched = 0;
        for (int i = 0; i < plan->n_vars; i++)
            if (fnmatch(cfg->no_decay[k], plan->vars[i].value->name, 0) == 0) {
                plan->vars[i].no_decay = 1;
                matched++;
            }
        if (matched) continue;
        char list[1024] = "";
        size_t len = 0;
        for (int i = 0; i < plan->n_vars && len < sizeof list; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "",
                                    plan->vars[i].value->name);
        return px_error(d, "--no-decay: '%s' matches no trained variable (they are: %s)",
                        cfg->no_decay[k], list);
    }
    return 0;
}

int px_pipeline_train(px_graph *g, const px_bindings *b, const px_train_config *cfg, int parallel,
                      px_train_plan *plan, px_diag *d) {
    px_bindings micro; /* --pp: the model is folded at the micro-batch */
    if (px_pp_micro_bindings(b, cfg, &micro, d) || px_pipeline_fold(g, &micro, d)) return -1;
    if (px_pass_dropout_rewrite(g, d) || px_verify_after(g, "dropout_rewrite", d)) return -1;
    if (px_plan_variables(g, &cfg->spec, plan, d) || plan_no_decay(plan, cfg, d)) return -1;
    if (px_plan_weight_sparsity(g, &cfg->sparsity, plan, d)) return -1;
    if (px_pass_sparsify(g, plan, d) || px_verify_after(g, "sparsify", d)) return -1;
    if (px_pass_tensor_parallel(g, cfg->tp, plan, d) || px_verify_after(g, "tensor_parallel", d))
        return -1;
    if (px_pass_pipeline_split(g, cfg, plan, d) || px_verify_after(g, "pipeline_split", d))
        return -1;
    if (px_pass_loss_denominators(g, cfg, plan, d) || px_verify_after(g, "loss_denominators", d))
        return -1;
    if (px_pass_optimizer(g, cfg, plan, d) || px_verify_after(g, "optimizer", d)) return -1;
    if (px_pass_pipeline_grads(g, plan, d) || px_verify_after(g, "pipeline_grads", d)) return -1;
    px_plan_sync(plan, cfg);
    if (parallel && (px_pass_comm(g, cfg, plan, d) || px_verify_after(g, "comm", d))) return -1;
    if (px_pass_pipeline_schedule(g, plan, d)) return -1;
    if (px_pass_dce(g, d)) return -1;
    if (px_graph_verify(g, d)) return -1;
    return 0;
}
