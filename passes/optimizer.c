/* The optimizer pass: autodiff, then one ai.parallax update node per trained
 * variable, appended after the backward pass so that every read of a
 * variable (forward and backward) happens before its update. */
#include "train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const optim_names[] = {"sgd", "momentum", "adam", "adagrad"};
static const char *const comm_names[] = {"hybrid", "allreduce", "ps", "auto"};
static const char *const sync_names[] = {"none", "allreduce", "ps"};

const char *px_optim_name(px_optim o) {
    return (unsigned)o < 4 ? optim_names[o] : "?";
}
const char *px_comm_kind_name(px_comm_kind c) {
    return (unsigned)c < 4 ? comm_names[c] : "?";
}
const char *px_sync_name(px_sync s) {
    return (unsigned)s < 3 ? sync_names[s] : "?";
}

void px_train_plan_free(px_train_plan *plan) {
    if (!plan) return;
    free(plan->vars);
    free(plan->bucket_bytes);
    memset(plan, 0, sizeof *plan);
}

static int is_frozen(const px_train_config *cfg, const char *name) {
    for (int i = 0; i < cfg->spec.n_freeze; i++)
        if (!strcmp(cfg->spec.freeze[i], name)) return 1;
    return 0;
}

/* The hyper-parameters as attributes: for reading the graph (inspect, the
 * ONNX export); the program takes its values from the configuration. */
static void set_optimizer_attrs(px_node *n, int var, const px_train_config *cfg) {
    px_node_set_attr_int(n, "var", var);
    px_node_set_attr_string(n, "optimizer", px_optim_name(cfg->optimizer));
    px_node_set_attr_float(n, "lr", (float)cfg->lr);
    if (cfg->optimizer == PX_OPTIM_KIND_MOMENTUM) {
        px_node_set_attr_float(n, "momentum", (float)cfg->momentum);
        px_node_set_attr_int(n, "nesterov", cfg->nesterov);
    }
    if (cfg->optimizer == PX_OPTIM_KIND_ADAM) {
        px_node_set_attr_float(n, "beta1", (float)cfg->beta1);
        px_node_set_attr_float(n, "beta2", (float)cfg->beta2);
    }
    if (cfg->optimizer == PX_OPTIM_KIND_ADAM || cfg->optimizer == PX_OPTIM_KIND_ADAGRAD)
        px_node_set_attr_float(n, "epsilon", (float)cfg->epsilon);
    if (cfg->weight_decay != 0) px_node_set_attr_float(n, "weight_decay", (float)cfg->weight_decay);
}

int64_t px_var_lookups_per_step(const px_value *v) {
    int64_t total = 0;
    for (int u = 0; u < v->n_uses; u++) {
        const px_node *n = v->uses[u].node;
        if (n->dead || n->op != PX_OP_Gather || n->n_inputs < 2 || !n->inputs[1]) continue;
        int64_t k = px_shape_numel(&n->inputs[1]->shape);
        if (k > 0) total += k;
    }
    return total;
}

int px_pass_optimizer(px_graph *g, const px_train_config *cfg, px_train_plan *plan, px_diag *d) {
    px_var_info *info = NULL;
    int n_info = 0, rc = -1;
    px_grads grads = {0};
    memset(plan, 0, sizeof *plan);
    if (px_classify_variables(g, &info, &n_info, d)) return -1;
    for (int i = 0; i < cfg->spec.n_freeze; i++)
        if (!px_graph_find_value(g, cfg->spec.freeze[i]) ||
            px_graph_find_value(g, cfg->spec.freeze[i])->kind != PX_VALUE_INITIALIZER) {
            px_error(d, "--freeze: '%s' is not an initializer of the model", cfg->spec.freeze[i]);
            goto cleanup;
        }
    /* Lookups are counted before autodiff adds backward readers. */
    plan->vars = calloc((size_t)n_info + 1, sizeof *plan->vars);
    if (!plan->vars) {
        px_error(d, "out of memory");
        goto cleanup;
    }
    for (int i = 0; i < n_info; i++) {
        if (is_frozen(cfg, info[i].value->name)) continue;
        if (info[i].value->dtype != PX_F32) {
            px_error(d,
                     "variable '%s' is %s: training supports float32 variables (freeze it with "
                     "--freeze %s)",
                     info[i].value->name, px_dtype_name(info[i].value->dtype), info[i].value->name);
            goto cleanup;
        }
        px_train_var *tv = &plan->vars[plan->n_vars++];
        tv->value = info[i].value;
        tv->cls = info[i].cls;
        tv->dense_reason = info[i].dense_reason;
        tv->partitions = 1;
        tv->lookups_per_step =
            tv->cls == PX_VAR_SPARSE ? px_var_lookups_per_step(info[i].value) : 0;
        tv->value->is_variable = 1; /* writable storage, even when it gets no gradient */
    }
    if (px_pass_autodiff(g, &cfg->spec, &grads, d)) goto cleanup;
    plan->loss = grads.loss;
    for (int k = 0; k < grads.n; k++) {
        const px_grad *gr = &grads.items[k];
        int var = -1;
        for (int i = 0; i < plan->n_vars; i++)
            if (plan->vars[i].value == gr->var) var = i;
        if (var < 0) {
            px_error(d, "internal error: gradient for '%s', which is not a trainable variable",
                     gr->var->name);
            goto cleanup;
        }
        px_train_var *tv = &plan->vars[var];
        char name[256];
        snprintf(name, sizeof name, "update/%s", tv->value->name);
        px_node *n;
        if (gr->grad) {
            if (tv->cls == PX_VAR_SPARSE) tv->cls = PX_VAR_DENSE; /* autodiff saw a dense use */
            px_value *ins[2] = {tv->value, gr->grad};
            n = px_graph_add_node(g, "Update", PX_DOMAIN_PARALLAX, name, 2, ins, 0, NULL);
        } else {
            px_value *ins[4] = {tv->value, gr->rows_index, gr->rows_value, gr->rows_count};
            n = px_graph_add_node(g, "RowUpdate", PX_DOMAIN_PARALLAX, name, 4, ins, 0, NULL);
        }
        set_optimizer_attrs(n, var, cfg);
        tv->has_grad = 1;
    }
    rc = 0;
cleanup:
    if (rc) px_train_plan_free(plan);
    px_grads_free(&grads);
    free(info);
    return rc;
}
