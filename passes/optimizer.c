/* The optimizer pass: autodiff, then one ai.parallax update node per trained
 * variable, appended after the backward pass so that every read of a
 * variable (forward and backward) happens before its update. */
#include "train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The hyper-parameters as attributes: for reading the graph (inspect, the
 * ONNX export); the program takes its values from the configuration. */
static void set_optimizer_attrs(px_node *n, int var, int no_decay, const px_train_config *cfg) {
    px_node_set_attr_int(n, "var", var);
    px_node_set_attr_string(n, "optimizer", px_optim_kind_name(cfg->optimizer));
    px_node_set_attr_float(n, "lr", (float)cfg->lr);
    if (cfg->optimizer == PX_OPTIM_MOMENTUM) {
        px_node_set_attr_float(n, "momentum", (float)cfg->momentum);
        px_node_set_attr_int(n, "nesterov", cfg->nesterov);
    }
    if (cfg->optimizer == PX_OPTIM_ADAM || cfg->optimizer == PX_OPTIM_ADAMW) {
        px_node_set_attr_float(n, "beta1", (float)cfg->beta1);
        px_node_set_attr_float(n, "beta2", (float)cfg->beta2);
    }
    if (cfg->optimizer == PX_OPTIM_RMSPROP) px_node_set_attr_float(n, "alpha", (float)cfg->alpha);
    if (cfg->optimizer != PX_OPTIM_SGD && cfg->optimizer != PX_OPTIM_MOMENTUM)
        px_node_set_attr_float(n, "epsilon", (float)cfg->epsilon);
    if (cfg->weight_decay != 0 && !no_decay)
        px_node_set_attr_float(n, "weight_decay", (float)cfg->weight_decay);
}

static px_value *scalar(px_graph *g, double v, px_diag *d) {
    px_shape s = px_shape_scalar();
    px_tensor *t = px_tensor_new(PX_F32, &s, d);
    if (!t) return NULL;
    px_tensor_set_f64(t, 0, v);
    return px_graph_add_constant(g, "bn/const", t);
}

static px_value *binary(px_graph *g, const char *op, px_value *a, px_value *b, const char *name) {
    px_value *out = px_graph_new_value(g, name, a->dtype, &a->shape);
    px_value *ins[2] = {a, b};
    px_graph_add_node(g, op, "", name, 2, ins, 1, &out);
    return out;
}

/* ONNX's running variance mixes in the batch's biased variance; PyTorch's
 * module mixes in the unbiased one (n/(n-1) times it). The models come from
 * PyTorch, so the step follows PyTorch:
 *   new = m*old + (onnx_new - m*old) * n/(n-1). */
static px_value *unbiased_running_var(px_graph *g, const px_node *bn, px_value *old,
                                      px_value *onnx_new, px_diag *d) {
    const px_value *x = bn->inputs[0];
    int64_t n = x->shape.rank >= 2 && x->shape.dims[1] > 0
                    ? px_shape_numel(&x->shape) / x->shape.dims[1]
                    : 0;
    if (n < 2) return onnx_new;
    double m = px_attr_float(bn, "momentum", 0.9f);
    px_value *mc = scalar(g, m, d), *fc = scalar(g, (double)n / (double)(n - 1), d);
    if (!mc || !fc) return NULL;
    px_value *kept = binary(g, "Mul", old, mc, "bn/running_var_kept");
    px_value *added = binary(g, "Sub", onnx_new, kept, "bn/running_var_batch");
    added = binary(g, "Mul", added, fc, "bn/running_var_unbiased");
    return binary(g, "Add", kept, added, "bn/running_var_new");
}

/* BatchNormalization in training mode computes new running statistics
 * (outputs 1 and 2); they replace the state inputs 3 and 4 after the step,
 * as PyTorch's module does in train(). */
static int assign_running_stats(px_graph *g, const px_train_plan *plan, px_diag *d) {
    int n_nodes = g->n_nodes;
    for (int i = 0; i < n_nodes; i++) {
        px_node *n = g->nodes[i];
        if (n->dead || n->op != PX_OP_BatchNormalization || px_attr_int(n, "training_mode", 0) == 0)
            continue;
        for (int s = 1; s <= 2 && s < n->n_outputs; s++) {
            px_value *state = n->n_inputs > 2 + s ? n->inputs[2 + s] : NULL, *out = n->outputs[s];
            if (!out || !state) continue;
            int var = px_plan_var_of(plan, state);
            if (var < 0) {
                if (state->kind == PX_VALUE_INITIALIZER) continue; /* frozen: stays as exported */
                px_error(d,
                         "BatchNormalization '%s': running statistic '%s' is not an "
                         "initializer, so it cannot be updated",
                         n->name ? n->name : "", state->name);
                return -1;
            }
            if (s == 2 && !(out = unbiased_running_var(g, n, state, out, d))) return -1;
            char name[300];
            snprintf(name, sizeof name, "assign/%s", state->name);
            px_value *ins[2] = {state, out};
            px_graph_add_node(g, "Assign", PX_DOMAIN_PARALLAX, name, 2, ins, 0, NULL);
        }
    }
    return 0;
}

/* A masked weight's update: SparseUpdate(W, G) of its compact gradient, made
 * by SparseMatMulGradWeight or, on the dense path, packed from the dense one
 * (SparsePackGrad, where the gradient is complete). */
static px_node *masked_update(px_graph *g, const px_train_plan *plan, const px_train_var *tv,
                              px_value *grad, const char *name, px_diag *d) {
    const px_masked_plan *m = tv->masked;
    int mask = (int)(m - plan->masked); /* its number in the program's masked table */
    if (!grad) {
        px_error(d, "internal error: masked weight '%s' has no dense gradient", tv->value->name);
        return NULL;
    }
    px_value *compact = grad;
    if (m->dense_path) {
        px_shape s = px_shape_make(1, &m->nnz);
        char vname[300];
        snprintf(vname, sizeof vname, "%s.compact_grad", tv->value->name);
        compact = px_graph_new_value(g, vname, PX_F32, &s);
        px_value *in = grad;
        int pos = px_graph_after_producers(1, &in);
        snprintf(vname, sizeof vname, "pack/%s", tv->value->name);
        px_node *p = px_graph_insert_node(g, pos, "SparsePackGrad", PX_DOMAIN_PARALLAX, vname, 1,
                                          &in, 1, &compact);
        px_node_set_attr_int(p, "nnz", m->nnz);
        px_node_set_attr_int(p, "rows", m->rows);
        px_node_set_attr_int(p, "mask", mask);
    } else if (px_shape_numel(&grad->shape) != m->nnz) {
        px_error(d, "internal error: the gradient of masked weight '%s' is not compact",
                 tv->value->name);
        return NULL;
    }
    px_value *ins[2] = {tv->value, compact};
    px_node *n = px_graph_add_node(g, "SparseUpdate", PX_DOMAIN_PARALLAX, name, 2, ins, 0, NULL);
    px_node_set_attr_int(n, "mask", mask);
    return n;
}

int px_pass_optimizer(px_graph *g, const px_train_config *cfg, px_train_plan *plan, px_diag *d) {
    int rc = -1;
    px_grads grads = {0};
    for (int i = 0; i < plan->n_vars; i++) {
        px_train_var *tv = &plan->vars[i];
        if (tv->value->dtype != PX_F32)
            return px_error(d,
                            "variable '%s' is %s: training supports float32 variables (freeze it "
                            "with --freeze %s)",
                            tv->value->name, px_dtype_name(tv->value->dtype), tv->value->name);
        tv->value->is_variable = 1; /* writable storage, even when it gets no gradient */
        tv->has_grad = 0;
    }
    if (px_pass_autodiff_plan(g, &cfg->spec, plan, &grads, d)) goto cleanup;
    plan->loss = grads.loss;
    for (int k = 0; k < grads.n; k++) {
        const px_grad *gr = &grads.items[k];
        int var = px_plan_var_of(plan, gr->var);
        /* autodiff gives exactly the plan's sparse variables row sets */
        if (var < 0 || (plan->vars[var].cls == PX_VAR_SPARSE) != !gr->grad) {
            px_error(d, "internal error: gradient of '%s' does not match the variable plan",
                     gr->var->name);
            goto cleanup;
        }
        px_train_var *tv = &plan->vars[var];
        char name[256];
        snprintf(name, sizeof name, "update/%s", tv->value->name);
        px_node *n;
        if (tv->masked) {
            if (!(n = masked_update(g, plan, tv, gr->grad, name, d))) goto cleanup;
        } else if (gr->grad) {
            px_value *ins[2] = {tv->value, gr->grad};
            n = px_graph_add_node(g, "Update", PX_DOMAIN_PARALLAX, name, 2, ins, 0, NULL);
        } else {
            px_value *ins[4] = {tv->value, gr->rows_index, gr->rows_value, gr->rows_count};
            n = px_graph_add_node(g, "RowUpdate", PX_DOMAIN_PARALLAX, name, 4, ins, 0, NULL);
        }
        set_optimizer_attrs(n, var, tv->no_decay, cfg);
        tv->has_grad = 1;
    }
    if (assign_running_stats(g, plan, d)) goto cleanup;
    rc = 0;
cleanup:
    px_grads_free(&grads);
    return rc;
}
