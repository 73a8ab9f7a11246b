/* The plan of the masked weights (weight_sparsity.h).
 *
 * A weight can be masked when it is a trained float32 matrix and every use
 * multiplies it from the right: MatMul(A, W) (W stored [in, out]) or
 * Gemm(A, W[, C]) with transA 0 and alpha 1 (W [out, in] with transB 1,
 * [in, out] without; C with beta 1), every use with the same orientation.
 *
 * Live entries: round((1 - s) * numel) (at least one); for a block
 * pattern whole blocks, round((1 - s) * blocks); for n:m, n of every m
 * (s must be 1 - n/m). ERK (--sparsity-init erk with auto:F) gives each
 * weight the density eps * (in + out) / (in * out), with eps chosen so the
 * masked weights together keep (1 - F) of their entries, and the weights
 * that would exceed density 1 left dense, as RigL's
 * sparsity_distribution does. */
#include "weight_sparsity.h"

#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int px_sparsity_requested(const px_sparsity_config *cfg) {
    return cfg && (cfg->n_targets > 0 || cfg->has_auto);
}

void px_sparsity_config_free(px_sparsity_config *cfg) {
    for (int i = 0; i < cfg->n_targets; i++) free(cfg->targets[i].name);
    free(cfg->targets);
    cfg->targets = NULL;
    cfg->n_targets = 0;
}

/* bench/sparse_ffn.py --sweep, an FFN pair at batch 64 and 1 thread: the
 * sparse kernels' step time over the dense GEMM's is 0.18 at density 0.1,
 * 0.45 at 0.4, 0.60 at 0.5 and 1.00 at 0.7 for 1024 x 1024 weights, and 0.34
 * at 0.5 for 4096 x 4096 (docs/sparse_training.md). Every pattern runs the
 * same kernels over its live entries, so one crossover serves them all; the
 * smaller layers' is the one kept, as larger ones only move it up. */
double px_sparse_crossover_density(px_sparsity_pattern pattern) {
    (void)pattern;
    return 0.7;
}

/* The orientation W has in every use: 0 [out, in], 1 [in, out]; or -1 with
 * *why and *node set. */
static int orientation(const px_value *w, const char **why, const px_node **node) {
    int orient = -2;
    for (int u = 0; u < w->n_uses; u++) {
        const px_node *n = w->uses[u].node;
        int input = w->uses[u].index, o = -1;
        if (n->dead) continue;
        *node = n;
        if (n->op == PX_OP_Gather && input == 0) {
            *why = "is read by a Gather (an embedding table): only MatMul and Gemm weights can be "
                   "masked";
            return -1;
        }
        if (n->op == PX_OP_MatMul && input == 1)
            o = 1;
        else if (n->op == PX_OP_Gemm && input == 1) {
            if (px_attr_int(n, "transA", 0) != 0 || px_attr_float(n, "alpha", 1) != 1.0f ||
                (n->n_inputs > 2 && n->inputs[2] && px_attr_float(n, "beta", 1) != 1.0f)) {
                *why = "is read by a Gemm with transA, alpha or beta other than 0, 1, 1";
                return -1;
            }
            o = px_attr_int(n, "transB", 0) ? 0 : 1;
        } else {
            *why = "is read by a node that does not multiply it from the right (only MatMul(A, W) "
                   "and Gemm(A, W) weights can be masked)";
            return -1;
        }
        if (orient != -2 && o != orient) {
            *why = "is used both as [out, in] and as [in, out]";
            return -1;
        }
        orient = o;
    }
    if (orient == -2) {
        *why = "is not read by the step";
        *node = NULL;
        return -1;
    }
    return orient;
}

static double target_of(const px_sparsity_config *cfg, const char *name, int *named) {
    double s = -1;
    *named = 0;
    for (int i = 0; i < cfg->n_targets; i++)
        if (!strcmp(cfg->targets[i].name, name)) {
            s = cfg->targets[i].sparsity;
            *named = 1;
        }
    return s;
}

const char *px_masked_pattern_text(const px_masked_plan *m, char *buf, size_t cap) {
    if (m->pattern == PX_PATTERN_BLOCK)
        snprintf(buf, cap, "block:%lldx%lld", (long long)m->pa, (long long)m->pb);
    else if (m->pattern == PX_PATTERN_NM)
        snprintf(buf, cap, "%lld:%lld", (long long)m->pa, (long long)m->pb);
    else
        snprintf(buf, cap, "unstructured");
    return buf;
}

/* The pattern fits a weight of logical shape [out, in]. */
static int check_pattern(const px_sparsity_config *cfg, const px_masked_plan *m, const char *name,
                         px_diag *d) {
    char pat[64];
    px_masked_pattern_text(m, pat, sizeof pat);
    if (cfg->pattern == PX_PATTERN_BLOCK && (m->out % cfg->pa || m->in % cfg->pb))
        return px_error(d,
                        "--sparsity-pattern %s does not divide weight '%s': its blocks are %lld "
                        "outputs x %lld inputs, the weight has %lld outputs x %lld inputs",
                        pat, name, (long long)cfg->pa, (long long)cfg->pb, (long long)m->out,
                        (long long)m->in);
    if (cfg->pattern == PX_PATTERN_NM && m->in % cfg->pb)
        return px_error(d,
                        "--sparsity-pattern %s does not divide weight '%s': its %lld inputs are "
                        "not groups of %lld",
                        pat, name, (long long)m->in, (long long)cfg->pb);
    if (cfg->pattern == PX_PATTERN_NM &&
        fabs(m->sparsity - (1.0 - (double)cfg->pa / (double)cfg->pb)) > 1e-9)
        return px_error(d,
                        "--sparsity: weight '%s' at %g with --sparsity-pattern %s: an n:m pattern "
                        "keeps n of every m entries, sparsity 1 - n/m = %g",
                        name, m->sparsity, pat, 1.0 - (double)cfg->pa / (double)cfg->pb);
    return 0;
}

static int64_t round_count(double x, int64_t lo, int64_t hi) {
    int64_t v = llround(x);
    return v < lo ? lo : v > hi ? hi : v;
}

static void set_nnz(const px_sparsity_config *cfg, px_masked_plan *m) {
    int64_t numel = m->out * m->in;
    double keep = 1.0 - m->sparsity;
    if (cfg->pattern == PX_PATTERN_BLOCK) {
        int64_t blocks = numel / (cfg->pa * cfg->pb);
        m->nnz = round_count(keep * (double)blocks, 1, blocks) * cfg->pa * cfg->pb;
    } else if (cfg->pattern == PX_PATTERN_NM) {
        m->nnz = numel / cfg->pb * cfg->pa;
    } else {
        m->nnz = round_count(keep * (double)numel, 1, numel);
    }
}

/* RigL's ERK distribution of auto:F over the candidates ms[0..n): each
 * one's sparsity (0: left dense). */
static void erk(px_masked_plan *ms, int n, double f) {
    char *dense = calloc((size_t)n + 1, 1);
    if (!dense) return;
    for (;;) {
        double divisor = 0, rhs = 0, max_raw = 0;
        for (int i = 0; i < n; i++) {
            double numel = (double)(ms[i].out * ms[i].in);
            double raw = (double)(ms[i].out + ms[i].in) / numel;
            if (dense[i]) {
                rhs -= numel * f;
            } else {
                rhs += numel * (1 - f);
                divisor += raw * numel;
                if (raw > max_raw) max_raw = raw;
            }
        }
        double eps = divisor > 0 ? rhs / divisor : 0;
        if (max_raw * eps <= 1) {
            for (int i = 0; i < n; i++) {
                double raw = (double)(ms[i].out + ms[i].in) / (double)(ms[i].out * ms[i].in);
                ms[i].sparsity = dense[i] ? 0 : 1 - eps * raw;
            }
            break;
        }
        for (int i = 0; i < n; i++)
            if ((double)(ms[i].out + ms[i].in) / (double)(ms[i].out * ms[i].in) == max_raw)
                dense[i] = 1;
    }
    free(dense);
}

/* Batch rows and FLOPs of w's products; the kernels' choice. */
static void price(const px_value *w, const px_sparsity_config *cfg, px_masked_plan *m) {
    m->rows = m->flops_dense = m->flops_sparse = 0;
    for (int u = 0; u < w->n_uses; u++) {
        const px_node *n = w->uses[u].node;
        if (n->dead) continue;
        const px_value *a = n->inputs[0];
        int64_t numel = px_shape_numel(&a->shape); /* -1 before shapes are bound */
        int64_t rows = numel > 0 && m->in > 0 ? numel / m->in : 0;
        /* forward and weight gradient; the input gradient when A has one */
        int products = a->kind == PX_VALUE_INITIALIZER || a->kind == PX_VALUE_INPUT ? 2 : 3;
        m->rows += rows;
        m->flops_dense += products * 2 * rows * m->out * m->in;
        m->flops_sparse += products * 2 * rows * m->nnz;
    }
    double density = (double)m->nnz / (double)(m->out * m->in);
    if (cfg->kernels == PX_SPARSE_KERNELS_SPARSE) {
        m->dense_path = 0;
        m->path_reason = "--sparse-kernels sparse";
    } else if (cfg->kernels == PX_SPARSE_KERNELS_DENSE) {
        m->dense_path = 1;
        m->path_reason = "--sparse-kernels dense";
    } else if (density > px_sparse_crossover_density(cfg->pattern)) {
        m->dense_path = 1;
        m->path_reason = "density above the measured crossover: the dense GEMM is faster";
    } else {
        m->dense_path = 0;
        m->path_reason = "density below the measured crossover";
    }
}

int px_plan_weight_sparsity(const px_graph *g, const px_sparsity_config *cfg, px_train_plan *plan,
                            px_diag *d) {
    (void)g;
    if (!px_sparsity_requested(cfg)) return 0;
    /* every named weight exists and is trained */
    for (int t = 0; t < cfg->n_targets; t++) {
        int found = 0;
        for (int v = 0; v < plan->n_vars; v++)
            if (!strcmp(plan->vars[v].value->name, cfg->targets[t].name)) found = 1;
        if (!found)
            return px_error(d,
                            "--sparsity: '%s' is not a trained initializer of the model (frozen, "
                            "not float, or no such name)",
                            cfg->targets[t].name);
    }
    plan->masked = calloc((size_t)plan->n_vars + 1, sizeof *plan->masked);
    if (!plan->masked) return px_error(d, "out of memory");
    for (int v = 0; v < plan->n_vars; v++) {
        px_train_var *tv = &plan->vars[v];
        const px_value *w = tv->value;
        int named;
        double s = target_of(cfg, w->name, &named);
        if (!named && !cfg->has_auto) continue;
        const char *why = NULL;
        const px_node *node = NULL;
        int orient = -1;
        if (w->dtype != PX_F32 || w->shape.rank != 2)
            why = "is not a float32 matrix";
        else if (tv->cls == PX_VAR_SPARSE)
            why = "is read by a Gather (an embedding table): only MatMul and Gemm weights can be "
                  "masked";
        else
            orient = orientation(w, &why, &node);
        if (orient < 0) {
            if (!named) continue; /* auto: the eligible weights only */
            if (node)
                return px_error(d, "--sparsity: weight '%s' %s (node '%s', %s)", w->name, why,
                                node->name ? node->name : "?", px_op_name(node->op));
            return px_error(d, "--sparsity: weight '%s' %s", w->name, why);
        }
        px_masked_plan *m = &plan->masked[plan->n_masked++];
        m->var = v;
        m->w_in_major = orient;
        m->out = orient ? w->shape.dims[1] : w->shape.dims[0];
        m->in = orient ? w->shape.dims[0] : w->shape.dims[1];
        m->sparsity = named ? s : cfg->auto_sparsity;
        m->pattern = cfg->pattern;
        m->pa = cfg->pa;
        m->pb = cfg->pb;
        m->init = cfg->init == PX_SPARSE_INIT_ERK ? PX_SPARSE_INIT_RANDOM : cfg->init;
        m->seed = cfg->seed;
    }
    if (cfg->init == PX_SPARSE_INIT_ERK) {
        if (!cfg->has_auto || cfg->n_targets)
            return px_error(d, "--sparsity-init erk distributes --sparsity auto:F over the "
                               "eligible weights: give auto:F and no NAME=F");
        if (cfg->pattern == PX_PATTERN_NM)
            return px_error(d, "--sparsity-init erk gives each weight its own sparsity; an n:m "
                               "pattern fixes it at 1 - n/m");
        erk(plan->masked, plan->n_masked, cfg->auto_sparsity);
    }
    int kept = 0;
    for (int i = 0; i < plan->n_masked; i++) {
        px_masked_plan *m = &plan->masked[i];
        const px_value *w = plan->vars[m->var].value;
        if (m->sparsity <= 0 && cfg->init == PX_SPARSE_INIT_ERK) continue; /* ERK: dense */
        if (check_pattern(cfg, m, w->name, d)) return -1;
        set_nnz(cfg, m);
        price(w, cfg, m);
        plan->masked[kept++] = *m;
    }
    plan->n_masked = kept;
    for (int i = 0; i < plan->n_masked; i++)
        plan->vars[plan->masked[i].var].masked = &plan->masked[i];
    if (plan->n_masked == 0)
        return px_error(d, "--sparsity auto: no weight of the model can be masked (only float32 "
                           "MatMul and Gemm weights can)");
    return 0;
}
