/* The communication cost model: bytes and alpha-beta seconds per rank and
 * step of each --comm mode, and the choice --comm auto makes with it.
 *
 * Bytes (sent + received), assuming one rank per node (shards on every
 * rank, rows spread evenly) so a fraction f = (N-1)/N of every exchange
 * crosses the network:
 *   AllReduce of S bytes:                 ring: 2·f·S sent, as much received;
 *                                         recursive doubling (small buckets,
 *                                         see below): S·log2 N each way (N a
 *                                         power of two; at N = 2 both are S)
 *   PS variable, U rows of R bytes each:  pull: f·U·8 index bytes out and f·U·R row
 *                                         bytes in as a client, the mirror image as a
 *                                         server; push: f·U·(8+R) out as a client, in
 *                                         as a server: 4·f·U·(8+R) in all
 *   dense PS variable of S bytes:         whole rows both ways: 4·f·S
 * plus, per sparse PS variable, the 8-byte row counts each pull and push
 * exchange with every other shard first: 32·(N-1); and the loss average:
 * 8 bytes sent and 8 received, as much again for every loss whose kept rows
 * are averaged over the ranks (plan->loss_means_over_ranks; not under
 * --sync-every, whose local steps divide by their own rows). U is lookups_per_step capped at the
 * row count: an upper bound of the unique rows a batch touches. (runtime/comm/transport/stats.c
 * counts the same way.) Under --pp S, each stage's ranks AllReduce their own
 * variables only, over one rank per pipeline (N / (tp S)): the ranks of
 * each stage move their own stage's bytes (px_predict_stage_traffic), and
 * px_predict_traffic gives the stage whose AllReduce takes longest, which
 * every rank's step waits for. A table on the parameter servers under
 * --pp has the N/S ranks of its stage for clients (a pull per
 * micro-batch), while every rank serves its shards: a client moves
 * f·C (C = 2·U·(8+R), both ways), serves (N/S - 1)·C/N for the stage's
 * other clients, and a rank of another stage serves C/S; every rank
 * exchanges the row counts of every pull and push with every other shard,
 * 16·(N-1)·(M+1). Under --tp K, the slab of a variable
 * stored split is AllReduced over the N/K ranks holding that slab, in buckets of its own
 * (passes/comm.c): N/K in place of N above, for those bytes.
 *
 * Seconds: a message costs alpha + bytes·beta, links are full duplex and a
 * rank's messages to different peers overlap, so an exchange costs its
 * latencies plus the larger direction's bytes:
 *   AllReduce bucket of S bytes   min(ring 2(N-1)(alpha + S/N·beta),
 *                                     doubling (log2 p + 2[N > p])(alpha + S·beta))
 *                                 p = 2^floor(log2 N): the runtime's choice
 *                                 (runtime/comm/collectives/allreduce_doubling.c, same
 *                                 formulas and defaults); the AllReduce
 *                                 variables fill buckets of cfg->bucket_bytes
 *   sparse PS variable            pull 3 alpha (count, indices, rows) + push
 *                                 2 alpha (count, indices and rows), each
 *                                 moving f·U·(8+R) bytes per direction
 *   dense PS variable of S bytes  pull + push: 2 alpha + 2·f·S·beta
 *   loss average                  ceil(log2 N) alpha (and each kept-rows average)
 * No overlap with compute is assumed: the figures are the communication a
 * step would wait for if none were hidden.
 *
 * Relaxed modes (cfg->wire, cfg->sync_every; docs/relaxed_sync.md): a
 * 16-bit --wire halves every row and bucket byte (R, S above; indices and
 * counts stay), and the AllReduce's choice between ring and doubling
 * follows the halved bytes, as the runtime's does. --sync-every K replaces
 * the AllReduce of the gradients by a float32 ring average of the
 * AllReduce variables every K steps, in chunks of at most 4 MiB: 1/K of
 * its bytes and seconds per step.
 *
 * Rows measured on the data (parallaxc plan --data: tv->data_rows and
 * data_pulled_rows, compiler/plan_rows.c) replace U by the distinct rows a
 * rank's batch reads; under --staleness S (cfg->staleness) a pull moves
 * only the rows the rank did not pull in its last S steps (its count
 * exchange and latencies stay), while the push moves all U. A dense
 * parameter-server variable is pulled every S + 1 steps. */
#include "train.h"

#include <math.h>
#include <stdlib.h>

#define DEFAULT_ALPHA 50e-6      /* seconds per message: TCP over 1 GbE */
#define DEFAULT_BETA (1 / 125e6) /* seconds per byte: 1 Gbit/s */
#define DEFAULT_MODEL_RANKS 4    /* what --comm auto optimizes for by default */

static double alpha_of(const px_train_config *cfg) {
    return cfg && cfg->net_alpha > 0 ? cfg->net_alpha : DEFAULT_ALPHA;
}

static double beta_of(const px_train_config *cfg) {
    return cfg && cfg->net_beta > 0 ? cfg->net_beta : DEFAULT_BETA;
}

int px_auto_model_ranks(const px_train_config *cfg) {
    return cfg && cfg->model_ranks > 1 ? cfg->model_ranks : DEFAULT_MODEL_RANKS;
}

static int floor_log2(int n) {
    int k = 0;
    while ((2 << k) <= n) k++;
    return k;
}

static int is_sparse_table(const px_train_var *tv) {
    const px_shape *s = &tv->value->shape;
    return tv->cls == PX_VAR_SPARSE && s->rank >= 1 && s->dims[0] > 0;
}

/* Bytes of a variable's gradient: a masked weight's is its live entries. */
static double var_bytes(const px_train_var *tv) {
    if (tv->masked) return (double)tv->masked->nnz * 4;
    /* a variable stored split (--tp): its slab (value's shape) */
    return (double)px_shape_numel(&tv->value->shape) * 4;
}

/* Bytes a float takes on the wire (cfg->wire): 4, or 2 in a 16-bit format. */
static double wire_of(const px_train_config *cfg) {
    return cfg ? px_wire_format_bytes(cfg->wire) : 4;
}

/* A sparse variable: bytes one PS exchange direction carries per peer set
 * (without f), and the AllReduce bytes of its densified gradient + mask;
 * floats of `wire` bytes each. */
static double ps_rows_bytes_wire(const px_train_var *tv, double wire, double *densified) {
    const px_shape *s = &tv->value->shape;
    double bytes = var_bytes(tv) / 4 * wire, rows = (double)s->dims[0];
    double u = tv->lookups_per_step < rows ? (double)tv->lookups_per_step : rows;
    if (tv->data_rows > 0) u = tv->data_rows;
    *densified = bytes + rows * wire;
    return u * (8 + bytes / rows);
}

/* The part of the rows ps_rows_bytes_wire counts that a pull moves: under
 * --staleness, those the data says the rank did not keep. */
static double pulled_share(const px_train_var *tv, const px_train_config *cfg) {
    if (!cfg || cfg->staleness <= 0 || !(tv->data_rows > 0)) return 1;
    return tv->data_pulled_rows / tv->data_rows;
}

static double ps_rows_bytes(const px_train_var *tv, double *densified) {
    return ps_rows_bytes_wire(tv, 4, densified);
}

/* ---- AllReduce ---- */

double px_allreduce_seconds(int doubling, double bytes, int n, double alpha, double beta) {
    if (n <= 1 || bytes <= 0) return 0;
    if (!doubling) return 2.0 * (n - 1) * (alpha + bytes / n * beta);
    int p = 1 << floor_log2(n);
    return (floor_log2(n) + (n > p ? 2 : 0)) * (alpha + bytes * beta);
}

static int doubling_wins(double bytes, int n, double alpha, double beta) {
    return px_allreduce_seconds(1, bytes, n, alpha, beta) <
           px_allreduce_seconds(0, bytes, n, alpha, beta);
}

static double allreduce_seconds(double bytes, int n, double alpha, double beta) {
    return fmin(px_allreduce_seconds(0, bytes, n, alpha, beta),
                px_allreduce_seconds(1, bytes, n, alpha, beta));
}

/* ---- per mode ---- */

/* Sent + received bytes of the AllReduce of one bucket of s bytes. */
static double allreduce_bucket_bytes(double s, int n, double alpha, double beta) {
    if (n <= 1) return 0;
    if (!doubling_wins(s, n, alpha, beta)) return 4.0 * (n - 1) / n * s;
    int p = 1 << floor_log2(n), extras = n - p;
    /* ranks < extras: log2 p + 1 exchanges, other lower ranks log2 p, upper 1 */
    double exchanges = ((double)extras * (floor_log2(n) + 1) +
                        (double)(p - extras) * floor_log2(n) + (double)extras) /
                       n;
    return 2 * exchanges * s;
}

/* The AllReduce variables' A bytes in buckets of at most cap bytes, as
 * equal buckets (the comm pass fills them in gradient order). */
static int bucket_count(double a, int64_t cap) {
    if (a <= 0) return 0;
    double c = cap > 0 ? (double)cap : 4.0 * 1024 * 1024; /* --bucket-mb default */
    int n = (int)ceil(a / c);
    return n < 1 ? 1 : n;
}

/* How mode (or the auto choice) synchronises tv. */
static px_var_sync sync_in_mode(px_comm_mode mode, const px_train_var *tv) {
    if (mode == PX_COMM_MODE_AUTO && tv->auto_sync != PX_SYNC_NONE) return tv->auto_sync;
    return px_mode_sync(mode == PX_COMM_MODE_AUTO ? PX_COMM_MODE_HYBRID : mode, tv);
}

typedef struct mode_cost {
    double bytes, seconds;
} mode_cost;

/* Sent + received bytes and seconds per step of averaging `floats` floats
 * of replicas every k steps (collectives/average.c: float32 ring, chunks
 * of at most 1 Mi floats). */
static void average_cost(double floats, int n, int64_t k, double alpha, double beta, mode_cost *c) {
    const double chunk = 1 << 20;
    for (double left = floats; left > 0; left -= chunk) {
        double s = 4 * fmin(left, chunk);
        c->bytes += 4.0 * (n - 1) / n * s / (double)k;
        c->seconds += px_allreduce_seconds(0, s, n, alpha, beta) / (double)k;
    }
}

/* The AllReduce of `bytes` of gradients over n ranks, in buckets. */
static void buckets_cost(double bytes, int n, double wire, const px_train_config *cfg,
                         mode_cost *c) {
    double alpha = alpha_of(cfg), beta = beta_of(cfg);
    /* buckets hold float32 gradients: their count from the float32 bytes */
    int buckets = bucket_count(bytes / wire * 4, cfg ? cfg->bucket_bytes : 0);
    for (int b = 0; b < buckets; b++) {
        double s = bytes / buckets;
        c->bytes += allreduce_bucket_bytes(s, n, alpha, beta);
        c->seconds += allreduce_seconds(s, n, alpha, beta);
    }
}

/* Rank counts one pass over the variables predicts: the costs of a range
 * of rank counts are made in chunks of this many (on the stack). */
#define RANKS_PER_PASS 64

/* The costs of mode at every rank count in [lo, lo + count), count at most
 * RANKS_PER_PASS, c[i] that of lo + i: one pass over the variables for all
 * of them (compile records 64 rank counts: a pass per count took most of a
 * second at 100k variables). For each rank count the sums are made in the
 * same order as for one count alone: the figures do not depend on the
 * range asked. */
static void predict_mode(const px_train_plan *plan, px_comm_mode mode, int lo, int count,
                         const px_train_config *cfg, int stage, mode_cost *c) {
    double alpha = alpha_of(cfg), beta = beta_of(cfg);
    double wire = wire_of(cfg);
    int64_t every = cfg && cfg->sync_every > 1 ? cfg->sync_every : 1;
    for (int i = 0; i < count; i++) c[i] = (mode_cost){0, 0};
    /* the rank counts with traffic: n > 1 */
    int first = lo > 1 ? 0 : 2 - lo;
    if (first >= count) return;
    double f[RANKS_PER_PASS];
    for (int i = first; i < count; i++) f[i] = (double)(lo + i - 1) / (lo + i);
    /* --tp: slabs go in buckets of their own, over the n / tp ranks that
     * hold the same slab (passes/comm.c). The AllReduce sums do not depend
     * on n. */
    double allreduce = 0, slab_allreduce = 0, replica_floats = 0;
    /* --pp: each stage's ranks reduce their own variables' gradients
     * (passes/comm.c), [2 * stage] whole and [2 * stage + 1] slabs */
    int S = plan->pp > 1 ? plan->pp : 0;
    double *stage_ar = S ? calloc(3 * (size_t)S, sizeof *stage_ar) : NULL;
    if (S && !stage_ar) S = 0; /* out of memory: predicted as without stages */
    /* --pp: [stage] the rows a client of the stage's tables moves each
     * way (parameter servers), before the share f that crosses ranks */
    double *stage_ps = S ? stage_ar + 2 * S : NULL;
    int pulls = S && plan->micro_batches > 1 ? plan->micro_batches : 1;
    for (int v = 0; v < plan->n_vars; v++) {
        const px_train_var *tv = &plan->vars[v];
        if (!tv->has_grad) continue;
        double *ar = S ? &stage_ar[2 * tv->pp_stage] : &allreduce;
        double *slab_ar = S ? &stage_ar[2 * tv->pp_stage + 1] : &slab_allreduce;
        px_var_sync sync = sync_in_mode(mode, tv);
        if (is_sparse_table(tv)) {
            double densified, rows = ps_rows_bytes_wire(tv, wire, &densified);
            if (sync == PX_SYNC_PS && S) {
                /* --pp: the ranks of the table's stage are its clients (a
                 * pull per micro-batch, one push); every rank serves 1 / N
                 * of the N / S clients' rows and exchanges the row counts
                 * of every pull and push */
                double pull = rows * pulled_share(tv, cfg);
                /* U is a micro-batch's: the variable plan sees the graph
                 * at the micro-batch */
                stage_ps[tv->pp_stage] += pulls * (pull + rows);
                for (int i = first; i < count; i++) {
                    c[i].bytes += 16.0 * (pulls + 1) * (lo + i - 1);
                    c[i].seconds += (3 * pulls + 2) * alpha;
                }
            } else if (sync == PX_SYNC_PS) {
                double pull = rows * pulled_share(tv, cfg); /* the push moves all rows */
                for (int i = first; i < count; i++) {
                    c[i].bytes += 2 * f[i] * (pull + rows) + 32.0 * (lo + i - 1);
                    c[i].seconds += 5 * alpha + f[i] * (pull + rows) * beta;
                }
            } else {
                *ar += densified;
                replica_floats += var_bytes(tv) / 4;
            }
        } else if (sync == PX_SYNC_PS) {
            /* pushed every step, pulled every S + 1 */
            double pulls = 1.0 / (double)(1 + (cfg && cfg->staleness > 0 ? cfg->staleness : 0));
            double s = var_bytes(tv) / 4 * wire;
            for (int i = first; i < count; i++) {
                c[i].bytes += 2 * f[i] * s * (1 + pulls);
                c[i].seconds += alpha * (1 + pulls) + f[i] * s * beta * (1 + pulls);
            }
        } else {
            *(px_tp_stored(tv) ? slab_ar : ar) += var_bytes(tv) / 4 * wire;
            replica_floats += var_bytes(tv) / 4;
        }
    }
    for (int i = first; i < count; i++) {
        int n = lo + i, slab_ranks = plan->tp > 1 ? n / plan->tp : n;
        if (every > 1) {
            average_cost(replica_floats, n, every, alpha, beta, &c[i]);
        } else if (S) {
            /* over one rank of the stage per pipeline; the step waits for
             * the slowest stage's (stage < 0), a rank moves its own
             * stage's bytes */
            int over = n / ((plan->tp > 1 ? plan->tp : 1) * S);
            mode_cost worst = {0, -1};
            for (int st = 0; st < S; st++) {
                if (stage >= 0 && st != stage) continue;
                mode_cost one = {0, 0};
                buckets_cost(stage_ar[2 * st], over, wire, cfg, &one);
                buckets_cost(stage_ar[2 * st + 1], over, wire, cfg, &one);
                /* its tables: f of a client's rows, and as a server those
                 * of the stage's n / S - 1 other clients over n; the other
                 * stages' tables: their n / S clients' rows over n */
                double own = stage_ps[st], ps = own * (n + (double)n / S - 2) / n;
                for (int t = 0; t < S; t++)
                    if (t != st) ps += stage_ps[t] / S;
                one.bytes += ps;
                one.seconds += ps / 2 * beta;
                if (one.seconds > worst.seconds) worst = one;
            }
            c[i].bytes += worst.bytes;
            c[i].seconds += worst.seconds;
        } else {
            buckets_cost(allreduce, n, wire, cfg, &c[i]);
            buckets_cost(slab_allreduce, slab_ranks, wire, cfg, &c[i]);
        }
        /* the loss average, and the average of each loss's kept rows (none
         * under --sync-every: local steps divide by their own rows) */
        int kept_means = every > 1 ? 0 : plan->loss_means_over_ranks;
        c[i].bytes += 16 * (1 + kept_means);
        c[i].seconds += (1 + kept_means) * ceil(log2((double)n)) * alpha;
    }
    free(stage_ar);
}

/* ---- --comm auto ---- */

/* A sparse variable on its own: 1 if the AllReduce of its densified
 * gradient is predicted faster than its PS exchanges. */
static int sparse_allreduce_faster(const px_train_var *tv, int n, double alpha, double beta) {
    double f = (double)(n - 1) / n, densified, rows = ps_rows_bytes(tv, &densified);
    return allreduce_seconds(densified, n, alpha, beta) < 5 * alpha + 2 * f * rows * beta;
}

px_var_sync px_auto_sync(const px_train_var *tv) {
    if (tv->auto_sync != PX_SYNC_NONE) return tv->auto_sync;
    /* px_auto_choose has not run: a sparse variable on its own at the
     * default network and ranks, the dense ones through AllReduce */
    int allreduce = tv->cls != PX_VAR_SPARSE ||
                    (is_sparse_table(tv) &&
                     sparse_allreduce_faster(tv, DEFAULT_MODEL_RANKS, DEFAULT_ALPHA, DEFAULT_BETA));
    return allreduce ? PX_SYNC_ALLREDUCE : PX_SYNC_PS;
}

void px_auto_choose(px_train_plan *plan, const px_train_config *cfg) {
    int n = px_auto_model_ranks(cfg);
    double alpha = alpha_of(cfg), beta = beta_of(cfg), f = (double)(n - 1) / n;
    double dense_bytes = 0, dense_ps_seconds = 0;
    for (int v = 0; v < plan->n_vars; v++) {
        px_train_var *tv = &plan->vars[v];
        tv->auto_sync = PX_SYNC_NONE;
        if (!tv->has_grad) continue;
        if (tv->masked) { /* always AllReduce (px_mode_sync), not part of the choice */
            tv->auto_sync = PX_SYNC_ALLREDUCE;
            continue;
        }
        if (is_sparse_table(tv)) {
            tv->auto_sync =
                sparse_allreduce_faster(tv, n, alpha, beta) ? PX_SYNC_ALLREDUCE : PX_SYNC_PS;
        } else {
            dense_bytes += var_bytes(tv);
            dense_ps_seconds += 2 * alpha + 2 * f * var_bytes(tv) * beta;
        }
    }
    /* The dense variables as a group: they share AllReduce buckets (and
     * their latencies), while every PS variable pays its own round trips. */
    double dense_ar_seconds = 0;
    int buckets = bucket_count(dense_bytes, cfg ? cfg->bucket_bytes : 0);
    for (int b = 0; b < buckets; b++)
        dense_ar_seconds += allreduce_seconds(dense_bytes / buckets, n, alpha, beta);
    /* A tie (the same time up to rounding: e.g. three dense variables of
     * one bucket, 3 x 2 alpha against the ring's 6 alpha at 4 ranks, the
     * same bytes) keeps the AllReduce: it starts during the backward pass,
     * while a dense PS variable's push, update and next pull follow one
     * another at the step boundary (measured on the LM1B-like model, 4
     * simulated hosts: PS 0.83x). */
    px_var_sync dense =
        dense_ps_seconds < dense_ar_seconds * (1 - 1e-9) ? PX_SYNC_PS : PX_SYNC_ALLREDUCE;
    for (int v = 0; v < plan->n_vars; v++) {
        px_train_var *tv = &plan->vars[v];
        if (tv->has_grad && !is_sparse_table(tv) && !tv->masked) tv->auto_sync = dense;
    }
}

static void predict_range(const px_train_plan *plan, int lo, int hi, const px_train_config *cfg,
                          int stage, px_traffic_prediction *out) {
    static const px_comm_mode modes[4] = {PX_COMM_MODE_HYBRID, PX_COMM_MODE_ALLREDUCE,
                                          PX_COMM_MODE_PS, PX_COMM_MODE_AUTO};
    for (int at = lo; at <= hi; at += RANKS_PER_PASS) {
        int count = hi - at + 1 < RANKS_PER_PASS ? hi - at + 1 : RANKS_PER_PASS;
        mode_cost c[4][RANKS_PER_PASS];
        for (int m = 0; m < 4; m++) predict_mode(plan, modes[m], at, count, cfg, stage, c[m]);
        for (int i = 0; i < count; i++) {
            px_traffic_prediction *p = &out[at - lo + i];
            p->hybrid = (int64_t)(c[0][i].bytes + 0.5);
            p->allreduce = (int64_t)(c[1][i].bytes + 0.5);
            p->ps = (int64_t)(c[2][i].bytes + 0.5);
            p->auto_ = (int64_t)(c[3][i].bytes + 0.5);
            p->seconds_hybrid = c[0][i].seconds;
            p->seconds_allreduce = c[1][i].seconds;
            p->seconds_ps = c[2][i].seconds;
            p->seconds_auto = c[3][i].seconds;
        }
    }
}

void px_predict_traffic_range(const px_train_plan *plan, int lo, int hi, const px_train_config *cfg,
                              px_traffic_prediction *out) {
    predict_range(plan, lo, hi, cfg, -1, out);
}

void px_predict_stage_traffic_range(const px_train_plan *plan, int lo, int hi,
                                    const px_train_config *cfg, int stage,
                                    px_traffic_prediction *out) {
    predict_range(plan, lo, hi, cfg, plan->pp > 1 ? stage : -1, out);
}

void px_predict_traffic(const px_train_plan *plan, int ranks, const px_train_config *cfg,
                        px_traffic_prediction *out) {
    predict_range(plan, ranks, ranks, cfg, -1, out);
}

void px_predict_stage_traffic(const px_train_plan *plan, int ranks, const px_train_config *cfg,
                              int stage, px_traffic_prediction *out) {
    predict_range(plan, ranks, ranks, cfg, plan->pp > 1 ? stage : -1, out);
}

int64_t px_traffic_bytes(const px_traffic_prediction *p, px_comm_mode mode) {
    switch (mode) {
    case PX_COMM_MODE_ALLREDUCE: return p->allreduce;
    case PX_COMM_MODE_PS: return p->ps;
    case PX_COMM_MODE_AUTO: return p->auto_;
    default: return p->hybrid;
    }
}

double px_traffic_seconds(const px_traffic_prediction *p, px_comm_mode mode) {
    switch (mode) {
    case PX_COMM_MODE_ALLREDUCE: return p->seconds_allreduce;
    case PX_COMM_MODE_PS: return p->seconds_ps;
    case PX_COMM_MODE_AUTO: return p->seconds_auto;
    default: return p->seconds_hybrid;
    }
}
