/* Einsum -> Transpose + Reshape + Mul + ReduceSum.
 * Every operand is laid out over all the equation's indices (output indices
 * first, in output order, then the summed ones): its own indices transposed
 * into that order, the missing ones as size-1 dims. The broadcasting product
 * of these then holds every term of the sum, and a ReduceSum over the
 * trailing summed axes leaves the output, already in output order. This
 * materializes the full index space (a matmul "ij,jk->ik" builds i*j*k
 * products): simple and exact, with gradients from the existing rules; a
 * MatMul form for large contractions is a later optimization. */
#include "einsum_rewrite.h"

#include "einsum_eq.h"
#include "node_rewrite.h"
#include "shape_infer.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    px_graph *g;
    px_diag *d;
    const char *base; /* the Einsum's name, prefix of the new nodes */
    int pos;          /* where the next node goes */
    int step;         /* numbers the new nodes */
} emitter;

/* Adds op(ins) writing out, or a new value when out is NULL. */
static px_node *emit(emitter *em, const char *op, int n_in, px_value **ins, px_value *out) {
    char name[512];
    snprintf(name, sizeof name, "%s/einsum/%s_%d", em->base, op, em->step++);
    if (!out) out = px_graph_new_value(em->g, name, PX_UNDEFINED, NULL);
    return px_graph_insert_node(em->g, em->pos++, op, "", name, n_in, ins, 1, &out);
}

static int infer(emitter *em, px_node *n) {
    return n && px_infer_node(em->g, n, em->d) == 0 ? 0 : -1;
}

static px_value *i64_const(emitter *em, const int64_t *v, int count) {
    px_shape s = px_shape_make(1, (int64_t[]){count});
    px_tensor *t = px_tensor_new(PX_I64, &s, em->d);
    if (!t) return NULL;
    memcpy(t->data, v, sizeof *v * (size_t)count);
    char name[512];
    snprintf(name, sizeof name, "%s/einsum/const_%d", em->base, em->step++);
    return px_graph_add_constant(em->g, name, t);
}

/* Operand x (indices `term`) laid out over all indices `all` (rank r); the
 * node writing into `out` when it is the last step, else a new value. */
static px_value *lay_out(emitter *em, px_value *x, const char *term, const char *all, int r,
                         px_value *out) {
    int k = (int)strlen(term);
    int64_t perm[PX_MAX_RANK], shape[PX_MAX_RANK];
    int n = 0, identity = 1;
    for (int a = 0; a < r; a++) {
        const char *at = strchr(term, all[a]);
        shape[a] = at ? x->shape.dims[at - term] : 1;
        if (at) {
            perm[n] = at - term;
            identity &= perm[n] == n;
            n++;
        }
    }
    int reshape = k != r;
    if (!identity) {
        px_node *t = emit(em, "Transpose", 1, &x, reshape ? NULL : out);
        if (!t) return NULL;
        px_node_set_attr_ints(t, "perm", k, perm);
        if (infer(em, t)) return NULL;
        x = t->outputs[0];
    }
    if (reshape) {
        px_value *ins[2] = {x, i64_const(em, shape, r)};
        px_node *rs = ins[1] ? emit(em, "Reshape", 2, ins, out) : NULL;
        if (infer(em, rs)) return NULL;
        x = rs->outputs[0];
    }
    if (identity && !reshape && out) {
        px_node *id = emit(em, "Identity", 1, &x, out);
        if (infer(em, id)) return NULL;
        x = out;
    }
    return x;
}

static int rewrite(px_graph *g, px_node *n, px_diag *d) {
    const char *eq = px_attr_string(n, "equation", "");
    char label[256], why[160];
    px_node_label(n, label, sizeof label);
    px_einsum_eq e;
    if (px_einsum_parse(eq, 0, &e, why, sizeof why)) {
        px_error(d, "%s: Einsum equation '%s': %s", label, eq, why);
        return -1;
    }
    /* all indices: the output's, then the summed ones in order of appearance */
    char all[4 * PX_MAX_RANK + 1];
    int r = (int)strlen(e.out);
    memcpy(all, e.out, (size_t)r);
    for (int i = 0; i < e.n_ops; i++)
        for (const char *c = e.ops[i]; *c; c++)
            if (!memchr(all, *c, (size_t)r)) all[r++] = *c;
    all[r] = 0;
    if (r > PX_MAX_RANK) {
        px_error(d, "%s: Einsum equation '%s' has %d distinct indices, at most %d are supported",
                 label, eq, r, PX_MAX_RANK);
        return -1;
    }
    int n_out = (int)strlen(e.out), reduce = r > n_out;
    emitter em = {g, d, n->name[0] ? n->name : "Einsum", 0, 0};
    char base[400];
    snprintf(base, sizeof base, "%s", em.base);
    em.base = base;
    px_value *y = n->outputs[0], *ins[PX_EINSUM_MAX_OPS];
    for (int i = 0; i < e.n_ops; i++) ins[i] = n->inputs[i];
    em.pos = n->id + 1;
    px_graph_remove_node(g, n);

    px_value *acc = NULL;
    for (int i = 0; i < e.n_ops; i++) {
        int last = !reduce && e.n_ops == 1;
        px_value *t = lay_out(&em, ins[i], e.ops[i], all, r, last ? y : NULL);
        if (!t) return -1;
        if (!acc) {
            acc = t;
            continue;
        }
        px_value *mins[2] = {acc, t};
        px_node *m = emit(&em, "Mul", 2, mins, !reduce && i == e.n_ops - 1 ? y : NULL);
        if (infer(&em, m)) return -1;
        acc = m->outputs[0];
    }
    if (reduce) {
        int64_t axes[PX_MAX_RANK];
        for (int a = n_out; a < r; a++) axes[a - n_out] = a;
        px_node *s;
        if (px_graph_opset(g, "") >= 13) {
            px_value *rin[2] = {acc, i64_const(&em, axes, r - n_out)};
            if (!rin[1]) return -1;
            s = emit(&em, "ReduceSum", 2, rin, y);
        } else {
            s = emit(&em, "ReduceSum", 1, &acc, y);
            if (s) px_node_set_attr_ints(s, "axes", r - n_out, axes);
        }
        if (!s) return -1;
        px_node_set_attr_int(s, "keepdims", 0);
        if (infer(&em, s)) return -1;
    }
    return 1;
}

int px_pass_einsum_rewrite(px_graph *g, px_diag *d) {
    return px_rewrite_nodes(g, PX_OP_Einsum, rewrite, d);
}
