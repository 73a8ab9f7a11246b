/* The variable plan (var_plan.h): sparsity analysis, once. */
#include "var_plan.h"

#include "sparsity.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int px_train_spec_is_frozen(const px_train_spec *spec, const char *name) {
    for (int i = 0; spec && i < spec->n_freeze; i++)
        if (!strcmp(spec->freeze[i], name)) return 1;
    return 0;
}

px_var_sync px_mode_sync(px_comm_mode comm, const px_train_var *tv) {
    /* a masked weight's compact gradient is averaged by AllReduce in every mode */
    if (tv->masked) return PX_SYNC_ALLREDUCE;
    int ps = comm == PX_COMM_MODE_PS || (comm == PX_COMM_MODE_HYBRID && tv->cls == PX_VAR_SPARSE);
    return ps ? PX_SYNC_PS : PX_SYNC_ALLREDUCE;
}

double px_rows_touched_fraction(const px_train_var *tv) {
    if (tv->cls == PX_VAR_DENSE) return 1.0;
    const px_shape *s = &tv->value->shape;
    if (s->rank < 1 || s->dims[0] <= 0 || tv->lookups_per_step <= 0) return -1;
    double f = (double)tv->lookups_per_step / (double)s->dims[0];
    return f < 1 ? f : 1;
}

int64_t px_var_bytes(const px_train_var *v) {
    int64_t n = px_shape_numel(&v->value->shape), bytes;
    if (n < 0 || px_mul_checked(n, (int64_t)px_dtype_size(v->value->dtype), &bytes) != 0) return -1;
    return bytes;
}

int64_t px_var_lookups_per_step(const px_value *v) {
    int64_t total = 0;
    for (int u = 0; u < v->n_uses; u++) {
        const px_node *n = v->uses[u].node;
        /* After the comm pass a PS variable's lookups are its pulls (PSPull(W, idx)
         * -> cache, remap: the Gather reads the cache). */
        int lookup = n->op == PX_OP_Gather || (n->op == PX_OP_PSPull && n->n_outputs == 2);
        if (n->dead || !lookup || n->n_inputs < 2 || !n->inputs[1]) continue;
        int64_t k = px_shape_numel(&n->inputs[1]->shape);
        if (k > 0) total += k;
    }
    return total;
}

/* Every --freeze name must be a float initializer: a typo would otherwise
 * silently train what the user meant to freeze. */
static int check_freeze_names(const px_graph *g, const px_train_spec *spec, px_diag *d) {
    int rc = 0;
    for (int i = 0; spec && i < spec->n_freeze; i++) {
        const px_value *v = px_graph_find_value(g, spec->freeze[i]);
        if (!v || v->kind != PX_VALUE_INITIALIZER)
            rc = px_error(d, "--freeze: '%s' is not an initializer of the model", spec->freeze[i]);
        else if (!px_dtype_is_float(v->dtype))
            rc = px_error(d, "--freeze: initializer '%s' is %s, not float: it is never trained",
                          spec->freeze[i], px_dtype_name(v->dtype));
    }
    return rc;
}

/* var_index: open addressing on the value's address, index + 1 per slot
 * (0: empty), at most half full. */
typedef struct var_index {
    size_t cap;
    const px_value **keys;
    int *vars;
} var_index;

static size_t slot_of(const var_index *ix, const px_value *v) {
    uint64_t h = (uint64_t)(uintptr_t)v * 0x9e3779b97f4a7c15ull;
    size_t j = (size_t)(h >> 17) & (ix->cap - 1);
    while (ix->keys[j] && ix->keys[j] != v) j = (j + 1) & (ix->cap - 1);
    return j;
}

static var_index *index_vars(const px_train_plan *plan) {
    var_index *ix = calloc(1, sizeof *ix);
    if (!ix) return NULL;
    ix->cap = 16;
    while (ix->cap < 2 * (size_t)plan->n_vars) ix->cap *= 2;
    ix->keys = calloc(ix->cap, sizeof *ix->keys);
    ix->vars = calloc(ix->cap, sizeof *ix->vars);
    if (!ix->keys || !ix->vars) {
        free(ix->keys);
        free(ix->vars);
        free(ix);
        return NULL;
    }
    for (int i = 0; i < plan->n_vars; i++) {
        size_t j = slot_of(ix, plan->vars[i].value);
        ix->keys[j] = plan->vars[i].value;
        ix->vars[j] = i;
    }
    return ix;
}

static void free_index(var_index *ix) {
    if (!ix) return;
    free(ix->keys);
    free(ix->vars);
    free(ix);
}

int px_plan_var_of(const px_train_plan *plan, const px_value *v) {
    const var_index *ix = plan->var_index;
    if (!v) return -1;
    if (!ix) {
        for (int i = 0; i < plan->n_vars; i++)
            if (plan->vars[i].value == v) return i;
        return -1;
    }
    size_t j = slot_of(ix, v);
    return ix->keys[j] ? ix->vars[j] : -1;
}

int px_is_running_statistic(const px_value *v) {
    for (int u = 0; u < v->n_uses; u++) {
        const px_node *n = v->uses[u].node;
        if (!n->dead && n->op == PX_OP_BatchNormalization && v->uses[u].index >= 3 &&
            px_attr_int(n, "training_mode", 0) != 0)
            return 1;
    }
    return 0;
}

/* Whether the metadata leaves v out of the variables. */
static int left_out_by_meta(const px_model_meta *m, const px_value *v) {
    if (!m) return 0;
    if (px_model_meta_is_tied_copy(m, v->name)) return 1;
    return m->has_trainable && !px_model_meta_is_trainable(m, v->name) &&
           !px_is_running_statistic(v);
}

/* The metadata's tied copies of the plan's variables (copies of frozen
 * initializers keep their own, fixed, values). */
static int plan_ties(const px_graph *g, const px_model_meta *m, px_train_plan *plan, px_diag *d) {
    if (!m || !m->n_ties) return 0;
    plan->tied = calloc((size_t)m->n_ties, sizeof *plan->tied);
    if (!plan->tied) return px_error(d, "out of memory");
    for (int i = 0; i < m->n_ties; i++) {
        const px_tie *t = &m->ties[i];
        for (int k = 0; k < plan->n_vars; k++) {
            if (strcmp(plan->vars[k].value->name, t->of) != 0) continue;
            px_train_tie *pt = &plan->tied[plan->n_tied++];
            pt->copy = px_graph_find_value(g, t->copy);
            pt->var = k;
            pt->n_perm = t->n_perm;
            memcpy(pt->perm, t->perm, sizeof pt->perm);
        }
    }
    return 0;
}

int px_plan_variables(const px_graph *g, const px_train_spec *spec, px_train_plan *plan,
                      px_diag *d) {
    px_var_info *info = NULL;
    int n_info = 0;
    memset(plan, 0, sizeof *plan);
    if (check_freeze_names(g, spec, d) || px_classify_variables(g, &info, &n_info, d)) return -1;
    plan->vars = calloc((size_t)n_info + 1, sizeof *plan->vars);
    if (!plan->vars) {
        free(info);
        return px_error(d, "out of memory");
    }
    for (int i = 0; i < n_info; i++) {
        if (px_train_spec_is_frozen(spec, info[i].value->name)) continue;
        if (left_out_by_meta(spec ? spec->meta : NULL, info[i].value)) continue;
        px_train_var *tv = &plan->vars[plan->n_vars++];
        tv->value = info[i].value;
        tv->cls = info[i].cls;
        tv->n_gathers = info[i].n_gathers;
        tv->dense_reason = info[i].dense_reason;
        tv->dense_node = info[i].dense_node;
        /* Counted before autodiff adds backward readers. */
        tv->lookups_per_step = tv->cls == PX_VAR_SPARSE ? px_var_lookups_per_step(tv->value) : 0;
        tv->has_grad = 1;
        tv->partitions = 1;
    }
    free(info);
    if (!(plan->var_index = index_vars(plan))) return px_error(d, "out of memory");
    return plan_ties(g, spec ? spec->meta : NULL, plan, d);
}

const char *px_not_trained_reason(const px_train_plan *plan, const px_train_spec *spec,
                                  const px_value *v) {
    const px_model_meta *m = spec ? spec->meta : NULL;
    if (px_train_spec_is_frozen(spec, v->name)) return "--freeze";
    if (px_model_meta_is_tied_copy(m, v->name)) return "a tied copy (parallax.ties)";
    int i = plan ? px_plan_var_of(plan, v) : -1;
    if (i >= 0) {
        if (px_is_running_statistic(v))
            return "a BatchNorm running statistic: updated, not trained";
        return plan->vars[i].has_grad ? NULL : "the loss does not depend on it";
    }
    if (m && m->has_trainable) return "not in parallax.trainable: a buffer or a constant";
    return "not a variable";
}

const char *px_trained_set_source(const px_train_spec *spec) {
    return spec && spec->meta && spec->meta->has_trainable
               ? "parallax.trainable"
               : "every float initializer not --freeze'd (no parallax.trainable metadata)";
}

void px_train_plan_free(px_train_plan *plan) {
    if (!plan) return;
    free(plan->vars);
    free(plan->tied);
    free(plan->bucket_bytes);
    free(plan->bucket_slab);
    free(plan->bucket_stage);
    free(plan->masked);
    free(plan->pp_stages);
    for (int i = 0; i < plan->n_tp_notes; i++) free(plan->tp_notes[i]);
    free(plan->tp_notes);
    free_index(plan->var_index);
    memset(plan, 0, sizeof *plan);
}
