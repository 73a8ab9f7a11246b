/* Test support for finite-difference gradient checks of whole models. */
#include "gradcheck.h"

#include "autodiff.h"

#include "interp.h"
#include "onnx_io.h"
#include "passes.h"
#include "shape_infer.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>

static uint64_t rng = 88172645463325252ull;

double tg_urand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

px_tensor *tg_rand_tensor(px_dtype dt, int rank, const int64_t *dims, double lo, double hi) {
    px_shape s = px_shape_make(rank, dims);
    px_diag d;
    px_diag_init(&d);
    px_tensor *x = px_tensor_new(dt, &s, &d);
    for (int64_t i = 0; i < px_tensor_numel(x); i++)
        px_tensor_set_f64(x, i, lo + (hi - lo) * tg_urand());
    return x;
}

tg *tg_new(void) {
    tg *t = calloc(1, sizeof *t);
    t->g = px_graph_new("autodiff_test");
    px_graph_set_opset(t->g, "", 17);
    px_diag_init(&t->d);
    return t;
}

void tg_free(tg *t) {
    for (int i = 0; i < t->g->n_inputs; i++) px_tensor_free(t->in[i]);
    px_graph_free(t->g);
    free(t);
}

px_node *tg_node(tg *t, const char *op, int n_in, px_value *const *in, int n_out) {
    px_value *outs[4];
    px_shape u = px_shape_unknown();
    for (int i = 0; i < n_out; i++) outs[i] = px_graph_new_value(t->g, op, PX_UNDEFINED, &u);
    return px_graph_add_node(t->g, op, "", op, n_in, in, n_out, outs);
}

px_value *tg_out(tg *t, px_node *n) {
    cr_assert_eq(px_infer_node(t->g, n, &t->d), 0, "%s", t->d.text);
    return n->outputs[0];
}

px_value *tg_op1(tg *t, const char *op, px_value *x) {
    return tg_out(t, tg_node(t, op, 1, &x, 1));
}

px_value *tg_op2(tg *t, const char *op, px_value *x, px_value *y) {
    px_value *in[2] = {x, y};
    return tg_out(t, tg_node(t, op, 2, in, 1));
}

void tg_free_outs(tg *t, px_tensor **o) {
    for (int i = 0; i < t->g->n_outputs; i++) px_tensor_free(o[i]);
    free(o);
}

double tg_run_loss(tg *t, const px_plan *plan, px_tensor ***outs) {
    px_tensor **o = NULL;
    cr_assert_eq(px_interp_run(t->g, plan, t->in, &o, &t->d), 0, "%s", t->d.text);
    double l = px_tensor_get_f64(o[0], 0);
    if (outs)
        *outs = o;
    else
        tg_free_outs(t, o);
    return l;
}

/* Every float value, initializer and constant becomes float64 (and Cast to
 * float casts to double), so finite differences are accurate to ~1e-9. */
void px_test_promote_f64(px_graph *g) {
    px_diag d;
    px_diag_init(&d);
    for (int i = 0; i < g->n_values; i++) {
        px_value *v = g->values[i];
        if (v->dtype != PX_F32) continue;
        v->dtype = PX_F64;
        if (v->data) {
            px_tensor *t = px_tensor_new(PX_F64, &v->data->shape, &d);
            for (int64_t j = 0; j < px_tensor_numel(t); j++)
                px_tensor_set_f64(t, j, px_tensor_get_f64(v->data, j));
            px_tensor_free(v->data);
            v->data = t;
        }
    }
    for (int k = 0; k < g->n_nodes; k++)
        if (g->nodes[k]->op == PX_OP_Cast && px_attr_int(g->nodes[k], "to", 0) == PX_F32)
            px_node_set_attr_int(g->nodes[k], "to", PX_F64);
}

/* Index range of an integer input: the rows of the table it gathers from,
 * the classes of the loss it labels, else 2. */
int64_t px_test_index_range(const px_value *v) {
    for (int u = 0; u < v->n_uses; u++) {
        const px_node *n = v->uses[u].node;
        if (n->op == PX_OP_Gather && v->uses[u].index == 1) return n->inputs[0]->shape.dims[0];
        if ((n->op == PX_OP_SoftmaxCrossEntropyLoss || n->op == PX_OP_NegativeLogLikelihoodLoss) &&
            v->uses[u].index == 1)
            return n->inputs[0]->shape.dims[1];
    }
    return 2;
}

tg_fd_err tg_check_grads(tg *t, int n_expect, int n_sparse, int max_coords, double eps, double atol,
                         double rtol) {
    tg_fd_err err = {0, 0};
    px_grads gr;
    cr_assert_eq(px_pass_autodiff(t->g, NULL, &gr, &t->d), 0, "%s", t->d.text);
    if (n_expect < 0) {
        n_expect = 0;
        for (int i = 0; i < t->g->n_inits; i++)
            n_expect += px_dtype_is_float(t->g->inits[i]->dtype);
        cr_assert_gt(n_expect, 0);
    }
    cr_assert_eq(gr.n, n_expect, "%d gradients, expected %d", gr.n, n_expect);
    int first_out = t->g->n_outputs, sparse = 0;
    for (int i = 0; i < gr.n; i++) {
        if (gr.items[i].grad) {
            cr_assert(px_shape_equal(&gr.items[i].grad->shape, &gr.items[i].var->shape));
            cr_assert_eq(gr.items[i].grad->dtype, gr.items[i].var->dtype);
            px_graph_add_output(t->g, gr.items[i].grad);
        } else {
            sparse++;
            px_graph_add_output(t->g, gr.items[i].rows_index);
            px_graph_add_output(t->g, gr.items[i].rows_value);
            px_graph_add_output(t->g, gr.items[i].rows_count);
        }
    }
    cr_assert_eq(sparse, n_sparse, "%d row sets, expected %d", sparse, n_sparse);
    cr_assert_eq(px_graph_verify(t->g, &t->d), 0, "%s", t->d.text);
    px_plan plan;
    cr_assert_eq(px_plan_build(t->g, &plan, &t->d), 0, "%s", t->d.text);
    px_tensor **o;
    tg_run_loss(t, &plan, &o);
    int out = first_out;
    for (int i = 0; i < gr.n; i++) {
        px_value *var = gr.items[i].var;
        int64_t numel = px_tensor_numel(var->data), rows = var->shape.dims[0], count = 0;
        double *an = calloc((size_t)numel, sizeof *an);
        const px_tensor *idx = NULL;
        if (gr.items[i].grad) {
            for (int64_t j = 0; j < numel; j++) an[j] = px_tensor_get_f64(o[out], j);
            out++;
        } else {
            idx = o[out];
            const px_tensor *val = o[out + 1];
            count = px_tensor_get_i64(o[out + 2], 0);
            out += 3;
            int64_t width = numel / rows;
            cr_assert(count >= 0 && count <= px_tensor_numel(idx));
            for (int64_t k = 0; k < count; k++) {
                int64_t r = px_tensor_get_i64(idx, k);
                cr_assert(r >= 0 && r < rows, "row %lld out of range", (long long)r);
                if (k) cr_assert_gt(r, px_tensor_get_i64(idx, k - 1), "rows not ascending");
                for (int64_t j = 0; j < width; j++)
                    an[r * width + j] = px_tensor_get_f64(val, k * width + j);
            }
        }
        for (int c = 0; c < (numel < max_coords ? numel : max_coords); c++) {
            int64_t j = numel <= max_coords ? c : (int64_t)(tg_urand() * (double)numel);
            if (numel > max_coords && idx && count > 0 && c % 2 == 0) {
                /* half the samples of a big table in rows the batch touched */
                int64_t r = px_tensor_get_i64(idx, (int64_t)(tg_urand() * (double)count));
                j = r * (numel / rows) + (int64_t)(tg_urand() * (double)(numel / rows));
            }
            double orig = px_tensor_get_f64(var->data, j);
            px_tensor_set_f64(var->data, j, orig + eps);
            double lp = tg_run_loss(t, &plan, NULL);
            px_tensor_set_f64(var->data, j, orig - eps);
            double lm = tg_run_loss(t, &plan, NULL);
            px_tensor_set_f64(var->data, j, orig);
            double fd = (lp - lm) / (2 * eps), e = fabs(an[j] - fd);
            if (e > err.abs) err.abs = e;
            if (e / fmax(fabs(fd), 1e-3) > err.rel) err.rel = e / fmax(fabs(fd), 1e-3);
            cr_expect(e <= atol + rtol * fabs(fd),
                      "d loss / d %s[%lld]: autodiff %.12g, finite difference %.12g", var->name,
                      (long long)j, an[j], fd);
        }
        free(an);
    }
    tg_free_outs(t, o);
    px_plan_free(&plan);
    px_grads_free(&gr);
    return err;
}

tg *tg_load_example(const char *name, int64_t batch) {
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/%s/model.onnx", PX_SOURCE_DIR, name);
    tg *t = calloc(1, sizeof *t);
    px_diag_init(&t->d);
    t->g = px_onnx_load_file(path, NULL, &t->d);
    cr_assert_not_null(t->g, "%s", t->d.text);
    px_bindings b = {.batch = batch};
    cr_assert_eq(px_pipeline_fold(t->g, &b, &t->d), 0, "%s", t->d.text);
    px_test_promote_f64(t->g);
    cr_assert_leq(t->g->n_inputs, 8);
    for (int i = 0; i < t->g->n_inputs; i++) {
        px_value *v = t->g->inputs[i];
        px_tensor *x = px_tensor_new(v->dtype, &v->shape, &t->d);
        cr_assert_not_null(x, "%s", t->d.text);
        int64_t range = px_test_index_range(v);
        for (int64_t j = 0; j < px_tensor_numel(x); j++) {
            if (px_dtype_is_float(v->dtype))
                px_tensor_set_f64(x, j, 2 * tg_urand() - 1);
            else
                px_tensor_set_i64(x, j, (int64_t)(tg_urand() * (double)range));
        }
        t->in[i] = x;
    }
    return t;
}
