/* Einsum (rewritten into Transpose/Reshape/Mul/ReduceSum by
 * passes/einsum_rewrite.c): forward values against a direct sum over all
 * index values, gradients of both operands against finite differences, and
 * the refusal of ellipsis and diagonals with the node and equation named. */
#include "einsum_eq.h"
#include "einsum_rewrite.h"
#include "gradcheck.h"
#include "passes.h"
#include "plan.h"
#include "shape_infer.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *eq;
    const char *letters; /* every index, with its size in `sizes` */
    int64_t sizes[8];
} einsum_case;

static int64_t size_of(const einsum_case *c, char l) {
    return c->sizes[strchr(c->letters, l) - c->letters];
}

static px_value *operand(tg *t, const einsum_case *c, const char *term, const char *name) {
    int64_t dims[PX_MAX_RANK];
    int r = (int)strlen(term);
    for (int i = 0; i < r; i++) dims[i] = size_of(c, term[i]);
    px_shape s = px_shape_make(r, dims);
    px_value *v = px_graph_add_value(t->g, name, PX_F64, &s, &t->d);
    px_graph_add_initializer(t->g, v, tg_rand_tensor(PX_F64, r, dims, -1, 1));
    return v;
}

/* Row-major offset of the index assignment idx (per letter of c) in term. */
static int64_t offset(const einsum_case *c, const char *term, const int64_t *idx) {
    int64_t off = 0;
    for (const char *l = term; *l; l++)
        off = off * size_of(c, *l) + idx[strchr(c->letters, *l) - c->letters];
    return off;
}

/* The Einsum directly: every assignment of every index adds its product. */
static void reference(const einsum_case *c, const px_einsum_eq *e, px_value **ops, double *y,
                      int64_t ny) {
    int nl = (int)strlen(c->letters);
    int64_t idx[8] = {0};
    memset(y, 0, sizeof *y * (size_t)ny);
    for (;;) {
        double p = 1;
        for (int i = 0; i < e->n_ops; i++)
            p *= ((const double *)ops[i]->data->data)[offset(c, e->ops[i], idx)];
        y[offset(c, e->out, idx)] += p;
        int k = nl - 1;
        while (k >= 0 && ++idx[k] == c->sizes[k]) idx[k--] = 0;
        if (k < 0) break;
    }
}

static void check(const einsum_case *c) {
    px_einsum_eq e;
    char why[160];
    cr_assert_eq(px_einsum_parse(c->eq, 0, &e, why, sizeof why), 0, "%s", why);
    tg *t = tg_new();
    px_value *ops[PX_EINSUM_MAX_OPS];
    for (int i = 0; i < e.n_ops; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", i);
        ops[i] = operand(t, c, e.ops[i], name);
    }
    px_node *n = tg_node(t, "Einsum", e.n_ops, ops, 1);
    px_node_set_attr_string(n, "equation", c->eq);
    px_value *y = tg_out(t, n);
    /* loss = sum(R * einsum) weighs every output element differently */
    px_value *r = px_graph_add_constant(
        t->g, "R", tg_rand_tensor(PX_F64, y->shape.rank, y->shape.dims, -1, 1));
    px_value *m = tg_op2(t, "Mul", y, r);
    px_node *sum = tg_node(t, "ReduceSum", 1, &m, 1);
    px_node_set_attr_int(sum, "keepdims", 0);
    px_graph_add_output(t->g, tg_out(t, sum));
    int scalar = y->shape.rank == 0; /* then the loss is y * R: one output */
    if (!scalar) px_graph_add_output(t->g, y);
    cr_assert_eq(px_pass_einsum_rewrite(t->g, &t->d), 1, "%s: %s", c->eq, t->d.text);
    for (int i = 0; i < t->g->n_nodes; i++)
        cr_assert_neq(t->g->nodes[i]->op, PX_OP_Einsum, "%s: an Einsum is left", c->eq);
    cr_assert_eq(px_infer_shapes(t->g, &t->d), 0, "%s", t->d.text);

    px_plan plan;
    cr_assert_eq(px_plan_build(t->g, &plan, &t->d), 0, "%s", t->d.text);
    px_tensor **outs = NULL;
    tg_run_loss(t, &plan, &outs);
    px_tensor *got = outs[scalar ? 0 : 1];
    int64_t ny = px_tensor_numel(got);
    double want[256];
    cr_assert(ny <= 256);
    reference(c, &e, ops, want, ny);
    if (scalar) want[0] *= ((const double *)r->data->data)[0];
    for (int64_t i = 0; i < ny; i++)
        cr_assert_float_eq(((const double *)got->data)[i], want[i], 1e-12, "%s element %ld", c->eq,
                           (long)i);
    tg_free_outs(t, outs);
    px_plan_free(&plan);
    tg_check_grads(t, e.n_ops, 0, 64, 1e-6, 1e-8, 1e-6);
    tg_free(t);
}

Test(einsum, matmul) {
    check(&(einsum_case){"ij,jk->ik", "ijk", {2, 3, 4}});
}
Test(einsum, batch_matmul_transposed_output) {
    check(&(einsum_case){"bij,bjk->bki", "bijk", {2, 3, 4, 2}});
}
Test(einsum, inner_product_to_scalar) {
    check(&(einsum_case){"i,i->", "i", {5}});
}
Test(einsum, outer_product_implicit) {
    check(&(einsum_case){"i,j", "ij", {3, 4}});
}
Test(einsum, transpose_one_operand) {
    check(&(einsum_case){"ijk->kij", "ijk", {2, 3, 4}});
}
Test(einsum, three_operands_bilinear) {
    check(&(einsum_case){"bi,ij,bj->b", "bij", {3, 2, 4}});
}

/* eq on a [3, 3] input: its output has rank out_rank and dims of size dim */
static void refused(const char *eq, const char *what, int out_rank, int64_t dim) {
    tg *t = tg_new();
    int64_t dims[2] = {3, 3};
    px_shape s = px_shape_make(2, dims);
    px_value *x = px_graph_add_value(t->g, "x", PX_F64, &s, &t->d);
    px_value *y = px_graph_new_value(t->g, "y", PX_UNDEFINED, NULL);
    px_node *n = px_graph_add_node(t->g, "Einsum", "", "my_einsum", 1, &x, 1, &y);
    px_node_set_attr_string(n, "equation", eq);
    /* shapes are inferred for every form; the rewrite refuses these */
    cr_assert_eq(px_infer_shapes(t->g, &t->d), 0, "%s", t->d.text);
    cr_assert_eq(px_pass_einsum_rewrite(t->g, &t->d), -1);
    cr_assert_eq(y->shape.rank, out_rank, "%s", eq);
    for (int i = 0; i < out_rank; i++) cr_assert_eq(y->shape.dims[i], dim, "%s", eq);
    cr_assert(strstr(t->d.text, "my_einsum") && strstr(t->d.text, eq) && strstr(t->d.text, what),
              "%s", t->d.text);
    tg_free(t);
}

Test(einsum, refuses_diagonal) {
    refused("ii->i", "diagonals", 1, 3);
}
Test(einsum, refuses_ellipsis) {
    refused("...i->i", "ellipsis", 1, 3);
}
Test(einsum, refuses_batch_diagonal) {
    refused("...ii->...i", "ellipsis", 1, 3);
}
