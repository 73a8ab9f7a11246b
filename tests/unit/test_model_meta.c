/* The parallax.* model metadata (passes/model_meta.c, docs/metadata.md): what they accept, what
 * they refuse (naming the key), ties rewired to one variable, and the variable plan of a model with
 * a trainable set. */
#include "model_meta.h"
#include "passes.h"
#include "train.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- metadata ---- */

static px_diag D;

/* A graph: w [2,3] and wt [3,2] = transpose(w) (a tied copy), b [3] read
 * only by Slice (a buffer), table [4,3] gathered by ids; each read by
 * Identity so that they have uses. */
static px_graph *model(int tie_ok) {
    px_graph *g = px_graph_new("m");
    px_graph_set_opset(g, "", 17);
    px_diag_init(&D);
    static const char *names[] = {"w", "wt", "b", "table"};
    int64_t dims[4][2] = {{2, 3}, {3, 2}, {3, 1}, {4, 3}};
    int ranks[4] = {2, 2, 1, 2};
    for (int i = 0; i < 4; i++) {
        px_shape s = px_shape_make(ranks[i], dims[i]);
        px_tensor *t = px_tensor_new(PX_F32, &s, &D);
        for (int64_t k = 0; k < px_tensor_numel(t); k++) px_tensor_set_f64(t, k, k + 10 * i);
        px_value *v = px_graph_add_value(g, names[i], PX_F32, &s, &D);
        px_graph_add_initializer(g, v, t);
    }
    px_tensor *w = px_graph_find_value(g, "w")->data, *wt = px_graph_find_value(g, "wt")->data;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 2; c++)
            px_tensor_set_f64(wt, r * 2 + c, px_tensor_get_f64(w, c * 3 + r) + (tie_ok ? 0 : 1));
    for (int i = 0; i < 4; i++) {
        px_value *in = px_graph_find_value(g, names[i]);
        char out[32];
        snprintf(out, sizeof out, "%s_out", names[i]);
        px_value *o = px_graph_add_value(g, out, PX_F32, &in->shape, &D);
        px_graph_add_node(g, "Identity", "", out, 1, &in, 1, &o);
        px_graph_add_output(g, o);
    }
    return g;
}

static void set_meta(px_graph *g, int n, const char *const *kv) {
    g->meta = calloc((size_t)n, sizeof *g->meta);
    for (int i = 0; i < n; i++) {
        g->meta[i].key = strdup(kv[2 * i]);
        g->meta[i].value = strdup(kv[2 * i + 1]);
    }
    g->n_meta = n;
}

static const char *GOOD[] = {
    "parallax.helper_version", "1",
    "parallax.trainable",      "[\"w\", \"table\"]",
    "parallax.ties",           "[{\"initializer\": \"wt\", \"of\": \"w\", \"perm\": [1, 0]}]",
    "parallax.padding_idx",    "{\"table\": 2}",
};

Test(model_meta, reads_the_keys) {
    px_graph *g = model(1);
    set_meta(g, 4, GOOD);
    px_model_meta m;
    cr_assert_eq(px_model_meta_read(g, &m, &D), 0, "%s", D.text);
    cr_assert(m.present && m.has_trainable && m.n_trainable == 2 && m.n_ties == 1);
    cr_assert(px_model_meta_is_trainable(&m, "table") && !px_model_meta_is_trainable(&m, "b"));
    cr_assert(px_model_meta_is_tied_copy(&m, "wt") && !px_model_meta_is_tied_copy(&m, "w"));
    cr_assert_eq(px_model_meta_padding_row(&m, "table"), 2);
    cr_assert_eq(px_model_meta_padding_row(&m, "w"), -1);
    px_model_meta_free(&m);
    px_graph_free(g);
}

Test(model_meta, none_is_not_present) {
    px_graph *g = model(1);
    px_model_meta m;
    cr_assert_eq(px_model_meta_read(g, &m, &D), 0, "%s", D.text);
    cr_assert(!m.present && !m.has_trainable);
    px_model_meta_free(&m);
    px_graph_free(g);
}

/* Replaces key's value in GOOD and expects an error mentioning want. */
static void expect_refused(const char *key, const char *value, const char *want, int tie_ok) {
    const char *kv[8];
    memcpy(kv, GOOD, sizeof kv);
    for (int i = 0; i < 4; i++)
        if (!strcmp(kv[2 * i], key)) kv[2 * i + 1] = value;
    px_graph *g = model(tie_ok);
    set_meta(g, 4, kv);
    px_model_meta m;
    cr_assert_neq(px_model_meta_read(g, &m, &D), 0, "%s=%s accepted", key, value);
    cr_assert(strstr(D.text, want), "%s=%s: %s", key, value, D.text);
    px_model_meta_free(&m);
    px_graph_free(g);
}

Test(model_meta, refuses_bad_values) {
    expect_refused("parallax.helper_version", "2", "'parallax.helper_version' is '2'", 1);
    expect_refused("parallax.trainable", "{}", "'parallax.trainable': expected a JSON array", 1);
    expect_refused("parallax.trainable", "[\"w\", 3]", "element 1 is a number", 1);
    expect_refused("parallax.trainable", "[\"nope\"]", "'nope' is not an initializer", 1);
    expect_refused("parallax.trainable", "[\"w\", \"w\"]", "'w' is listed twice", 1);
    expect_refused("parallax.trainable", "[\"w\", \"wt\"]", "both trainable and a tied copy", 1);
    expect_refused("parallax.trainable", "[\"w\"", "'parallax.trainable': line 1, column 5: ", 1);
    expect_refused("parallax.ties", "[{\"initializer\": \"wt\", \"of\": \"w\", \"perm\": [0, 0]}]",
                   "not a permutation", 1);
    expect_refused("parallax.ties", "[{\"initializer\": \"wt\"}]",
                   "string \"initializer\" and \"of\"", 1);
    expect_refused("parallax.ties", "[{\"initializer\": \"wt\", \"of\": \"w\"}]",
                   "does not hold the values of 'w'", 1);
    expect_refused("parallax.ties", GOOD[5], "does not hold the values of 'w' transposed", 0);
    expect_refused("parallax.padding_idx", "{\"table\": 4}", "must be an integer in [0, 4)", 1);
    expect_refused("parallax.padding_idx", "{\"table\": -1}", "must be an integer", 1);
    expect_refused("parallax.padding_idx", "[2]", "expected a JSON object", 1);
}

Test(model_meta, ties_read_their_source) {
    px_graph *g = model(1);
    set_meta(g, 4, GOOD);
    px_model_meta m;
    cr_assert_eq(px_model_meta_read(g, &m, &D), 0, "%s", D.text);
    cr_assert_eq(px_pass_apply_ties(g, &m, &D), 0, "%s", D.text);
    px_value *wt = px_graph_find_value(g, "wt"), *out = px_graph_find_value(g, "wt_out");
    cr_assert_eq(wt->n_uses, 0);
    const px_node *id = out->producer, *tr = id->inputs[0]->producer;
    cr_assert(tr && tr->op == PX_OP_Transpose && tr->inputs[0] == px_graph_find_value(g, "w"));
    px_model_meta_free(&m);
    px_graph_free(g);
}

Test(model_meta, plan_trains_the_trainable_set) {
    px_graph *g = model(1);
    set_meta(g, 4, GOOD);
    px_model_meta m;
    cr_assert_eq(px_model_meta_read(g, &m, &D), 0, "%s", D.text);
    cr_assert_eq(px_pass_apply_ties(g, &m, &D), 0, "%s", D.text);
    px_train_spec spec = {.meta = &m};
    px_train_plan p;
    cr_assert_eq(px_plan_variables(g, &spec, &p, &D), 0, "%s", D.text);
    cr_assert_eq(p.n_vars, 2);
    cr_assert_str_eq(p.vars[0].value->name, "w");
    cr_assert_str_eq(p.vars[1].value->name, "table");
    cr_assert_eq(p.n_tied, 1);
    cr_assert_str_eq(p.tied[0].copy->name, "wt");
    cr_assert_eq(p.tied[0].var, 0);
    cr_assert_str_eq(px_not_trained_reason(&p, &spec, px_graph_find_value(g, "b")),
                     "not in parallax.trainable: a buffer or a constant");
    cr_assert_null(px_not_trained_reason(&p, &spec, px_graph_find_value(g, "w")));
    px_train_plan_free(&p);
    px_model_meta_free(&m);
    px_graph_free(g);
}
