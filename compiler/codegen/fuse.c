#include "fuse.h"

#include "lower_matmul_fold.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A fused call passes its inputs and its output as kernel-call buffers. */
_Static_assert(PX_FUSE_MAX_INPUTS + 1 <= PX_KCALL_MAX_BUFS, "fused call exceeds kcall buffers");

const char *px_fuse_signature(px_op op) {
    if ((int)op <= PX_OP_UNKNOWN || op >= PX_OP_COUNT) return NULL;
    return (px_op_table[op].flags & PX_F_ELEMWISE) ? px_op_table[op].sig : NULL;
}

static int fits(const px_value *v, char letter) {
    if (!v || !px_shape_is_static(&v->shape)) return 0;
    if (letter == 'b') return v->dtype == PX_BOOL;
    if (letter == '?') return v->dtype == PX_F32 || v->dtype == PX_BOOL;
    return v->dtype == PX_F32;
}

/* Reads a scalar float constant input (Clip's min/max); 1 on success. */
static int const_scalar(const px_value *v, float *out) {
    if (!px_value_is_const(v) || px_tensor_numel(v->data) != 1) return 0;
    *out = (float)px_tensor_get_f64(v->data, 0);
    return 1;
}

/* Can input shape `in` be broadcast to `out` (numpy rules, one direction)? */
static int broadcasts_to(const px_shape *in, const px_shape *out) {
    if (in->rank > out->rank) return 0;
    for (int i = 0; i < in->rank; i++) {
        int64_t a = in->dims[in->rank - 1 - i], b = out->dims[out->rank - 1 - i];
        if (a != b && a != 1) return 0;
    }
    return 1;
}

/* Attribute values the kernels refuse (their lowering reports them) or that
 * the loop does not compute stay kernel calls. */
static int attributes_fusable(const px_node *n) {
    switch (n->op) {
    case PX_OP_Clip: {
        float tmp;
        for (int i = 1; i < n->n_inputs && i < 3; i++)
            if (n->inputs[i] && !const_scalar(n->inputs[i], &tmp)) return 0;
        return 1;
    }
    case PX_OP_Celu: return px_attr_float(n, "alpha", 1.0f) != 0;
    case PX_OP_Gelu: {
        const char *approx = px_attr_string(n, "approximate", "none");
        return strcmp(approx, "none") == 0 || strcmp(approx, "tanh") == 0;
    }
    case PX_OP_Mod: {
        int64_t f = px_attr_int(n, "fmod", 0);
        return f == 0 || f == 1;
    }
    default: return 1;
    }
}

int px_fusable(const px_graph *g, const px_node *n) {
    unsigned flags = px_op_table[n->op].flags;
    const char *sig = px_fuse_signature(n->op);
    if (!(flags & PX_F_ELEMWISE) || !sig) return 0;
    int arity = px_op_arity(n->op);
    if (n->n_outputs < 1 || !fits(n->outputs[0], sig[arity + 1])) return 0;
    for (int i = 1; i < n->n_outputs; i++)
        if (n->outputs[i]) return 0;
    if (n->n_inputs < arity || ((flags & PX_F_VARIADIC) && n->n_inputs != arity)) return 0;
    px_gemm_fold f;
    if (px_lmm_fold_bias(n, &f)) return 0; /* lowered as a GEMM that adds the bias */
    const px_shape *out = &n->outputs[0]->shape;
    /* Before opset 7, broadcasting aligned B at an `axis` (PRelu: per channel):
     * only same-shape operands read the same elements as numpy broadcasting. */
    int numpy_broadcast = (flags & PX_F_BROADCAST) && px_graph_opset(g, "") >= 7;
    for (int i = 0; i < arity; i++) {
        const px_value *v = n->inputs[i];
        if (!fits(v, sig[i])) return 0;
        if (numpy_broadcast ? !broadcasts_to(&v->shape, out) : !px_shape_equal(&v->shape, out))
            return 0;
    }
    return attributes_fusable(n);
}

typedef struct builder {
    const px_graph *g;
    px_fusion *f;
    char *absorbed; /* per node id */
    int overflow;
    /* The nodes the group being built absorbed: unmarked when it overflows. */
    int n_taken, taken[PX_FUSE_MAX_EXPRS];
} builder;

static int add_input(builder *b, const px_value *v) {
    for (int i = 0; i < b->f->n_inputs; i++)
        if (b->f->inputs[i] == v) goto found;
    if (b->f->n_inputs == PX_FUSE_MAX_INPUTS) {
        b->overflow = 1;
        return -1;
    }
    b->f->inputs[b->f->n_inputs++] = v;
found:;
    int idx = -1;
    for (int i = 0; i < b->f->n_inputs; i++)
        if (b->f->inputs[i] == v) idx = i;
    if (b->f->n_exprs == PX_FUSE_MAX_EXPRS) {
        b->overflow = 1;
        return -1;
    }
    px_fexpr *e = &b->f->exprs[b->f->n_exprs];
    memset(e, 0, sizeof *e);
    e->kind = PX_FE_INPUT;
    e->input = idx;
    e->dtype = v->dtype;
    e->a = e->b = e->c = -1;
    return b->f->n_exprs++;
}

/* A producer can be absorbed into its consumer's loop when its only use is
 * that consumer and it computes at the same index space (same shape). */
static int absorbable(builder *b, const px_value *v, const px_node *user) {
    const px_node *p = v->producer;
    if (!p || p->dead || b->absorbed[p->id] || v->is_output || v->n_uses != 1) return 0;
    if (v->uses[0].node != user) return 0;
    if (!px_fusable(b->g, p)) return 0;
    /* --pp: a loop runs on one pipeline stage's ranks, at one place of its
     * 1F1B order: absorbing another micro-batch's producer would move its
     * work later and keep its inputs live until then (a weight's gradient
     * summed over the micro-batches would become one loop over all M
     * partial gradients, each the weight's size, at the last) */
    static const char *const place[] = {"pp_stage", "pp_mb", "pp_phase"};
    for (int i = 0; i < 3; i++)
        if (px_attr_int(p, place[i], -1) != px_attr_int(user, place[i], -1)) return 0;
    return px_shape_equal(&v->shape, &user->outputs[0]->shape);
}

/* The attributes the loop needs, in the expression's alpha/beta/mode. */
static void read_attributes(const px_graph *g, const px_node *n, px_fexpr *e) {
    switch (n->op) {
    case PX_OP_LeakyRelu: e->alpha = px_attr_float(n, "alpha", 0.01f); break;
    case PX_OP_Elu:
    case PX_OP_Celu: e->alpha = px_attr_float(n, "alpha", 1.0f); break;
    case PX_OP_ThresholdedRelu: e->alpha = px_attr_float(n, "alpha", 1.0f); break;
    case PX_OP_HardSigmoid:
        e->alpha = px_attr_float(n, "alpha", 0.2f);
        e->beta = px_attr_float(n, "beta", 0.5f);
        break;
    case PX_OP_Selu:
        e->alpha = px_attr_float(n, "alpha", 1.67326319217681884765625f);
        e->beta = px_attr_float(n, "gamma", 1.05070102214813232421875f);
        break;
    case PX_OP_Shrink:
        e->alpha = px_attr_float(n, "lambd", 0.5f);
        e->beta = px_attr_float(n, "bias", 0.0f);
        break;
    case PX_OP_IsInf:
        e->alpha = (float)px_attr_int(n, "detect_negative", 1);
        e->beta = (float)px_attr_int(n, "detect_positive", 1);
        break;
    case PX_OP_Gelu: e->mode = strcmp(px_attr_string(n, "approximate", "none"), "tanh") == 0; break;
    case PX_OP_Mod: e->mode = (int)px_attr_int(n, "fmod", 0); break;
    case PX_OP_Clip:
        e->alpha = -INFINITY;
        e->beta = INFINITY;
        if (px_graph_opset(g, "") < 11) {
            e->alpha = px_attr_float(n, "min", -INFINITY);
            e->beta = px_attr_float(n, "max", INFINITY);
        } else {
            if (n->n_inputs > 1 && n->inputs[1]) const_scalar(n->inputs[1], &e->alpha);
            if (n->n_inputs > 2 && n->inputs[2]) const_scalar(n->inputs[2], &e->beta);
        }
        break;
    default: break;
    }
}

static int build_expr(builder *b, const px_node *n) {
    int operand[3] = {-1, -1, -1};
    int arity = px_op_arity(n->op);
    for (int i = 0; i < arity; i++) {
        const px_value *v = n->inputs[i];
        /* Room for this subtree is checked conservatively: stop absorbing near the limit.
         * n_exprs grows only on the way back up, so n_nodes (absorbed so far, one
         * expression each) is what bounds the recursion along a long chain. */
        if (absorbable(b, v, n) && b->f->n_exprs < PX_FUSE_MAX_EXPRS - 8 &&
            b->f->n_nodes < PX_FUSE_MAX_EXPRS - 8 &&
            b->f->n_inputs < PX_FUSE_MAX_INPUTS - (arity > 2 ? arity : 2)) {
            b->absorbed[v->producer->id] = 1;
            b->taken[b->n_taken++] = v->producer->id;
            b->f->n_nodes++;
            operand[i] = build_expr(b, v->producer);
        } else
            operand[i] = add_input(b, v);
        if (operand[i] < 0) return -1;
    }
    if (b->f->n_exprs == PX_FUSE_MAX_EXPRS) {
        b->overflow = 1;
        return -1;
    }
    px_fexpr *e = &b->f->exprs[b->f->n_exprs];
    memset(e, 0, sizeof *e);
    e->kind = PX_FE_OP;
    e->op = n->op;
    e->dtype = n->outputs[0]->dtype;
    e->a = operand[0];
    e->b = operand[1];
    e->c = operand[2];
    read_attributes(b->g, n, e);
    return b->f->n_exprs++;
}

void px_fusion_free(px_fusion *f) {
    free(f);
}

int px_fuse_plan(const px_graph *g, px_plan *plan, px_diag *d) {
    int groups = 0, rc = -1;
    builder b = {g, NULL, calloc((size_t)g->n_nodes + 1, 1), 0, 0, {0}};
    char *root = calloc((size_t)g->n_nodes + 1, 1);
    px_fusion **fusion_of = calloc((size_t)g->n_nodes + 1, sizeof *fusion_of);
    if (!b.absorbed || !root || !fusion_of) {
        px_error(d, "out of memory fusing graph '%s'", g->name);
        goto cleanup;
    }
    /* Consumers first, so producers are absorbed by the loop that uses them. */
    for (int c = plan->n_calls - 1; c >= 0; c--) {
        const px_node *n = plan->calls[c].node;
        if (b.absorbed[n->id] || !px_fusable(g, n)) continue;
        px_fusion *f = calloc(1, sizeof *f);
        if (!f) {
            px_error(d, "out of memory fusing graph '%s'", g->name);
            goto cleanup;
        }
        b.f = f;
        b.overflow = 0;
        b.n_taken = 0;
        f->n_nodes = 1;
        f->output = n->outputs[0];
        if (build_expr(&b, n) < 0 || b.overflow) {
            /* Too many inputs: the checks bound the descent by nodes, and the
             * inputs are added on the way back up (a chain of Adds, each with
             * its own weight, reaches 16 inputs at 15 nodes). Keep the kernel
             * call, and its producers, which were absorbed into nothing. */
            while (b.n_taken > 0) b.absorbed[b.taken[--b.n_taken]] = 0;
            free(f);
            continue;
        }
        root[n->id] = 1;
        fusion_of[n->id] = f;
        groups++;
    }
    int k = 0;
    for (int c = 0; c < plan->n_calls; c++) {
        px_kcall *call = &plan->calls[c];
        const px_node *n = call->node;
        if (b.absorbed[n->id]) {
            px_kcall_free(call);
            continue;
        }
        if (root[n->id]) {
            px_fusion *f = fusion_of[n->id];
            px_kcall_free(call);
            memset(call, 0, sizeof *call);
            call->node = n;
            call->fusion = f;
            px_kc_set_kernel(call, "fused");
            for (int i = 0; i < f->n_inputs; i++) px_kc_buf(call, f->inputs[i]);
            px_kc_buf(call, f->output);
            fusion_of[n->id] = NULL;
        }
        plan->calls[k++] = *call;
    }
    plan->n_calls = k;
    rc = groups;
cleanup:
    if (fusion_of)
        for (int i = 0; i < g->n_nodes; i++) free(fusion_of[i]);
    free(fusion_of);
    free(root);
    free(b.absorbed);
    return rc;
}
