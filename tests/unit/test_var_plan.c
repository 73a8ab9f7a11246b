/* The variable plan (passes/var_plan.c, px_plan_sync in comm.c): one
 * classification, read by autodiff, the optimizer and comm passes. On the
 * recommender example (examples/recommender: three embedding tables read
 * by Gathers, a dense MLP), the plan's classes and look-ups are checked
 * against the model's inputs (reference.json: user, item, category are
 * scalars per sample, history 8 item ids), and the communication each
 * --comm mode inserts into the graph against design.md §4's table. */
#include "onnx_io.h"
#include "passes.h"
#include "train.h"

#include <criterion/criterion.h>
#include <string.h>

#define BATCH 4

static px_graph *load_recommender(px_diag *d) {
    px_diag_init(d);
    px_graph *g = px_onnx_load_file(PX_SOURCE_DIR "/examples/recommender/model.onnx", NULL, d);
    cr_assert_not_null(g, "%s", d->text);
    return g;
}

static const px_train_var *find_var(const px_train_plan *p, const char *name) {
    for (int i = 0; i < p->n_vars; i++)
        if (!strcmp(p->vars[i].value->name, name)) return &p->vars[i];
    return NULL;
}

static int is_table(const char *name) {
    return !strcmp(name, "user.weight") || !strcmp(name, "item.weight") ||
           !strcmp(name, "category.weight");
}

Test(var_plan, classes_lookups_and_frozen) {
    px_diag d;
    px_graph *g = load_recommender(&d);
    px_bindings b = {.batch = BATCH};
    cr_assert_eq(px_pipeline_fold(g, &b, &d), 0, "%s", d.text);
    const char *freeze[] = {"mlp.4.bias"};
    px_train_spec spec = {.n_freeze = 1, .freeze = freeze};
    px_train_plan p;
    cr_assert_eq(px_plan_variables(g, &spec, &p, &d), 0, "%s", d.text);
    cr_assert_eq(p.n_vars, 8); /* 9 float initializers, one frozen */
    cr_assert_null(find_var(&p, "mlp.4.bias"));
    for (int i = 0; i < p.n_vars; i++) {
        const px_train_var *v = &p.vars[i];
        cr_assert_eq(v->cls, is_table(v->value->name) ? PX_VAR_SPARSE : PX_VAR_DENSE, "%s",
                     v->value->name);
        cr_assert_eq(v->has_grad, 1);
        cr_assert_eq(v->sync, PX_SYNC_NONE); /* chosen later, by px_plan_sync */
    }
    /* indices per step: the batch times the ids per sample */
    cr_assert_eq(find_var(&p, "user.weight")->lookups_per_step, BATCH);
    cr_assert_eq(find_var(&p, "item.weight")->lookups_per_step, BATCH + BATCH * 8);
    cr_assert_eq(find_var(&p, "item.weight")->n_gathers, 2);
    cr_assert_eq(find_var(&p, "category.weight")->lookups_per_step, BATCH);
    cr_assert_eq(find_var(&p, "mlp.0.weight")->lookups_per_step, 0);
    cr_assert_not_null(find_var(&p, "mlp.0.weight")->dense_reason);
    px_train_plan_free(&p);

    const char *typo[] = {"mlp.9.bias"};
    spec.freeze = typo;
    px_diag_init(&d);
    cr_assert_eq(px_plan_variables(g, &spec, &p, &d), -1);
    cr_assert(strstr(d.text, "--freeze: 'mlp.9.bias' is not an initializer"), "%s", d.text);
    px_train_plan_free(&p);
    px_graph_free(g);
}

/* The node that updates variable var at the end of the step. */
static const px_node *update_of(const px_graph *g, int var) {
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        int update = n->op == PX_OP_Update || n->op == PX_OP_RowUpdate ||
                     n->op == PX_OP_MaskedUpdate || n->op == PX_OP_PSPush ||
                     n->op == PX_OP_PSPushDense;
        if (!n->dead && update && px_attr_int(n, "var", -1) == var) return n;
    }
    return NULL;
}

static void check_mode(px_comm_mode mode, px_op sparse_op, px_op dense_op, px_var_sync sparse_sync,
                       px_var_sync dense_sync) {
    px_diag d;
    px_graph *g = load_recommender(&d);
    px_bindings b = {.batch = BATCH};
    px_train_config cfg = {.optimizer = PX_OPTIM_ADAM,
                           .lr = 1e-3,
                           .beta1 = 0.9,
                           .beta2 = 0.999,
                           .epsilon = 1e-8,
                           .comm = mode,
                           .bucket_bytes = 4 << 20};
    px_train_plan p = {0};
    cr_assert_eq(px_pipeline_train(g, &b, &cfg, 1, &p, &d), 0, "%s", d.text);
    cr_assert_eq(p.n_vars, 9);
    for (int v = 0; v < p.n_vars; v++) {
        const px_train_var *tv = &p.vars[v];
        int table = is_table(tv->value->name);
        cr_assert_eq(tv->cls, table ? PX_VAR_SPARSE : PX_VAR_DENSE, "%s", tv->value->name);
        cr_assert_eq(tv->has_grad, 1, "%s", tv->value->name);
        cr_assert_eq(tv->sync, table ? sparse_sync : dense_sync, "%s in %s: %s", tv->value->name,
                     px_comm_mode_name(mode), px_var_sync_name(tv->sync));
        cr_assert_eq(tv->row_cache_only, table && sparse_sync == PX_SYNC_PS);
        const px_node *up = update_of(g, v);
        cr_assert_not_null(up, "%s", tv->value->name);
        cr_assert_eq(up->op, table ? sparse_op : dense_op, "%s in %s: %s", tv->value->name,
                     px_comm_mode_name(mode), px_op_name(up->op));
    }
    px_train_plan_free(&p);
    px_graph_free(g);
}

Test(var_plan, hybrid) {
    check_mode(PX_COMM_MODE_HYBRID, PX_OP_PSPush, PX_OP_Update, PX_SYNC_PS, PX_SYNC_ALLREDUCE);
}
Test(var_plan, allreduce) {
    check_mode(PX_COMM_MODE_ALLREDUCE, PX_OP_MaskedUpdate, PX_OP_Update, PX_SYNC_ALLREDUCE,
               PX_SYNC_ALLREDUCE);
}
Test(var_plan, ps) {
    check_mode(PX_COMM_MODE_PS, PX_OP_PSPush, PX_OP_PSPushDense, PX_SYNC_PS, PX_SYNC_PS);
}

/* The shared names tables (runtime/px_enums.h) read what the CLI parses
 * and the runtime prints. */
Test(var_plan, enum_names) {
    cr_assert_str_eq(px_optim_kind_name(PX_OPTIM_ADAGRAD), "adagrad");
    cr_assert_str_eq(px_comm_mode_name(PX_COMM_MODE_AUTO), "auto");
    cr_assert_str_eq(px_var_class_name(PX_VAR_SPARSE), "sparse");
    cr_assert_str_eq(px_var_sync_name(PX_SYNC_PS), "ps");
    cr_assert_str_eq(px_optim_kind_name(PX_OPTIM_COUNT), "unknown");
    cr_assert_str_eq(px_var_sync_name(-1), "unknown");
    cr_assert_eq(px_pad_mode_from_name("reflect"), PX_PAD_REFLECT);
    cr_assert_eq(px_reduction_from_name("mean"), PX_REDUCTION_MEAN);
    cr_assert_eq(px_reduction_from_name("average"), -1);
}

/* The traffic prediction of a range of rank counts (compile records 1..64)
 * equals, bit for bit, that of each count alone, across the chunks of 64
 * counts one pass makes, in every mode and relaxed setting. */
Test(var_plan, traffic_range_is_per_rank) {
    px_diag d;
    px_graph *g = load_recommender(&d);
    px_bindings b = {.batch = BATCH};
    cr_assert_eq(px_pipeline_fold(g, &b, &d), 0, "%s", d.text);
    px_train_plan p;
    cr_assert_eq(px_plan_variables(g, NULL, &p, &d), 0, "%s", d.text);
    px_train_var *item = (px_train_var *)find_var(&p, "item.weight");
    item->data_rows = 7.5; /* as measured on data (plan --data) */
    item->data_pulled_rows = 2.25;
    enum { HI = 140 };
    px_traffic_prediction range[HI], one;
    for (int setting = 0; setting < 4; setting++) {
        px_train_config cfg = {.bucket_bytes = 1000,
                               .staleness = setting == 1 ? 2 : 0,
                               .sync_every = setting == 2 ? 3 : 0,
                               .wire = setting == 3 ? PX_WIRE_BF16 : PX_WIRE_FP32,
                               .net_alpha = 3e-6,
                               .net_beta = 1e-9};
        px_predict_traffic_range(&p, 1, HI, &cfg, range);
        for (int r = 1; r <= HI; r++) {
            px_predict_traffic(&p, r, &cfg, &one);
            cr_assert_eq(memcmp(&one, &range[r - 1], sizeof one), 0,
                         "setting %d, %d ranks: hybrid %lld against %lld", setting, r,
                         (long long)one.hybrid, (long long)range[r - 1].hybrid);
        }
        cr_assert_gt(range[HI - 1].ps, range[1].ps);
    }
    px_train_plan_free(&p);
    px_graph_free(g);
}
