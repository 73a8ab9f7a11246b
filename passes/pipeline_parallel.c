/* Pipeline parallelism (--pp S --micro-batches M) as graph rewrites.
 *
 * The model is folded at the micro-batch (the batch / M). The forward
 * nodes that depend on a graph input (the activation path) are listed in
 * graph order and cut into S runs of consecutive nodes, each starting at a
 * node that reads a trained variable (a layer), so that the stages'
 * predicted training FLOPs (forward and backward) and the bytes of the
 * variables they hold are as even as can be (cut below).
 * A node that depends on variables and constants only (TPSlice of a weight,
 * a transposed weight) belongs to the stage that reads it, and so does one
 * made from the inputs alone, before any layer (follow_readers).
 *
 * The activation path is then copied once per micro-batch: copy m reads
 * rows [m*b, (m+1)*b) of every input (a Slice), and a value that one stage
 * makes and a later stage reads crosses through a PPTransfer. The loss
 * (and every other scalar output, a metric) is the mean of the copies',
 * computed on its stage and broadcast to every stage (PPBroadcast), so
 * every rank reports it. Autodiff then differentiates the whole: a
 * variable's gradient is the sum of the micro-batches' (the copies are
 * listed in reverse, so autodiff adds micro-batch 0's first, the order in
 * which 1F1B runs the backward passes).
 *
 * Every node gets attributes: pp_stage (the stage whose ranks run it; the
 * code generator guards its call), pp_at, pp_mb, pp_phase (where the 1F1B
 * schedule puts it: its stage's work before the micro-batches, a
 * micro-batch's forward or backward, or after them). A transfer has pp_at
 * but no pp_stage: both ends run it, the sender sends and the receiver
 * receives.
 *
 * A variable lives on the ranks of the stage that reads it (the cut never
 * falls between two reads of one variable): its gradient is averaged over
 * the pipelines by an AllReduce among that stage's ranks (comm.c), and its
 * update runs there (stage_updates). --save and checkpoints gather the
 * stages' variables on rank 0 (runtime/program/tp_slabs.c). */
#include "pipeline_parallel.h"

#include "shape_infer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int px_pp_micro_bindings(const px_bindings *b, const px_train_config *cfg, px_bindings *out,
                         px_diag *d) {
    *out = *b;
    if (cfg->pp <= 1) return 0;
    int64_t m = cfg->micro_batches;
    if (b->batch <= 0)
        return px_error(d,
                        "--pp %d needs --batch B: the batch of one pipeline, which it splits "
                        "into --micro-batches %lld",
                        cfg->pp, (long long)m);
    if (m < 1 || b->batch % m != 0)
        return px_error(d, "--micro-batches %lld does not divide the batch %lld", (long long)m,
                        (long long)b->batch);
    out->batch = b->batch / m;
    return 0;
}

static double numel(const px_value *v) {
    return v && px_shape_is_static(&v->shape) ? (double)px_shape_numel(&v->shape) : 0;
}

double px_node_flops(const px_node *n) {
    double out = 0, in = 0;
    for (int i = 0; i < n->n_outputs; i++) out += numel(n->outputs[i]);
    for (int i = 0; i < n->n_inputs; i++) in += numel(n->inputs[i]);
    const px_value *a = n->n_inputs > 0 ? n->inputs[0] : NULL;
    const px_value *w = n->n_inputs > 1 ? n->inputs[1] : NULL;
    const px_value *r = n->n_inputs > 2 ? n->inputs[2] : NULL;
    int static_a = a && px_shape_is_static(&a->shape) && a->shape.rank >= 1;
    switch (n->op) {
    case PX_OP_MatMul:
        if (static_a) return 2.0 * numel(n->outputs[0]) * (double)a->shape.dims[a->shape.rank - 1];
        break;
    case PX_OP_Gemm:
        if (static_a && a->shape.rank == 2)
            return 2.0 * numel(n->outputs[0]) *
                   (double)a->shape.dims[px_attr_int(n, "transA", 0) ? 0 : 1];
        break;
    case PX_OP_Conv:
        if (w && px_shape_is_static(&w->shape) && w->shape.rank >= 1 && w->shape.dims[0] > 0)
            return 2.0 * numel(n->outputs[0]) * numel(w) / (double)w->shape.dims[0];
        break;
    case PX_OP_LSTM:
    case PX_OP_GRU:
    case PX_OP_RNN:
        if (static_a && a->shape.rank == 3)
            return 2.0 * (numel(w) + numel(r)) * (double)a->shape.dims[0] *
                   (double)a->shape.dims[1];
        break;
    default: break;
    }
    return out + in;
}

/* ---- the cut ---- */

typedef struct splitter {
    px_graph *g;
    px_train_plan *plan;
    px_diag *d;
    int S, M;
    px_comm_mode comm;
    int n_nodes, n_values;
    char *act;   /* per value: depends on a graph input */
    char *vdep;  /* per value: a variable, or made from one without an input */
    char *learn; /* per value: a variable, or made from one (it gets a gradient) */
    int *stage;  /* per node: its stage; -1: none (needed by no stage, or by several) */
    int *act_ix; /* the activation-path nodes, in graph order */
    int n_act;
    double *cost;    /* per activation-path node: its forward FLOPs */
    double *work;    /* per activation-path node: its forward and backward FLOPs */
    int *layer;      /* per activation-path node: reads a trained variable */
    int *start;      /* S + 1 entries: stage s is act_ix[start[s] .. start[s+1]) */
    int n_xfer;      /* transfers made so far (their tags) */
    px_node **copy0; /* per node: its copy for micro-batch 0 */
} splitter;

static int reads_weights(const splitter *sp, const px_node *n) {
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && sp->vdep[n->inputs[i]->id]) return 1;
    return 0;
}

/* A node's forward FLOPs plus its backward's: a matrix product (Gemm,
 * MatMul, a convolution, a recurrent layer) makes one product as large as
 * its forward for its input and one for its weights, each only when that
 * gets a gradient (the first layer's input, a graph input, gets none),
 * other nodes about their forward once. The stages' training work: cut by
 * forward FLOPs alone, the first stage would run a lighter backward than
 * the others and idle for them in every micro-batch. */
static double train_flops(const splitter *sp, const px_node *n, double forward) {
    int learns[3] = {0, 0, 0}, any = 0;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] && sp->learn[n->inputs[i]->id]) {
            if (i < 3) learns[i] = 1;
            any = 1;
        }
    switch (n->op) {
    case PX_OP_MatMul:
    case PX_OP_Gemm:
    case PX_OP_Conv:
    case PX_OP_LSTM:
    case PX_OP_GRU:
    case PX_OP_RNN: return forward * (1 + learns[0] + (learns[1] || learns[2]));
    default: return forward * (1 + any);
    }
}

static int classify(splitter *sp) {
    px_graph *g = sp->g;
    for (int i = 0; i < g->n_inputs; i++) sp->act[g->inputs[i]->id] = 1;
    for (int i = 0; i < sp->plan->n_vars; i++)
        sp->vdep[sp->plan->vars[i].value->id] = sp->learn[sp->plan->vars[i].value->id] = 1;
    for (int k = 0; k < g->n_nodes; k++) {
        px_node *n = g->nodes[k];
        int a = 0, v = 0, l = 0;
        for (int i = 0; i < n->n_inputs; i++)
            if (n->inputs[i]) {
                a |= sp->act[n->inputs[i]->id];
                v |= sp->vdep[n->inputs[i]->id];
                l |= sp->learn[n->inputs[i]->id];
            }
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o]) {
                sp->act[n->outputs[o]->id] = (char)a;
                sp->vdep[n->outputs[o]->id] = (char)(!a && v);
                sp->learn[n->outputs[o]->id] = (char)l;
            }
        /* its mask is drawn by the element's index in the global batch
         * (runtime/kernels/dropout_train.c), which a micro-batch's copy
         * does not know */
        if (a && n->op == PX_OP_DropoutTrain)
            return px_error(sp->d,
                            "--pp %d: node '%s' (Dropout in training mode) draws its mask by "
                            "each element's place in the global batch, which the micro-batches "
                            "of a pipeline do not keep yet",
                            sp->S, n->name);
        if (a) {
            sp->cost[sp->n_act] = px_node_flops(n);
            sp->work[sp->n_act] = train_flops(sp, n, sp->cost[sp->n_act]);
            sp->layer[sp->n_act] = reads_weights(sp, n);
            sp->act_ix[sp->n_act++] = k;
        }
    }
    return 0;
}

/* Notes that activation node i reads value v: the variables it is made of
 * (through nodes off the activation path) have their first and last reader
 * in lo and hi. */
static void note_reads(const splitter *sp, const px_value *v, int i, int *lo, int *hi) {
    int var = px_plan_var_of(sp->plan, v);
    if (var >= 0) {
        if (lo[var] < 0 || i < lo[var]) lo[var] = i;
        if (i > hi[var]) hi[var] = i;
        return;
    }
    const px_node *p = v->producer;
    for (int k = 0; p && k < p->n_inputs; k++)
        if (p->inputs[k] && sp->vdep[p->inputs[k]->id]) note_reads(sp, p->inputs[k], i, lo, hi);
}

/* Where each variable is read on the activation path: spans[v] its first
 * reader (an activation index; -1: none), spans[nv + v] its last. NULL:
 * out of memory. */
static int *read_spans(const splitter *sp) {
    int nv = sp->plan->n_vars, n = sp->n_act;
    int *spans = malloc(sizeof(int) * (size_t)(2 * nv + 1));
    if (!spans) return NULL;
    int *lo = spans, *hi = spans + nv;
    for (int v = 0; v < nv; v++) lo[v] = hi[v] = -1;
    for (int i = 0; i < n; i++) {
        const px_node *nd = sp->g->nodes[sp->act_ix[i]];
        for (int k = 0; k < nd->n_inputs; k++)
            if (nd->inputs[k] && sp->vdep[nd->inputs[k]->id])
                note_reads(sp, nd->inputs[k], i, lo, hi);
    }
    return spans;
}

/* inside[i] = 1 when a stage starting at activation node i would split the
 * readers of a variable (a weight used twice, such as tied embeddings)
 * between two stages: its gradient must be made on one. */
static int shared_spans(const splitter *sp, char *inside) {
    int nv = sp->plan->n_vars, n = sp->n_act;
    int *spans = read_spans(sp), *open = calloc((size_t)n + 2, sizeof(int));
    if (!spans || !open) {
        free(spans), free(open);
        return -1;
    }
    const int *lo = spans, *hi = spans + nv;
    for (int v = 0; v < nv; v++)
        if (lo[v] >= 0 && hi[v] > lo[v]) open[lo[v] + 1]++, open[hi[v] + 1]--;
    for (int i = 0, depth = 0; i < n; i++) {
        depth += open[i];
        inside[i] = depth > 0;
    }
    free(spans), free(open);
    return 0;
}

/* mem[i] = bytes of the variables activation node i is the first to read:
 * a stage's ranks hold its variables, their optimizer state and gradient
 * buckets, all in proportion to them. -1: out of memory. */
static int first_read_bytes(const splitter *sp, double *mem) {
    int *lo = read_spans(sp);
    if (!lo) return -1;
    for (int i = 0; i < sp->n_act; i++) mem[i] = 0;
    for (int v = 0; v < sp->plan->n_vars; v++)
        if (lo[v] >= 0) mem[lo[v]] += (double)px_var_bytes(&sp->plan->vars[v]);
    free(lo);
    return 0;
}

/* The cost of a stage of activation nodes [i, j): the larger of its shares
 * of the predicted training FLOPs (train_flops) and of the variables' bytes
 * (its memory), or its FLOPs share alone when `flops_only`; -1 (never
 * taken) when its larger share passes `bound`. */
typedef struct cut_costs {
    const double *flops, *mem; /* prefix sums over the activation nodes */
    double flops_total, mem_total, bound;
    int flops_only;
} cut_costs;

static double run_cost(const cut_costs *cc, int i, int j) {
    double f = cc->flops_total > 0 ? (cc->flops[j] - cc->flops[i]) / cc->flops_total : 0;
    double m = cc->mem_total > 0 ? (cc->mem[j] - cc->mem[i]) / cc->mem_total : 0;
    double both = f > m ? f : m;
    if (both > cc->bound) return -1;
    return cc->flops_only ? f : both;
}

/* The stage starts pos[from..] that minimize the largest stage's cost
 * (dynamic programming over the layers where a stage may start), into
 * start[1..S-1]. Returns that cost, or -1 when no cut keeps within
 * cc->bound. */
static double best_cut(int S, int n, const int *pos, int np, const cut_costs *cc, double *best,
                       int *from, int *start) {
    int L1 = np + 1;
    /* best[k*L1+j]: stages 0..k-1 cover [0, pos[j]) (stage k starts at pos[j]) */
    for (int j = 0; j < np; j++) best[1 * L1 + j] = run_cost(cc, 0, pos[j]);
    for (int k = 2; k < S; k++)
        for (int j = 0; j < np; j++) {
            best[k * L1 + j] = -1;
            for (int i = k - 2; i < j; i++) {
                double c = best[(k - 1) * L1 + i], r = run_cost(cc, pos[i], pos[j]);
                if (c < 0 || r < 0) continue;
                double m = c > r ? c : r;
                if (best[k * L1 + j] < 0 || m < best[k * L1 + j]) {
                    best[k * L1 + j] = m;
                    from[k * L1 + j] = i;
                }
            }
        }
    double end_best = -1;
    int j_end = -1;
    for (int j = S - 2; j < np; j++) {
        double c = best[(S - 1) * L1 + j], r = run_cost(cc, pos[j], n);
        if (c < 0 || r < 0) continue;
        double m = c > r ? c : r;
        if (end_best < 0 || m < end_best) {
            end_best = m;
            j_end = j;
        }
    }
    if (j_end < 0) return -1;
    for (int k = S - 1, j = j_end; k >= 1; k--) {
        start[k] = pos[j];
        if (k > 1) j = from[k * L1 + j];
    }
    return end_best;
}

/* The refusal of more stages than the cut can make around shared
 * weights, naming the weight read furthest apart (tied embeddings: the
 * embedding's look-up and the output projection) and its two readers. A
 * stage between them would need the weight too, and its gradient would be
 * the sum of two stages': not done (the weight and its gradient live on
 * one stage). */
static int too_few_cuts(const splitter *sp, int L, int most) {
    int nv = sp->plan->n_vars, *spans = read_spans(sp), wide = -1;
    const char *why = "";
    char named[600];
    for (int v = 0; spans && v < nv; v++)
        if (spans[v] >= 0 && spans[nv + v] > spans[v] &&
            (wide < 0 || spans[nv + v] - spans[v] > spans[nv + wide] - spans[wide]))
            wide = v;
    if (wide >= 0) {
        snprintf(named, sizeof named, ": the variable '%s' is read by '%s' and again by '%s'",
                 sp->plan->vars[wide].value->name, sp->g->nodes[sp->act_ix[spans[wide]]]->name,
                 sp->g->nodes[sp->act_ix[spans[nv + wide]]]->name);
        why = named;
    }
    int rc = px_error(sp->d,
                      "--pp %d: the model's %d layers can be cut into %d stages at most: a "
                      "cut may not fall between two reads of one weight (a weight used "
                      "twice, such as tied embeddings, stays on one stage)%s",
                      sp->S, L, most, why);
    free(spans);
    return rc;
}

/* Stage starts at layers. The cut first makes the largest share of either
 * resource as small as it can be (the stage with the most FLOPs or the most
 * memory), then, among the cuts that keep every stage within that, the
 * largest stage's FLOPs: a model whose FLOPs and weights go together is
 * cut by FLOPs, one whose weights sit apart from its FLOPs (a large layer
 * of few FLOPs) gets its memory spread too. */
static int cut(splitter *sp) {
    int S = sp->S, L = 0, n = sp->n_act;
    for (int i = 0; i < n; i++) L += sp->layer[i];
    if (L < S) {
        const char *first = "none";
        for (int i = 0; i < n; i++)
            if (sp->layer[i]) {
                first = sp->g->nodes[sp->act_ix[i]]->name;
                break;
            }
        return px_error(sp->d,
                        "--pp %d: the model has %d layer%s to cut into stages (nodes that read "
                        "a trained weight, the first '%s'), fewer than the %d stages asked",
                        S, L, L == 1 ? "" : "s", first, S);
    }
    /* pos[j]: the activation index of the j-th layer after the first */
    int *pos = malloc(sizeof(int) * (size_t)(L + 1));
    double *prefix = malloc(sizeof(double) * (size_t)(n + 1));
    double *mem = malloc(sizeof(double) * (size_t)(2 * n + 2));
    double *best = malloc(sizeof(double) * (size_t)(S * (L + 1)));
    int *from = malloc(sizeof(int) * (size_t)(S * (L + 1)));
    char *inside = malloc((size_t)n + 1);
    if (!pos || !prefix || !mem || !best || !from || !inside || shared_spans(sp, inside) ||
        first_read_bytes(sp, mem + n + 1)) {
        free(pos), free(prefix), free(mem), free(best), free(from), free(inside);
        return px_error(sp->d, "--pp: out of memory");
    }
    int np = 0, seen = 0;
    for (int i = 0; i < n; i++)
        if (sp->layer[i] && seen++ && !inside[i]) pos[np++] = i;
    free(inside);
    if (np < S - 1) {
        free(pos), free(prefix), free(mem), free(best), free(from);
        return too_few_cuts(sp, L, np + 1);
    }
    prefix[0] = mem[0] = 0;
    for (int i = 0; i < n; i++) {
        prefix[i + 1] = prefix[i] + sp->work[i];
        mem[i + 1] = mem[i] + mem[n + 1 + i];
    }
    cut_costs cc = {prefix, mem, prefix[n], mem[n], 2, 0};
    double worst = best_cut(S, n, pos, np, &cc, best, from, sp->start);
    /* then the FLOPs, within that (and a rounding's width above it) */
    cc.bound = worst * (1 + 1e-9);
    cc.flops_only = 1;
    if (worst >= 0) worst = best_cut(S, n, pos, np, &cc, best, from, sp->start);
    free(pos), free(prefix), free(mem), free(best), free(from);
    if (worst < 0) return px_error(sp->d, "--pp %d: internal error: no cut of the model", S);
    sp->start[0] = 0;
    sp->start[S] = n;
    for (int s = 0; s < S; s++)
        for (int i = sp->start[s]; i < sp->start[s + 1]; i++) sp->stage[sp->act_ix[i]] = s;
    return 0;
}

/* The one stage that reads n's outputs; -1 when one is a graph output, a
 * reader has no stage yet, or two stages read them. */
static int only_reader_stage(const splitter *sp, const px_node *n) {
    int s = -1;
    for (int o = 0; o < n->n_outputs; o++) {
        const px_value *v = n->outputs[o];
        if (!v) continue;
        if (v->is_output) return -1;
        for (int u = 0; u < v->n_uses; u++) {
            int us = sp->stage[v->uses[u].node->id];
            if (us < 0 || (s >= 0 && us != s)) return -1;
            s = us;
        }
    }
    return s;
}

/* The stage of every other node: the one stage that reads it, else none. A
 * variable (or a value made from one) read by two stages is refused: its
 * gradient would be made on both. */
static int place_rest(splitter *sp) {
    px_graph *g = sp->g;
    for (int k = g->n_nodes - 1; k >= 0; k--) {
        px_node *n = g->nodes[k];
        int on_path = 0;
        for (int o = 0; o < n->n_outputs; o++)
            on_path |= n->outputs[o] && sp->act[n->outputs[o]->id];
        if (on_path) continue;
        sp->stage[k] = only_reader_stage(sp, n);
    }
    for (int i = 0; i < sp->plan->n_vars; i++) {
        px_train_var *tv = &sp->plan->vars[i];
        int s = -1;
        for (int u = 0; u < tv->value->n_uses; u++) {
            const px_node *user = tv->value->uses[u].node;
            int us = sp->stage[user->id];
            if (us < 0 || (s >= 0 && us != s))
                return px_error(sp->d,
                                "--pp %d: the variable '%s' is read by node '%s' outside the "
                                "stage of its other reads (a weight shared between stages, "
                                "such as a tied embedding, is not supported yet)",
                                sp->S, tv->value->name, user->name);
            s = us;
        }
        tv->pp_stage = s < 0 ? 0 : s;
    }
    return 0;
}

/* ---- the copies ---- */

static void set_sched(px_node *n, int stage, int at, int mb, int phase) {
    if (stage >= 0) px_node_set_attr_int(n, "pp_stage", stage);
    px_node_set_attr_int(n, "pp_at", at);
    px_node_set_attr_int(n, "pp_mb", mb);
    px_node_set_attr_int(n, "pp_phase", phase);
}

static px_value *i64_const(px_graph *g, const char *base, int64_t v, px_diag *d) {
    int64_t one = 1;
    px_shape s = px_shape_make(1, &one);
    px_tensor *t = px_tensor_new(PX_I64, &s, d);
    if (!t) return NULL;
    px_tensor_set_i64(t, 0, v);
    return px_graph_add_constant(g, base, t);
}

static px_node *add(splitter *sp, const char *op, const char *domain, const char *name, int n_in,
                    px_value *const *in, px_value *out) {
    px_node *n = px_graph_add_node(sp->g, op, domain, name, n_in, in, 1, &out);
    if (!n || px_infer_node(sp->g, n, sp->d)) return NULL;
    return n;
}

/* Rows [m*b, (m+1)*b) of input x, for stage s (cached per input and stage). */
static px_value *micro_input(splitter *sp, px_value *x, int m, int s, px_value **cache) {
    px_value **slot = &cache[x->id * sp->S + s];
    if (*slot) return *slot;
    int64_t b = x->shape.dims[0] / sp->M;
    char name[600];
    snprintf(name, sizeof name, "pp/mb%d/s%d/%s", m, s, x->name);
    px_shape shape = x->shape;
    shape.dims[0] = b;
    px_value *ins[4] = {x, i64_const(sp->g, "pp/start", m * b, sp->d),
                        i64_const(sp->g, "pp/end", (m + 1) * b, sp->d),
                        i64_const(sp->g, "pp/axes", 0, sp->d)};
    if (!ins[1] || !ins[2] || !ins[3]) return NULL;
    px_value *y = px_graph_new_value(sp->g, name, x->dtype, &shape);
    px_node *n = add(sp, "Slice", "", name, 4, ins, y);
    if (!n) return NULL;
    set_sched(n, s, s, m, PX_PP_FWD);
    return *slot = y;
}

/* Copy m of activation value v (made on stage a), as stage s reads it. */
static px_value *crossing(splitter *sp, px_value *v, px_value *mv, int a, int s, int m,
                          px_value **cache) {
    px_value **slot = &cache[v->id * sp->S + s];
    if (*slot) return *slot;
    char name[600];
    snprintf(name, sizeof name, "pp/mb%d/%s/to%d", m, v->name, s);
    px_value *y = px_graph_new_value(sp->g, name, mv->dtype, &mv->shape);
    px_node *n = add(sp, "PPTransfer", PX_DOMAIN_PARALLAX, name, 1, &mv, y);
    if (!n) return NULL;
    px_node_set_attr_int(n, "from", a);
    px_node_set_attr_int(n, "to", s);
    px_node_set_attr_int(n, "tag", 2 * (int64_t)sp->n_xfer++);
    set_sched(n, -1, a, m, PX_PP_FWD);
    if (m == 0) sp->plan->pp_stages[a].send_bytes += 4 * (int64_t)numel(mv);
    return *slot = y;
}

static int copy_micro_batch(splitter *sp, int m, px_value **map, px_value **cache) {
    px_graph *g = sp->g;
    memset(cache, 0, sizeof *cache * (size_t)sp->n_values * (size_t)sp->S);
    for (int i = 0; i < sp->n_act; i++) {
        int k = sp->act_ix[i], s = sp->stage[k];
        px_node *n = g->nodes[k];
        px_value *ins[64], *outs[16];
        if (n->n_inputs > 64 || n->n_outputs > 16)
            return px_error(sp->d, "--pp: node '%s' has too many inputs or outputs to copy",
                            n->name);
        for (int j = 0; j < n->n_inputs; j++) {
            px_value *v = n->inputs[j];
            if (!v || !sp->act[v->id])
                ins[j] = v;
            else if (v->kind == PX_VALUE_INPUT)
                ins[j] = micro_input(sp, v, m, s, cache);
            else if (sp->stage[v->producer->id] != s)
                ins[j] = crossing(sp, v, map[v->id], sp->stage[v->producer->id], s, m, cache);
            else
                ins[j] = map[v->id];
            if (v && !ins[j]) return -1;
        }
        char name[600];
        for (int o = 0; o < n->n_outputs; o++) {
            px_value *v = n->outputs[o];
            outs[o] = NULL;
            if (!v) continue;
            snprintf(name, sizeof name, "pp/mb%d/%s", m, v->name);
            outs[o] = map[v->id] = px_graph_new_value(g, name, v->dtype, &v->shape);
        }
        /* unique: backward nodes find their forward node by name */
        snprintf(name, sizeof name, "pp/mb%d/n%d/%s", m, k, n->name);
        px_node *c =
            px_graph_add_node(g, n->op_type, n->domain, name, n->n_inputs, ins, n->n_outputs, outs);
        if (!c) return px_error(sp->d, "--pp: out of memory");
        for (int a = 0; a < n->n_attrs; a++)
            if (px_node_copy_attr(c, &n->attrs[a], sp->d)) return -1;
        set_sched(c, s, s, m, PX_PP_FWD);
        if (m == 0) sp->copy0[k] = c;

        if (px_infer_node(g, c, sp->d)) return -1;
    }
    return 0;
}

/* Output o: the mean of its copies on its stage, broadcast to every stage. */
static int mean_output(splitter *sp, px_value *o, px_value **maps) {
    px_graph *g = sp->g;
    const px_node *made = maps[o->id]->producer; /* micro-batch 0's copy */
    int s = (int)px_attr_int(made, "pp_stage", 0);
    if (o->dtype != PX_F32 || numel(o) != 1 || !px_shape_is_static(&o->shape)) {
        char buf[128];
        return px_error(sp->d,
                        "--pp %d: the output '%s' (%s %s) is not a float scalar (a loss or a "
                        "metric): a pipeline step returns only those",
                        sp->S, o->name, px_dtype_name(o->dtype),
                        px_shape_str(&o->shape, buf, sizeof buf));
    }
    px_value **copies = malloc(sizeof *copies * (size_t)sp->M);
    if (!copies) return px_error(sp->d, "--pp: out of memory");
    for (int m = 0; m < sp->M; m++) copies[m] = maps[(size_t)m * (size_t)sp->n_values + o->id];
    char name[600];
    snprintf(name, sizeof name, "pp/sum/%s", o->name);
    px_value *sum = px_graph_new_value(g, name, o->dtype, &o->shape);
    px_node *n = add(sp, "Sum", "", name, sp->M, copies, sum);
    free(copies);
    if (!n) return -1;
    set_sched(n, s, s, -1, PX_PP_POST);
    px_shape scalar = px_shape_scalar();
    px_tensor *t = px_tensor_new(PX_F32, &scalar, sp->d);
    if (!t) return -1;
    px_tensor_set_f64(t, 0, 1.0 / sp->M);
    px_value *mul_in[2] = {sum, px_graph_add_constant(g, "pp/inv_micro_batches", t)};
    snprintf(name, sizeof name, "pp/mean/%s", o->name);
    px_value *mean = px_graph_new_value(g, name, o->dtype, &o->shape);
    if (!(n = add(sp, "Mul", "", name, 2, mul_in, mean))) return -1;
    set_sched(n, s, s, -1, PX_PP_POST);
    if (o->producer) px_graph_remove_node(g, o->producer);
    snprintf(name, sizeof name, "pp/broadcast/%s", o->name);
    if (!(n = add(sp, "PPBroadcast", PX_DOMAIN_PARALLAX, name, 1, &mean, o))) return -1;
    px_node_set_attr_int(n, "from", s);
    return 0;
}

static void stage_table(splitter *sp) {
    px_graph *g = sp->g;
    for (int s = 0; s < sp->S; s++) {
        px_pp_stage_info *st = &sp->plan->pp_stages[s];
        const px_node *first = g->nodes[sp->act_ix[sp->start[s]]];
        const px_node *last = g->nodes[sp->act_ix[sp->start[s + 1] - 1]];
        snprintf(st->first, sizeof st->first, "%s", first->name[0] ? first->name : first->op_type);
        snprintf(st->last, sizeof st->last, "%s", last->name[0] ? last->name : last->op_type);
        for (int i = sp->start[s]; i < sp->start[s + 1]; i++) {
            st->flops += sp->cost[i];
            st->n_layers += sp->layer[i];
        }
    }
    for (int i = 0; i < sp->plan->n_vars; i++)
        sp->plan->pp_stages[sp->plan->vars[i].pp_stage].var_bytes +=
            4 * (int64_t)numel(sp->plan->vars[i].value);
}

/* A node of the activation path made from the inputs alone (no layer
 * before it: the labels reshaped for the loss, say) and read by one later
 * stage only moves to that stage: each stage reads its micro-batch of the
 * inputs itself, so the value is made where it is read instead of crossing
 * (which moves float32 activations only: an int64 label would not cross).
 * Graph order holds: its inputs are graph inputs or such nodes, which move
 * with it (in reverse order, readers first). */
static int follow_readers(splitter *sp) {
    px_graph *g = sp->g;
    char *layered = calloc((size_t)sp->n_values, 1); /* per value: a layer before it */
    if (!layered) return px_error(sp->d, "--pp: out of memory");
    for (int i = 0; i < sp->n_act; i++) {
        const px_node *n = g->nodes[sp->act_ix[i]];
        int l = sp->layer[i];
        for (int j = 0; j < n->n_inputs; j++) l |= n->inputs[j] && layered[n->inputs[j]->id];
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o]) layered[n->outputs[o]->id] = (char)l;
    }
    for (int i = sp->n_act - 1; i >= 0; i--) {
        int k = sp->act_ix[i], after_layer = 0;
        const px_node *n = g->nodes[k];
        for (int o = 0; o < n->n_outputs; o++)
            after_layer |= n->outputs[o] && layered[n->outputs[o]->id];
        if (after_layer) continue;
        int s = only_reader_stage(sp, n);
        if (s > sp->stage[k]) sp->stage[k] = s;
    }
    free(layered);
    return 0;
}

static int split(splitter *sp) {
    px_graph *g = sp->g;
    if (classify(sp) || cut(sp) || follow_readers(sp) || place_rest(sp)) return -1;
    stage_table(sp);
    for (int i = 0; i < g->n_inputs; i++) {
        px_value *x = g->inputs[i];
        if (x->shape.rank < 1 || x->shape.dims[0] != g->batch)
            return px_error(sp->d, "--pp %d: the input '%s' has no batch dimension to split", sp->S,
                            x->name);
    }
    size_t nv = (size_t)sp->n_values;
    px_value **maps = calloc(nv * (size_t)sp->M, sizeof *maps);
    px_value **cache = calloc(nv * (size_t)sp->S, sizeof *cache);
    int rc = maps && cache ? 0 : px_error(sp->d, "--pp: out of memory");
    for (int i = 0; i < g->n_inputs && !rc; i++) g->inputs[i]->shape.dims[0] *= sp->M;
    /* the last micro-batch first: autodiff, which walks backwards, then
     * accumulates the variables' gradients from micro-batch 0 on */
    for (int m = sp->M - 1; m >= 0 && !rc; m--) rc = copy_micro_batch(sp, m, maps + m * nv, cache);
    int n_out = g->n_outputs;
    px_value **outs = rc ? NULL : malloc(sizeof *outs * (size_t)(n_out + 1));
    if (!rc && !outs) rc = px_error(sp->d, "--pp: out of memory");
    for (int i = 0; i < n_out && !rc; i++) outs[i] = g->outputs[i];
    for (int i = 0; i < n_out && !rc; i++)
        if (outs[i]->producer && sp->act[outs[i]->id]) rc = mean_output(sp, outs[i], maps);
    free(outs);
    free(maps);
    free(cache);
    if (rc) return -1;
    for (int i = 0; i < sp->plan->n_vars; i++) { /* the plan names the copy from now on */
        px_train_var *tv = &sp->plan->vars[i];
        if (tv->dense_node && sp->copy0[tv->dense_node->id])
            tv->dense_node = sp->copy0[tv->dense_node->id];
    }
    for (int i = 0; i < sp->n_act; i++)
        if (!g->nodes[sp->act_ix[i]]->dead) px_graph_remove_node(g, g->nodes[sp->act_ix[i]]);
    for (int k = 0; k < sp->n_nodes; k++) {
        px_node *n = g->nodes[k];
        if (!n->dead && sp->stage[k] >= 0) set_sched(n, sp->stage[k], sp->stage[k], -1, PX_PP_PRE);
    }
    g->batch *= sp->M;
    px_graph_compact(g);
    return px_graph_toposort(g, sp->d);
}

int px_pass_pipeline_split(px_graph *g, const px_train_config *cfg, px_train_plan *plan,
                           px_diag *d) {
    plan->pp = cfg->pp > 1 ? cfg->pp : 1;
    plan->micro_batches = cfg->pp > 1 ? cfg->micro_batches : 1;
    if (cfg->pp <= 1) return 0;
    px_graph_compact(g);
    if (g->batch * cfg->micro_batches <= 0)
        return px_error(d, "--pp %d: the model's inputs share no batch dimension", cfg->pp);
    splitter sp = {
        .g = g, .plan = plan, .d = d, .S = cfg->pp, .M = cfg->micro_batches, .comm = cfg->comm};
    sp.n_nodes = g->n_nodes;
    sp.n_values = g->n_values;
    sp.act = calloc((size_t)g->n_values + 1, 1);
    sp.vdep = calloc((size_t)g->n_values + 1, 1);
    sp.stage = malloc(sizeof(int) * ((size_t)g->n_nodes + 1));
    sp.act_ix = malloc(sizeof(int) * ((size_t)g->n_nodes + 1));
    sp.cost = malloc(sizeof(double) * ((size_t)g->n_nodes + 1));
    sp.work = malloc(sizeof(double) * ((size_t)g->n_nodes + 1));
    sp.learn = calloc((size_t)g->n_values + 1, 1);
    sp.layer = malloc(sizeof(int) * ((size_t)g->n_nodes + 1));
    sp.start = malloc(sizeof(int) * ((size_t)sp.S + 1));
    sp.copy0 = calloc((size_t)g->n_nodes + 1, sizeof *sp.copy0);
    plan->pp_stages = calloc((size_t)sp.S, sizeof *plan->pp_stages);
    int rc = -1;
    if (!sp.act || !sp.vdep || !sp.learn || !sp.stage || !sp.act_ix || !sp.cost || !sp.work ||
        !sp.layer || !sp.start || !sp.copy0 || !plan->pp_stages) {
        px_error(d, "--pp: out of memory");
    } else {
        for (int k = 0; k < g->n_nodes; k++) sp.stage[k] = -1;
        rc = split(&sp);
    }
    free(sp.act), free(sp.vdep), free(sp.learn), free(sp.stage), free(sp.act_ix), free(sp.cost);
    free(sp.work), free(sp.layer);
    free(sp.start), free(sp.copy0);
    return rc;
}

/* ---- after autodiff ---- */

static int by_name(const void *a, const void *b) {
    return strcmp((*(px_node *const *)a)->name, (*(px_node *const *)b)->name);
}

/* The forward node that backward node n (named grad/FORWARD/Op) is part
 * of the gradient of, among the scheduled forward nodes. */
static const px_node *forward_of(const px_node *n, px_node **fwd, int n_fwd) {
    if (strncmp(n->name, "grad/", 5) != 0) return NULL;
    const char *slash = strrchr(n->name, '/');
    size_t len = (size_t)(slash - n->name) - 5;
    char name[600];
    if (len >= sizeof name) return NULL;
    memcpy(name, n->name + 5, len);
    name[len] = '\0';
    px_node key = {.name = name}, *kp = &key;
    px_node **hit = bsearch(&kp, fwd, (size_t)n_fwd, sizeof *fwd, by_name);
    return hit ? *hit : NULL;
}

static int attribute_backward(px_graph *g, px_diag *d) {
    px_node **fwd = malloc(sizeof *fwd * ((size_t)g->n_nodes + 1));
    if (!fwd) return px_error(d, "--pp: out of memory");
    int n_fwd = 0;
    for (int k = 0; k < g->n_nodes; k++)
        if (!g->nodes[k]->dead && px_node_attr(g->nodes[k], "pp_at")) fwd[n_fwd++] = g->nodes[k];
    qsort(fwd, (size_t)n_fwd, sizeof *fwd, by_name);
    static const int backward_phase[] = {[PX_PP_PRE] = PX_PP_POST,
                                         [PX_PP_FWD] = PX_PP_BWD,
                                         [PX_PP_BWD] = PX_PP_BWD,
                                         [PX_PP_POST] = PX_PP_PRE};
    for (int k = 0; k < g->n_nodes; k++) {
        px_node *n = g->nodes[k];
        if (n->dead || px_node_attr(n, "pp_at")) continue;
        const px_node *f = forward_of(n, fwd, n_fwd);
        if (!f || !px_node_attr(f, "pp_stage")) continue;
        int64_t phase = px_attr_int(f, "pp_phase", PX_PP_FWD);
        if (phase < PX_PP_PRE || phase > PX_PP_POST) phase = PX_PP_FWD;
        set_sched(n, (int)px_attr_int(f, "pp_stage", 0), (int)px_attr_int(f, "pp_at", 0),
                  (int)px_attr_int(f, "pp_mb", -1), backward_phase[phase]);
    }
    free(fwd);
    return 0;
}

/* Masked weights (--sparsity) are not supported by stages yet. */
static int check_updates(const px_graph *g, px_diag *d) {
    for (int k = 0; k < g->n_nodes; k++) {
        const px_node *n = g->nodes[k];
        if (!n->dead && n->op == PX_OP_SparseUpdate)
            return px_error(d,
                            "--pp: node '%s' (%s) updates masked entries, which pipeline "
                            "stages do not support yet",
                            n->name, n->op_type);
    }
    return 0;
}

int px_pass_pipeline_grads(px_graph *g, px_train_plan *plan, px_diag *d) {
    if (plan->pp <= 1) return 0;
    if (attribute_backward(g, d)) return -1;
    return check_updates(g, d);
}

/* ---- the 1F1B order ---- */

typedef struct sched_op {
    int phase, mb;
} sched_op;

/* Simulates one step of 1F1B with unit forward and double backward times:
 * fstart[s * M + m] and fend[s * M + m] when stage s starts and ends
 * micro-batch m's forward, bstart and bend its backward, pre[s] and
 * post[s] its work before and after the micro-batches. Returns 0, or -1 if
 * the schedule stalls (a bug). */
static int simulate(int S, int M, double *fstart, double *fend, double *bstart, double *bend,
                    double *pre, double *post) {
    sched_op *seq = malloc(sizeof *seq * (size_t)(S * (2 * M + 2)));
    int *len = calloc((size_t)S, sizeof *len), *pos = calloc((size_t)S, sizeof *pos);
    double *free_at = calloc((size_t)S, sizeof *free_at);
    int rc = -1;
    if (!seq || !len || !pos || !free_at) goto done;
    for (int i = 0; i < S * M; i++) fend[i] = bend[i] = -1;
    for (int s = 0; s < S; s++) {
        sched_op *q = seq + s * (2 * M + 2);
        int warm = S - 1 - s < M ? S - 1 - s : M, n = 0;
        q[n++] = (sched_op){PX_PP_PRE, -1};
        for (int m = 0; m < warm; m++) q[n++] = (sched_op){PX_PP_FWD, m};
        for (int i = 0; i < M - warm; i++) {
            q[n++] = (sched_op){PX_PP_FWD, warm + i};
            q[n++] = (sched_op){PX_PP_BWD, i};
        }
        for (int m = M - warm; m < M; m++) q[n++] = (sched_op){PX_PP_BWD, m};
        q[n++] = (sched_op){PX_PP_POST, -1};
        len[s] = n;
    }
    for (int progress = 1; progress;) {
        progress = 0;
        for (int s = 0; s < S; s++)
            while (pos[s] < len[s]) {
                sched_op op = seq[s * (2 * M + 2) + pos[s]];
                double ready = free_at[s], dur = 0.01;
                if (op.phase == PX_PP_FWD) {
                    if (s > 0 && fend[(s - 1) * M + op.mb] < 0) break;
                    if (s > 0 && fend[(s - 1) * M + op.mb] > ready)
                        ready = fend[(s - 1) * M + op.mb];
                    dur = 1;
                } else if (op.phase == PX_PP_BWD) {
                    if (s + 1 < S && bend[(s + 1) * M + op.mb] < 0) break;
                    if (s + 1 < S && bend[(s + 1) * M + op.mb] > ready)
                        ready = bend[(s + 1) * M + op.mb];
                    dur = 2;
                }
                if (op.phase == PX_PP_PRE) pre[s] = ready;
                if (op.phase == PX_PP_POST) post[s] = ready;
                if (op.phase == PX_PP_FWD) fstart[s * M + op.mb] = ready;
                if (op.phase == PX_PP_BWD) bstart[s * M + op.mb] = ready;
                free_at[s] = ready + dur;
                if (op.phase == PX_PP_FWD) fend[s * M + op.mb] = free_at[s];
                if (op.phase == PX_PP_BWD) bend[s * M + op.mb] = free_at[s];
                pos[s]++;
                progress = 1;
            }
    }
    rc = 0;
    for (int s = 0; s < S; s++)
        if (pos[s] < len[s]) rc = -1;
done:
    free(seq), free(len), free(pos), free(free_at);
    return rc;
}

typedef struct keyed {
    px_node *n;
    int band; /* 0: needs no stage, first; 1: a stage's work; 2: after the stages */
    double at;
    int later; /* 0: a transfer, 1: a stage's node (a transfer goes first at one time) */
    int stage, pos;
} keyed;

static int by_key(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->band != y->band) return x->band - y->band;
    if (x->at != y->at) return x->at < y->at ? -1 : 1;
    if (x->later != y->later) return x->later - y->later;
    if (x->stage != y->stage) return x->stage - y->stage;
    return x->pos - y->pos;
}

/* The stage of the node that made v, or -1. */
static int made_on(const px_value *v) {
    const px_node *made = v ? v->producer : NULL;
    return made && px_node_attr(made, "pp_stage") ? (int)px_attr_int(made, "pp_stage", 0) : -1;
}

/* The Gather that reads a PSPull's row cache, or NULL. */
static const px_node *cache_reader(const px_node *pull) {
    const px_value *cache = pull->outputs[0];
    for (int u = 0; cache && u < cache->n_uses; u++)
        if (!cache->uses[u].node->dead && cache->uses[u].node->op == PX_OP_Gather)
            return cache->uses[u].node;
    return NULL;
}

/* A sparse variable's row set becomes a dense gradient and a mask of the
 * rows touched (RowsToDense, comm.c) for the AllReduce: that runs after
 * the backward passes, on the stage that made the row set.
 *
 * On the parameter servers (every rank serves its shards and takes part
 * in every pull and push, with no rows of its own where the variable
 * lives on another stage: the runtime knows from var_pp_stage), a
 * micro-batch's pull runs where its Gather does, and the push of the
 * step's row set (the micro-batches' rows, summed on the shards over the
 * stage's ranks) after the backward passes of the stage that made it.
 * Neither has a pp_stage: every rank runs them at that place of the one
 * order all ranks follow, so every exchange meets on every rank. */
static int stage_row_sets(px_graph *g, px_diag *d) {
    for (int k = 0; k < g->n_nodes; k++) {
        px_node *n = g->nodes[k];
        if (n->dead) continue;
        if (n->op == PX_OP_PSPushDense || (n->op == PX_OP_PSPull && n->n_outputs != 2))
            return px_error(d,
                            "--pp: node '%s' (%s) keeps a dense variable on the parameter "
                            "servers, which pipeline stages do not support: give --comm hybrid "
                            "or allreduce",
                            n->name, n->op_type);
        if (n->op == PX_OP_PSPull) {
            const px_node *gather = cache_reader(n);
            if (!gather || !px_node_attr(gather, "pp_at") || !px_node_attr(gather, "pp_mb"))
                return px_error(d, "--pp: node '%s' pulls rows no micro-batch reads", n->name);
            set_sched(n, -1, (int)px_attr_int(gather, "pp_at", 0),
                      (int)px_attr_int(gather, "pp_mb", -1),
                      (int)px_attr_int(gather, "pp_phase", PX_PP_FWD));
            continue;
        }
        if (n->op != PX_OP_RowsToDense && n->op != PX_OP_PSPush) continue;
        int in = n->op == PX_OP_PSPush ? 1 : 0, s = made_on(n->inputs[in]);
        if (s < 0) return px_error(d, "--pp: node '%s' reads a row set no stage made", n->name);
        set_sched(n, n->op == PX_OP_PSPush ? -1 : s, s, -1, PX_PP_POST);
    }
    return 0;
}

/* A variable lives on the ranks of its stage only: every node outside the
 * micro-batches that reads it, or reads what a stage's node made (its
 * gradient's AllReduce, its update), runs on that stage (pp_stage, no
 * place in the 1F1B schedule: after the stages' work). In graph order, so
 * that a chain of such nodes takes its stage from the first. A node that
 * would read two stages' values is a bug. */
static int stage_updates(px_graph *g, const px_train_plan *plan, px_diag *d) {
    for (int k = 0; k < g->n_nodes; k++) {
        px_node *n = g->nodes[k];
        if (n->dead || px_node_attr(n, "pp_at") || px_node_attr(n, "pp_stage")) continue;
        /* the exchanges between stages run on both ends */
        if (n->op == PX_OP_PPBroadcast || n->op == PX_OP_PPTransfer) continue;
        int s = -1;
        const px_value *from = NULL;
        for (int i = 0; i < n->n_inputs; i++) {
            const px_value *v = n->inputs[i];
            if (!v) continue;
            int var = px_plan_var_of(plan, v), vs = -1;
            if (var >= 0)
                vs = plan->vars[var].pp_stage;
            else if (v->producer && px_node_attr(v->producer, "pp_stage"))
                vs = (int)px_attr_int(v->producer, "pp_stage", 0);
            if (vs < 0) continue;
            if (s >= 0 && vs != s)
                return px_error(d,
                                "--pp: internal error: node '%s' reads '%s' of stage %d and "
                                "'%s' of stage %d",
                                n->name, from->name, s, v->name, vs);
            s = vs;
            from = v;
        }
        if (s >= 0) px_node_set_attr_int(n, "pp_stage", s);
    }
    return 0;
}

int px_pass_pipeline_schedule(px_graph *g, const px_train_plan *plan, px_diag *d) {
    if (plan->pp <= 1) return 0;
    int S = plan->pp, M = plan->micro_batches;
    px_graph_compact(g);
    if (stage_row_sets(g, d) || px_pp_union_pulls(g, plan, d) || stage_updates(g, plan, d))
        return -1;
    double *fstart = malloc(sizeof(double) * (size_t)(S * M));
    double *bstart = malloc(sizeof(double) * (size_t)(S * M));
    double *fend = malloc(sizeof(double) * (size_t)(S * M));
    double *bend = malloc(sizeof(double) * (size_t)(S * M));
    double *pre = malloc(sizeof(double) * (size_t)S), *post = malloc(sizeof(double) * (size_t)S);
    keyed *ks = malloc(sizeof *ks * ((size_t)g->n_nodes + 1));
    char *late = calloc((size_t)g->n_values + 1, 1); /* made by a stage or after */
    int rc = -1;
    if (!fstart || !bstart || !fend || !bend || !pre || !post || !ks || !late) {
        px_error(d, "--pp: out of memory");
        goto done;
    }
    if (simulate(S, M, fstart, fend, bstart, bend, pre, post)) {
        px_error(d, "--pp: internal error: the 1F1B schedule of %d stages stalls", S);
        goto done;
    }
    for (int k = 0; k < g->n_nodes; k++) {
        px_node *n = g->nodes[k];
        keyed *e = &ks[k];
        *e = (keyed){.n = n, .pos = k};
        if (px_node_attr(n, "pp_at")) {
            int s = (int)px_attr_int(n, "pp_at", 0), m = (int)px_attr_int(n, "pp_mb", -1);
            int phase = (int)px_attr_int(n, "pp_phase", PX_PP_FWD);
            if (s < 0 || s >= S || m >= M ||
                (m < 0 && (phase == PX_PP_FWD || phase == PX_PP_BWD))) {
                px_error(d, "--pp: internal error: node '%s' has no place in the schedule",
                         n->name);
                goto done;
            }
            e->band = 1;
            e->stage = s;
            e->later = 1;
            e->at = phase == PX_PP_PRE    ? pre[s]
                    : phase == PX_PP_POST ? post[s]
                    : phase == PX_PP_FWD  ? fstart[s * M + m]
                                          : bstart[s * M + m];
            /* A transfer runs on both ends at one place in the order: where
             * its value exists, at the end of the sender's forward or
             * backward, ahead of the work that starts then. The sender
             * sends as soon as its pass is done; the receiver's blocking
             * receive comes after all its work that the simulation starts
             * earlier. Placed at the pass's start, the receiver would wait
             * out the sender's whole pass with work of its own at hand (in
             * 1F1B's steady state, stage s waiting for the gradient of
             * micro-batch m before its forward of m + S - s). */
            if (n->op == PX_OP_PPTransfer && (phase == PX_PP_FWD || phase == PX_PP_BWD)) {
                e->at = phase == PX_PP_FWD ? fend[s * M + m] : bend[s * M + m];
                e->later = 0;
            }
            /* a node that gathers several micro-batches' values (a sparse
             * variable's row set) runs once the last of them is made */
            for (int i = 0; i < n->n_inputs; i++) {
                const px_node *p = n->inputs[i] ? n->inputs[i]->producer : NULL;
                if (p && !p->dead && ks[p->id].band == 1 && ks[p->id].stage == s &&
                    ks[p->id].at > e->at)
                    e->at = ks[p->id].at;
            }
        } else {
            for (int i = 0; i < n->n_inputs; i++)
                if (n->inputs[i] && late[n->inputs[i]->id]) e->band = 2;
        }
        if (e->band)
            for (int o = 0; o < n->n_outputs; o++)
                if (n->outputs[o]) late[n->outputs[o]->id] = 1;
    }
    qsort(ks, (size_t)g->n_nodes, sizeof *ks, by_key);
    for (int k = 0; k < g->n_nodes; k++) {
        g->nodes[k] = ks[k].n;
        g->nodes[k]->id = k;
    }
    rc = px_graph_verify(g, d);
    if (rc) px_note(d, "--pp: the 1F1B order of the step's nodes breaks a dependency (a bug)");
done:
    free(fstart), free(bstart), free(fend), free(bend), free(pre), free(post), free(ks), free(late);
    return rc;
}
