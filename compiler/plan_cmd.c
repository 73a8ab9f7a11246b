#include "plan_cmd.h"

#include "cli.h"
#include "file_atomic.h"
#include "memory_model.h"
#include "onnx_io.h"
#include "out_paths.h"
#include "passes.h"
#include "plan_calibrate.h"
#include "plan_layouts.h"
#include "plan_rows.h"
#include "print.h"
#include "svg_chart.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

const char px_plan_help[] =
    "usage: parallaxc plan MODEL.onnx --batch B --hosts H --link RATE --cores C\n"
    "                      (--data DIR and/or --step-seconds T) [options]\n"
    "\n"
    "Predicts, for a cluster of H hosts of C cores joined by links of RATE, the step\n"
    "time and samples/s of every --comm mode (hybrid, allreduce, ps), --wire format\n"
    "(fp32, bf16), --sync-every (1, 4) and --staleness (0, S) at 1, 2, 4 ... H hosts,\n"
    "the memory per rank,\n"
    "and the setting it recommends, with the reason. A step is the compute of one rank\n"
    "plus the communication the compiler's cost model predicts for it (the model\n"
    "--comm auto uses: alpha-beta, nothing hidden behind compute).\n"
    "\n"
    "  --batch B             per-rank batch (as compile's)\n"
    "  --hosts H             hosts of the largest cluster (1 to 4096)\n"
    "  --link RATE           each host's link: bits per second, with an optional unit\n"
    "                        (kbit, mbit, gbit, tbit; e.g. 1gbit, 100mbit, 2.5e9)\n"
    "  --cores C             cores per host (a fraction for hosts that share cores,\n"
    "                        e.g. 0.5 for 4 simulated hosts on 2 cores)\n"
    "  --ranks-per-host K    ranks on each host (default 1); each gets C/K cores and\n"
    "                        1/K of the link\n"
    "  --latency S           seconds a message costs besides its bytes (default 50e-6)\n"
    "  --staleness S         the bounded staleness predicted besides 0 (default 2; 0:\n"
    "                        exact settings only)\n"
    "  --data DIR            calibration: compile the model with these flags, run it\n"
    "                        alone here on DIR with the threads a rank would have, and\n"
    "                        time a step (cached by model, data, flags and threads; the\n"
    "                        step is scaled by the threads measured over C/K cores);\n"
    "                        the rows each rank reads and pulls per step are replayed\n"
    "                        from DIR's index inputs in the run's order\n"
    "  --recalibrate         measure again even when a calibration is cached\n"
    "  --step-seconds T      the compute of one step of a rank, known: no calibration\n"
    "                        (with --data too, the data only gives the rows)\n"
    "  --layouts             also predict, at H hosts, data parallelism against tensor\n"
    "                        (--tp K) and pipeline (--pp S) parallelism on the same\n"
    "                        ranks at the same global batch, and name the fastest\n"
    "  --micro-batches M     with --layouts: the micro-batches of every --pp layout\n"
    "                        (default: the largest divisor of its batch up to 4 S)\n"
    "  --svg FILE            also write the scaling chart (samples/s against hosts)\n"
    "  --format text|json    the plan as a table (default) or one JSON object\n"
    "  --help                this text\n"
    "Other flags (--dim, --shape, --optimizer, --bucket-mb, ...) are compile's.\n"
    "\n"
    "Without --data the rows of a step are bounded by its look-ups and --staleness\n"
    "saves no row pull. Not predicted: --shuffle's order and the convergence of\n"
    "relaxed settings (compare their losses with exact training's).\n";

typedef struct plan_args {
    const char *model, *svg, *data;
    int hosts, ranks_per_host, json, recalibrate, help, layouts, micro_batches;
    int64_t staleness;
    double link_bps, cores, step_seconds, latency;
    int n_rest;
    char **rest; /* compile's flags, in order (borrowed from argv) */
} plan_args;

typedef struct setting {
    px_comm_mode mode;
    int wire;
    int64_t every, staleness;
} setting;

/* modes x wire x sync-every x staleness, but allreduce has no parameter-
 * server variable for staleness to change: 3 x 2 x 2 x 2 - 4 */
enum { MAX_SETTINGS = 20, MAX_POINTS = 16 };

typedef struct prediction {
    setting s;
    char name[64];
    int exact;
    double step[MAX_POINTS], comm[MAX_POINTS], sps[MAX_POINTS], bytes[MAX_POINTS];
} prediction;

static int usage(px_diag *d, const char *fmt, const char *a, const char *b) {
    px_error(d, fmt, a, b);
    return -1;
}

static int parse_real(const char *flag, const char *v, double lo, int lo_open, double *out,
                      px_diag *d) {
    char *end;
    errno = 0;
    double x = v ? strtod(v, &end) : 0;
    if (!v || !*v || *end || errno || !isfinite(x) || x < lo || (lo_open && x == lo))
        return usage(d, "plan: %s wants a number%s", flag, lo_open ? " above 0" : " of at least 0");
    *out = x;
    return 0;
}

static int parse_int(const char *flag, const char *v, int lo, int hi, int *out, px_diag *d) {
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || errno || x < lo || x > hi) {
        px_error(d, "plan: %s wants a whole number from %d to %d, not '%s'", flag, lo, hi,
                 v ? v : "");
        return -1;
    }
    *out = (int)x;
    return 0;
}

/* RATE: a number of bits per second with an optional unit, tc's spelling
 * (kbit, mbit, gbit, tbit; "bit", "/s" and "bps" allowed). */
static int parse_link(const char *v, double *bps, px_diag *d) {
    char *end;
    errno = 0;
    double x = v ? strtod(v, &end) : 0;
    if (!v || end == v || errno || !isfinite(x) || x <= 0)
        return usage(d, "plan: --link wants a rate above 0 such as 1gbit or 100mbit, not '%s'%s",
                     v ? v : "", "");
    double scale = 1;
    const char *u = end;
    switch (*u | 0x20) {
    case 'k': scale = 1e3, u++; break;
    case 'm': scale = 1e6, u++; break;
    case 'g': scale = 1e9, u++; break;
    case 't': scale = 1e12, u++; break;
    default: break;
    }
    static const char *const tails[] = {"", "bit", "bit/s", "bps", "b/s"};
    int ok = 0;
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) ok |= strcasecmp(u, tails[i]) == 0;
    if (!ok)
        return usage(d, "plan: --link: unknown unit in '%s' (use bit, kbit, mbit, gbit or tbit)%s",
                     v, "");
    *bps = x * scale;
    return 0;
}

static int parse_args(int argc, char **argv, plan_args *a, px_diag *d) {
    memset(a, 0, sizeof *a);
    a->ranks_per_host = 1;
    a->latency = 50e-6;
    a->staleness = 2;
    a->rest = calloc((size_t)argc + 1, sizeof *a->rest);
    if (!a->rest) return px_error(d, "plan: out of memory");
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            a->help = 1;
            return 0;
        }
    }
    if (argc < 2 || argv[1][0] == '-')
        return usage(d, "plan: the model comes first: parallaxc plan MODEL.onnx --batch B ...%s%s",
                     "", "");
    a->model = argv[1];
    for (int i = 2; i < argc; i++) {
        char name[64];
        const char *arg = argv[i], *eq = strchr(arg, '='), *v;
        size_t len = eq && !strncmp(arg, "--", 2) ? (size_t)(eq - arg) : strlen(arg);
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), arg);
        static const char *const own[] = {
            "--hosts",        "--link", "--cores",  "--ranks-per-host", "--latency",      "--data",
            "--step-seconds", "--svg",  "--format", "--staleness",      "--micro-batches"};
        int known = 0;
        for (size_t k = 0; k < sizeof own / sizeof *own; k++) known |= !strcmp(name, own[k]);
        if (!strcmp(name, "--recalibrate")) {
            a->recalibrate = 1;
            continue;
        }
        if (!strcmp(name, "--layouts")) {
            a->layouts = 1;
            continue;
        }
        if (!strcmp(name, "--tp") || !strcmp(name, "--pp"))
            return usage(d,
                         "plan: %s is not a plan flag: --layouts predicts data, tensor (--tp) "
                         "and pipeline (--pp) parallelism side by side%s",
                         name, "");
        /* inspect's flags that mean nothing here: refused, not ignored */
        static const char *const not_here[] = {"-o",      "--output", "--ranks", "--ranks-per-node",
                                               "--stage", "--graph"};
        for (size_t k = 0; k < sizeof not_here / sizeof *not_here; k++)
            if (!strcmp(name, not_here[k]))
                return usage(d,
                             "plan: %s is not a plan flag (the plan goes to standard output; "
                             "the hosts and ranks come from --hosts and --ranks-per-host)%s",
                             name, "");
        if (!known) {
            a->rest[a->n_rest++] = argv[i];
            continue;
        }
        if (eq && len == (size_t)(eq - arg))
            v = eq + 1;
        else if (i + 1 < argc)
            v = argv[++i];
        else
            return usage(d, "plan: %s needs a value%s", name, "");
        if (!strcmp(name, "--hosts")) {
            if (parse_int(name, v, 1, 4096, &a->hosts, d)) return -1;
        } else if (!strcmp(name, "--staleness")) {
            int st;
            if (parse_int(name, v, 0, 1000000, &st, d)) return -1;
            a->staleness = st;
        } else if (!strcmp(name, "--micro-batches")) {
            if (parse_int(name, v, 1, 1 << 20, &a->micro_batches, d)) return -1;
        } else if (!strcmp(name, "--ranks-per-host")) {
            if (parse_int(name, v, 1, 4096, &a->ranks_per_host, d)) return -1;
        } else if (!strcmp(name, "--link")) {
            if (parse_link(v, &a->link_bps, d)) return -1;
        } else if (!strcmp(name, "--cores")) {
            if (parse_real(name, v, 0, 1, &a->cores, d)) return -1;
        } else if (!strcmp(name, "--latency")) {
            if (parse_real(name, v, 0, 0, &a->latency, d)) return -1;
        } else if (!strcmp(name, "--step-seconds")) {
            if (parse_real(name, v, 0, 1, &a->step_seconds, d)) return -1;
        } else if (!strcmp(name, "--data")) {
            if (!*v) return usage(d, "plan: --data: empty folder name%s%s", "", "");
            a->data = v;
        } else if (!strcmp(name, "--svg")) {
            if (!*v) return usage(d, "plan: --svg: empty file name%s%s", "", "");
            a->svg = v;
        } else if (!strcmp(name, "--format")) {
            if (strcmp(v, "text") && strcmp(v, "json"))
                return usage(d, "plan: --format wants text or json, not '%s'%s", v, "");
            a->json = !strcmp(v, "json");
        }
    }
    if (!a->hosts) return usage(d, "plan: --hosts H is required%s%s", "", "");
    if (a->micro_batches && !a->layouts)
        return usage(d, "plan: --micro-batches applies to the --pp layouts of --layouts%s%s", "",
                     "");
    if (!(a->link_bps > 0)) return usage(d, "plan: --link RATE is required%s%s", "", "");
    if (!(a->cores > 0)) return usage(d, "plan: --cores C is required%s%s", "", "");
    if (!a->data && !(a->step_seconds > 0))
        return usage(d,
                     "plan: give --data DIR (measure a step here) or --step-seconds T (the "
                     "compute of a step, known)%s%s",
                     "", "");
    return 0;
}

/* The forwarded flags as compile/inspect parse them. */
static int parse_model_flags(const plan_args *a, px_cli *cli, px_diag *d) {
    char **argv = calloc((size_t)a->n_rest + 4, sizeof *argv);
    if (!argv) return px_error(d, "plan: out of memory");
    int n = 0;
    argv[n++] = "parallaxc";
    argv[n++] = "inspect";
    argv[n++] = (char *)a->model;
    for (int i = 0; i < a->n_rest; i++) argv[n++] = a->rest[i];
    char err[1024];
    int rc = px_cli_parse(n, argv, cli, err, sizeof err);
    free(argv);
    if (rc != 0) return px_error(d, "plan: %s", err);
    if (cli->bindings.batch <= 0)
        return px_error(d, "plan: --batch B (per-rank batch) is required");
    return 0;
}

/* The variables and their sizes and look-ups per step, as inspect plans
 * them (the default stage). The plan's variables point into *graph (the
 * caller frees it after the plan). */
static int variable_plan(const px_cli *cli, const char *data, px_train_plan *plan, px_graph **graph,
                         px_plan_rows **rows, char *why, size_t why_cap, px_diag *d) {
    px_import_opts io = {.allow_unsupported = 0};
    px_graph *g = *graph = px_onnx_load_file(cli->model, &io, d);
    if (!g) return -1;
    px_train_config cfg;
    px_train_config_from_cli(cli, &cfg);
    int rc = -1;
    if (px_pipeline_fold(g, &cli->bindings, d) != 0) goto done;
    if (px_plan_variables(g, &cfg.spec, plan, d) != 0) goto done;
    if (px_plan_weight_sparsity(g, &cfg.sparsity, plan, d) != 0) goto done;
    plan->loss_means_over_ranks = px_loss_means_over_ranks(g, &cfg);
    px_plan_sync(plan, &cfg);
    px_auto_choose(plan, &cfg);
    snprintf(why, why_cap, "no --data");
    if (data && px_plan_rows_open(g, plan, data, cli->bindings.batch, rows, why, why_cap, d) != 0)
        goto done;
    rc = 0;
done:
    if (rc != 0) px_note(d, "while planning '%s'", cli->model);
    return rc;
}

static void setting_name(const setting *s, char *out, size_t cap) {
    int len = snprintf(out, cap, "%s", px_comm_mode_name(s->mode));
    if (s->wire != PX_WIRE_FP32)
        len += snprintf(out + len, cap - (size_t)len, " --wire %s", px_wire_format_name(s->wire));
    if (s->every > 1)
        len += snprintf(out + len, cap - (size_t)len, " --sync-every %lld", (long long)s->every);
    if (s->staleness > 0)
        snprintf(out + len, cap - (size_t)len, " --staleness %lld", (long long)s->staleness);
}

static int host_counts(int hosts, int *out) {
    int n = 0;
    for (int h = 1; h < hosts && n < MAX_POINTS - 1; h *= 2) out[n++] = h;
    out[n++] = hosts;
    return n;
}

/* Fills p with the settings' predictions; returns how many. */
static int predict(px_train_plan *plan, const px_plan_rows *rows, const px_cli *cli,
                   const plan_args *a, double compute, const int *hosts, int n_points,
                   prediction *p) {
    static const px_comm_mode modes[3] = {PX_COMM_MODE_HYBRID, PX_COMM_MODE_ALLREDUCE,
                                          PX_COMM_MODE_PS};
    int k = 0;
    for (int m = 0; m < 3; m++)
        for (int every = 1; every <= 4; every += 3)
            for (int w = 0; w < 2; w++)
                for (int st = 0; st < 2; st++) {
                    if (st && (!a->staleness || modes[m] == PX_COMM_MODE_ALLREDUCE)) continue;
                    prediction *q = &p[k++];
                    memset(q, 0, sizeof *q);
                    q->s = (setting){modes[m], w ? PX_WIRE_BF16 : PX_WIRE_FP32, every,
                                     st ? a->staleness : 0};
                    q->exact = !w && every == 1 && !st;
                    setting_name(&q->s, q->name, sizeof q->name);
                    px_train_config cfg;
                    px_train_config_from_cli(cli, &cfg);
                    cfg.wire = q->s.wire;
                    cfg.sync_every = q->s.every;
                    cfg.staleness = q->s.staleness;
                    cfg.net_alpha = a->latency;
                    /* K ranks share their host's link */
                    cfg.net_beta = 8.0 * a->ranks_per_host / a->link_bps;
                    for (int i = 0; i < n_points; i++) {
                        int n = hosts[i] * a->ranks_per_host;
                        px_plan_rows_apply(rows, plan, n, q->s.staleness);
                        px_traffic_prediction t;
                        px_predict_traffic(plan, n, &cfg, &t);
                        double s = px_traffic_seconds(&t, q->s.mode);
                        int64_t b = px_traffic_bytes(&t, q->s.mode);
                        q->comm[i] = s;
                        q->bytes[i] = (double)b;
                        q->step[i] = compute + s;
                        q->sps[i] = (double)n * (double)cli->bindings.batch / q->step[i];
                    }
                }
    return k;
}

typedef struct recommendation {
    const prediction *best, *best_exact, *chosen;
    char reason[512];
} recommendation;

static void recommend(const prediction *p, int n_set, int last, int n_points, const int *hosts,
                      recommendation *r) {
    memset(r, 0, sizeof *r);
    for (int k = 0; k < n_set; k++) {
        if (!r->best || p[k].sps[last] > r->best->sps[last]) r->best = &p[k];
        if (p[k].exact && (!r->best_exact || p[k].sps[last] > r->best_exact->sps[last]))
            r->best_exact = &p[k];
    }
    const prediction *e = r->best_exact, *b = r->best;
    double gain = b->sps[last] / e->sps[last];
    double eff = e->sps[last] / (hosts[last] * e->sps[0]);
    if (!b->exact && gain >= 1.10) {
        r->chosen = b;
        snprintf(r->reason, sizeof r->reason,
                 "predicted %.2fx the fastest exact setting (%s) at %d hosts: communication is "
                 "%.0f%% of its step. It is relaxed: compare its loss with exact training's "
                 "before relying on it",
                 gain, e->name, hosts[last], 100 * e->comm[last] / e->step[last]);
    } else {
        r->chosen = e;
        snprintf(r->reason, sizeof r->reason,
                 "the fastest exact setting; no relaxed one is predicted 10%% faster at %d hosts "
                 "(best: %s, %.2fx). It keeps %.2f of linear scaling",
                 hosts[last], b->name, gain, eff);
    }
    (void)n_points;
}

static const char *mib(double bytes, char *buf, size_t cap) {
    snprintf(buf, cap, "%.1f MiB", bytes / (1024.0 * 1024.0));
    return buf;
}

static void print_text(FILE *f, const plan_args *a, const px_cli *cli, const px_calibration *cal,
                       double compute, const char *rows_from, const prediction *p, int n_set,
                       const int *hosts, int n_points, const px_memory_prediction *mem,
                       const char *mem_why, const recommendation *r) {
    double cpr = a->cores / a->ranks_per_host;
    fprintf(f,
            "plan for %s: per-rank batch %lld, %d rank%s per host, %.3g core%s per rank, links "
            "%.4g Gbit/s (%.3g us a message)\n",
            a->model, (long long)cli->bindings.batch, a->ranks_per_host,
            a->ranks_per_host == 1 ? "" : "s", cpr, cpr == 1 ? "" : "s", a->link_bps / 1e9,
            a->latency * 1e6);
    if (cal)
        fprintf(f,
                "compute: %.4g s a step per rank (measured here at %d thread%s%s%s%s; scaled to "
                "%.3g cores)\n",
                compute, cal->threads, cal->threads == 1 ? "" : "s",
                cal->cached ? ", cached in " : "", cal->cached ? cal->cache_path : "",
                cal->cached ? "" : "", cpr);
    else
        fprintf(f, "compute: %.4g s a step per rank (--step-seconds)\n", compute);
    fprintf(f, "rows per step: %s\n", rows_from);
    fprintf(f, "predicted samples/s (a step: compute + communication, nothing hidden):\n");
    fprintf(f, "  %-46s", "setting");
    for (int i = 0; i < n_points; i++) fprintf(f, " %7d h", hosts[i]);
    fprintf(f, "  %11s %9s\n", "MB/step", "comm");
    int last = n_points - 1;
    for (int k = 0; k < n_set; k++) {
        fprintf(f, "  %-46s", p[k].name);
        for (int i = 0; i < n_points; i++) fprintf(f, " %9.4g", p[k].sps[i]);
        fprintf(f, "  %11.3f %8.0f%%%s\n", p[k].bytes[last] / 1e6,
                100 * p[k].comm[last] / p[k].step[last],
                &p[k] == r->chosen ? "  <- recommended" : "");
    }
    fprintf(f, "  (MB/step: sent + received per rank at %d hosts; comm: its share of the step)\n",
            hosts[last]);
    if (mem) {
        double hi = 0, lo = 1e300;
        for (int i = 0; i < mem->ranks; i++) {
            double t = (double)mem->per_rank[i].total;
            hi = t > hi ? t : hi;
            lo = t < lo ? t : lo;
        }
        char b1[32], b2[32];
        fprintf(f,
                "memory per rank at %d hosts (--comm %s): %s on the largest rank, %s on the "
                "smallest (%d shard%s)\n",
                hosts[last], px_comm_mode_name(cli->comm), mib(hi, b1, sizeof b1),
                mib(lo, b2, sizeof b2), mem->shards, mem->shards == 1 ? "" : "s");
    } else {
        fprintf(f, "memory per rank: not predicted (%s)\n", mem_why);
    }
    fprintf(f, "recommended at %d hosts: %s, %.4g samples/s: %s.\n", hosts[last], r->chosen->name,
            r->chosen->sps[last], r->reason);
    fprintf(f, "not predicted: convergence (compare a relaxed setting's loss with exact "
               "training's).\n");
}

/* "rows": per variable replayed from the data, at each host count, the
 * distinct rows a rank reads per step and those it pulls under --staleness
 * (what the traffic of the settings above was computed from). */
static void print_rows_json(FILE *f, px_train_plan *plan, const px_plan_rows *rows,
                            const plan_args *a, const int *hosts, int n_points) {
    double exact[MAX_POINTS], pulled[MAX_POINTS];
    int first = 1;
    fprintf(f, ",\n \"rows\": [");
    for (int v = 0; v < plan->n_vars; v++) {
        for (int i = 0; i < n_points; i++) {
            int n = hosts[i] * a->ranks_per_host;
            px_plan_rows_apply(rows, plan, n, 0);
            exact[i] = plan->vars[v].data_rows;
            px_plan_rows_apply(rows, plan, n, a->staleness);
            pulled[i] = plan->vars[v].data_pulled_rows;
        }
        if (!(exact[n_points - 1] > 0)) continue;
        fprintf(f, "%s\n  {\"variable\": ", first ? "" : ",");
        px_print_json_string(f, plan->vars[v].value->name);
        fprintf(f, ", \"staleness\": %lld, \"rows_per_step\": [", (long long)a->staleness);
        for (int i = 0; i < n_points; i++) fprintf(f, "%s%.9g", i ? ", " : "", exact[i]);
        fprintf(f, "], \"pulled_rows_per_step\": [");
        for (int i = 0; i < n_points; i++) fprintf(f, "%s%.9g", i ? ", " : "", pulled[i]);
        fprintf(f, "]}");
        first = 0;
    }
    fprintf(f, "]");
}

static void print_json(FILE *f, const plan_args *a, const px_cli *cli, const px_calibration *cal,
                       double compute, const char *rows_from, const prediction *p, int n_set,
                       const int *hosts, int n_points, px_train_plan *plan,
                       const px_plan_rows *rows, const px_memory_prediction *mem,
                       const recommendation *r, const px_layout *lay, int n_lay) {
    fprintf(f, "{\"model\": ");
    px_print_json_string(f, a->model);
    fprintf(f,
            ", \"batch_per_rank\": %lld, \"ranks_per_host\": %d, \"cores_per_host\": %.9g, "
            "\"link_bits_per_second\": %.9g, \"latency_seconds\": %.9g,\n",
            (long long)cli->bindings.batch, a->ranks_per_host, a->cores, a->link_bps, a->latency);
    fprintf(f, " \"compute_seconds_per_step\": %.9g, \"rows_per_step\": ", compute);
    px_print_json_string(f, rows_from);
    fprintf(f, ", \"calibration\": ");
    if (cal)
        fprintf(f, "{\"threads\": %d, \"measured_seconds_per_step\": %.9g, \"cached\": %s},\n",
                cal->threads, cal->step_seconds, cal->cached ? "true" : "false");
    else
        fprintf(f, "null,\n");
    fprintf(f, " \"hosts\": [");
    for (int i = 0; i < n_points; i++) fprintf(f, "%s%d", i ? ", " : "", hosts[i]);
    fprintf(f, "],\n \"settings\": [");
    for (int k = 0; k < n_set; k++) {
        const prediction *q = &p[k];
        fprintf(
            f,
            "%s\n  {\"name\": \"%s\", \"comm\": \"%s\", \"wire\": \"%s\", \"sync_every\": %lld, "
            "\"staleness\": %lld, \"exact\": %s,",
            k ? "," : "", q->name, px_comm_mode_name(q->s.mode), px_wire_format_name(q->s.wire),
            (long long)q->s.every, (long long)q->s.staleness, q->exact ? "true" : "false");
        const char *keys[4] = {"samples_per_second", "step_seconds", "comm_seconds",
                               "bytes_per_step"};
        const double *vals[4] = {q->sps, q->step, q->comm, q->bytes};
        for (int j = 0; j < 4; j++) {
            fprintf(f, "%s\"%s\": [", j ? ", " : " ", keys[j]);
            for (int i = 0; i < n_points; i++) fprintf(f, "%s%.9g", i ? ", " : "", vals[j][i]);
            fputc(']', f);
        }
        fputc('}', f);
    }
    fprintf(f, "]");
    print_rows_json(f, plan, rows, a, hosts, n_points);
    fprintf(f, ",\n \"memory_per_rank_bytes\": ");
    if (mem) {
        fputc('[', f);
        for (int i = 0; i < mem->ranks; i++)
            fprintf(f, "%s%lld", i ? ", " : "", (long long)mem->per_rank[i].total);
        fputc(']', f);
    } else {
        fputs("null", f);
    }
    if (n_lay > 0) px_print_layouts_json(f, lay, n_lay, cli->bindings.batch);
    fprintf(f, ",\n \"recommended\": {\"name\": \"%s\", \"reason\": ", r->chosen->name);
    px_print_json_string(f, r->reason);
    fputs("}}\n", f);
}

static int write_svg(const char *path, const prediction *p, int n_set, const int *hosts,
                     int n_points, px_diag *d) {
    double x[MAX_POINTS], linear[MAX_POINTS];
    px_series s[MAX_SETTINGS + 1];
    const prediction *best1 = &p[0];
    for (int k = 0; k < n_set; k++)
        if (p[k].sps[0] > best1->sps[0]) best1 = &p[k];
    for (int i = 0; i < n_points; i++) {
        x[i] = hosts[i];
        linear[i] = best1->sps[0] * hosts[i];
    }
    for (int k = 0; k < n_set; k++)
        s[k] = (px_series){.label = p[k].name, .x = x, .y = p[k].sps, .n = n_points};
    s[n_set] = (px_series){.label = "linear scaling", .x = x, .y = linear, .n = n_points};
    /* the one way outputs are written (common/file_atomic.h): whole or not
     * at all, a device in place */
    px_atomic_file out;
    char err[512];
    if (px_atomic_open(&out, path, err, sizeof err) != 0)
        return px_error(d, "plan: --svg: %s", err);
    px_svg_lines(out.f, "hosts (samples/s predicted)", PX_UNIT_PLAIN, s, n_set + 1);
    fputc('\n', out.f);
    if (px_atomic_commit(&out, err, sizeof err) != 0) return px_error(d, "plan: --svg: %s", err);
    return 0;
}

int px_plan_command(int argc, char **argv, px_diag *d) {
    plan_args a;
    px_cli cli;
    memset(&cli, 0, sizeof cli);
    px_train_plan plan = {0};
    px_memory_prediction mem = {0};
    px_plan_rows *rows = NULL;
    px_graph *graph = NULL;
    int status = PX_EXIT_USAGE;
    if (parse_args(argc, argv, &a, d) != 0) goto done;
    if (a.help) {
        fputs(px_plan_help, stdout);
        status = PX_EXIT_OK;
        goto done;
    }
    if (parse_model_flags(&a, &cli, d) != 0) goto done;
    if (access(a.model, R_OK) != 0) {
        px_error(d, "plan: cannot read model '%s': %s", a.model, strerror(errno));
        goto done;
    }
    if (a.data && access(a.data, R_OK | X_OK) != 0) {
        px_error(d, "plan: --data: cannot read folder '%s': %s", a.data, strerror(errno));
        goto done;
    }
    if (a.svg) { /* the output policy (common/out_paths.h): never an input, a folder or a FIFO */
        char msg[512];
        if (px_output_kind_ok("--svg", a.svg, msg, sizeof msg) != 0) {
            px_error(d, "plan: %s", msg);
            goto done;
        }
        if (px_same_file(a.svg, a.model)) {
            px_error(d, "plan: --svg '%s' is the model: it would be replaced", a.svg);
            goto done;
        }
    }
    status = PX_EXIT_FAILURE;
    char rows_why[512] = "";
    if (variable_plan(&cli, a.data, &plan, &graph, &rows, rows_why, sizeof rows_why, d) != 0)
        goto done;
    char rows_from[640];
    if (rows)
        snprintf(rows_from, sizeof rows_from,
                 "replayed from the data for %d sparse variable%s, the others bounded by their "
                 "look-ups",
                 px_plan_rows_count(rows), px_plan_rows_count(rows) == 1 ? "" : "s");
    else
        snprintf(rows_from, sizeof rows_from, "bounded by the look-ups, no reuse (%s)", rows_why);

    double cores_per_rank = a.cores / a.ranks_per_host, compute = a.step_seconds;
    px_calibration cal, *calp = NULL;
    if (a.data && !(a.step_seconds > 0)) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        int threads = cores_per_rank >= 1 ? (int)cores_per_rank : 1;
        if (online > 0 && threads > online) threads = (int)online;
        if (px_plan_calibrate(a.model, a.data, a.rest, a.n_rest, threads, a.recalibrate, &cal, d))
            goto done;
        calp = &cal;
        /* the measured threads' work spread over the rank's cores */
        compute = cal.step_seconds * threads / cores_per_rank;
    }

    int hosts[MAX_POINTS], n_points = host_counts(a.hosts, hosts);
    prediction p[MAX_SETTINGS];
    int n_set = predict(&plan, rows, &cli, &a, compute, hosts, n_points, p);
    recommendation r;
    recommend(p, n_set, n_points - 1, n_points, hosts, &r);

    char why[512] = "";
    cli.ranks = hosts[n_points - 1] * a.ranks_per_host;
    cli.ranks_per_node = a.ranks_per_host;
    int m = px_inspect_memory(&cli, NULL, NULL, NULL, &mem, why, sizeof why, d);
    if (m < 0) goto done;
    px_layout lay[PX_MAX_LAYOUTS];
    int n_lay = 0;
    if (a.layouts) {
        px_layout_net net = {.ranks = hosts[n_points - 1] * a.ranks_per_host,
                             .ranks_per_host = a.ranks_per_host,
                             .alpha = a.latency,
                             .beta = 8.0 * a.ranks_per_host / a.link_bps,
                             .compute = compute,
                             .micro_batches = a.micro_batches};
        if ((n_lay = px_plan_layouts(&cli, &net, lay, d)) < 0) goto done;
    }
    if (a.json) {
        print_json(stdout, &a, &cli, calp, compute, rows_from, p, n_set, hosts, n_points, &plan,
                   rows, m == 0 ? &mem : NULL, &r, lay, n_lay);
    } else {
        print_text(stdout, &a, &cli, calp, compute, rows_from, p, n_set, hosts, n_points,
                   m == 0 ? &mem : NULL, why, &r);
        if (n_lay > 0)
            px_print_layouts_text(stdout, lay, n_lay, hosts[n_points - 1],
                                  hosts[n_points - 1] * a.ranks_per_host, cli.bindings.batch,
                                  px_comm_mode_name(cli.comm));
    }
    if (a.svg && write_svg(a.svg, p, n_set, hosts, n_points, d) != 0) goto done;
    status = PX_EXIT_OK;
done:
    px_memory_prediction_free(&mem);
    px_plan_rows_free(rows);
    px_train_plan_free(&plan);
    px_graph_free(graph);
    px_cli_free(&cli);
    free(a.rest);
    return status;
}
