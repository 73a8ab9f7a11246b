#include "inspect.h"
#include "inspect_pipeline.h"
#include "layout_traffic.h"
#include "pipeline_parallel.h"

#include "compile_cmd.h"
#include "file_atomic.h"
#include "graph_release.h"

#include "dropout_rewrite.h"

#include "onnx_io.h"
#include "passes.h"
#include "print.h"
#include "print_json.h"
#include "memory_model.h"
#include "shape_infer.h"
#include "tensor_parallel.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Text listing of the variables (the start of the text summary). */
static void print_variables_text(FILE *out, const px_train_var *tv, int n) {
    fprintf(out, "variables (%d):\n", n);
    for (int i = 0; i < n; i++) {
        const px_train_var *v = &tv[i];
        char shape[256];
        int64_t bytes = px_var_bytes(v);
        fputs("  ", out);
        px_print_text_name(out, v->value->name);
        fprintf(out, ": %s%s  ", px_dtype_name(v->value->dtype),
                px_shape_str(&v->value->shape, shape, sizeof shape));
        if (bytes >= 0)
            fprintf(out, "%" PRId64 " bytes", bytes);
        else
            fputs("? bytes", out);
        fprintf(out, "  %s  sync=%s", px_var_class_name(v->cls), px_var_sync_name(v->sync));
        if (v->partitions > 0)
            fprintf(out, " partitions=%d", v->partitions);
        else
            fputs(" partitions=auto", out);
        double touched = px_rows_touched_fraction(&tv[i]);
        if (v->cls == PX_VAR_SPARSE && touched >= 0)
            fprintf(out, " rows/step<=%.3g%%", 100 * touched);
        if (v->row_cache_only) fprintf(out, " row-cache-rows=%" PRId64, v->lookups_per_step);
        if (v->no_decay) fputs(" no-decay", out);
        if (v->tp_split) fprintf(out, " tp=%s", v->tp_split == PX_TP_COLUMNS ? "columns" : "rows");
        if (px_tp_stored(v)) /* the shape above is a rank's slab */
            fprintf(out, " slab-of=%s", px_shape_str(&v->tp_full, shape, sizeof shape));
        if (v->masked) {
            const px_masked_plan *m = v->masked;
            char pat[64];
            fprintf(out,
                    " masked=%.4g%% %s live=%" PRId64 "/%" PRId64 " kernels=%s"
                    " flops/step=%" PRId64 " (dense %" PRId64 ") gradient=%" PRId64 " bytes",
                    100 * (1 - (double)m->nnz / (double)(m->out * m->in)),
                    px_masked_pattern_text(m, pat, sizeof pat), m->nnz, m->out * m->in,
                    m->dense_path ? "dense" : "sparse",
                    m->dense_path ? m->flops_dense : m->flops_sparse, m->flops_dense, m->nnz * 4);
        }
        if (v->cls == PX_VAR_SPARSE) {
            fprintf(out, "  # read by %d Gather%s\n", v->n_gathers, v->n_gathers == 1 ? "" : "s");
        } else {
            fprintf(out, "  # %s", v->dense_reason ? v->dense_reason : "dense");
            if (v->dense_node) {
                const px_node *n = v->dense_node;
                fputs(": ", out);
                px_print_text_token(out, n->op_type ? n->op_type : px_op_name(n->op));
                fputc(' ', out);
                if (n->name && n->name[0])
                    px_print_text_token(out, n->name);
                else
                    fputs("(unnamed)", out);
            }
            fputc('\n', out);
        }
    }
}

/* The "trained:" section: what the step trains, and why every other float
 * initializer is not trained. */
static void print_trained_text(FILE *out, const px_graph *g, const px_train_plan *p,
                               const px_train_spec *spec) {
    for (int pass = 0; pass < 2; pass++) {
        int count = 0;
        for (int i = 0; i < g->n_inits; i++) {
            const px_value *v = g->inits[i];
            if (v->kind == PX_VALUE_INITIALIZER && px_dtype_is_float(v->dtype) &&
                (px_not_trained_reason(p, spec, v) != NULL) == pass)
                count++;
        }
        if (pass == 0)
            fprintf(out, "trained: %d initializer%s (%s)\n", count, count == 1 ? "" : "s",
                    px_trained_set_source(spec));
        else if (count)
            fprintf(out, "not trained: %d float initializer%s\n", count, count == 1 ? "" : "s");
        for (int i = 0; i < g->n_inits; i++) {
            const px_value *v = g->inits[i];
            if (v->kind != PX_VALUE_INITIALIZER || !px_dtype_is_float(v->dtype)) continue;
            const char *why = px_not_trained_reason(p, spec, v);
            if ((why != NULL) != pass) continue;
            fputs("  ", out);
            px_print_text_name(out, v->name);
            if (why) fprintf(out, "  # %s", why);
            fputc('\n', out);
        }
    }
}

/* The buffer plan compile would make, for the folded stage (static shapes).
 * A graph the code generator cannot compile has none: the reason is shown
 * instead, and inspect itself still succeeds. */
static const px_memory_report *memory_plan(const px_cli *cli, const px_graph *g,
                                           px_memory_report *r, char *why, size_t cap) {
    why[0] = '\0';
    if (cli->stage == PX_STAGE_IMPORTED) return NULL;
    return px_memory_plan_or_why(g, r, why, cap) == 0 ? r : NULL;
}

static void print_memory_text(FILE *out, const px_memory_report *m, const char *why) {
    if (m)
        fprintf(out,
                "memory plan: %" PRId64 " bytes of buffers at peak (%" PRId64
                " without reuse), %" PRId64 " bytes of weights and constants\n",
                m->arena_bytes, m->unplanned_bytes, m->constant_bytes);
    else if (why[0])
        fprintf(out, "memory plan: none (%s)\n", why);
}

/* --tp: the group sums the tensor-parallel pass and autodiff inserted, the
 * bytes they move per rank and step, and the pass's notes (a projection
 * kept whole, a tied weight read through TPSlice). */
static void print_tp_text(FILE *out, const px_graph *g, const px_train_plan *plan) {
    for (int i = 0; i < plan->n_tp_notes; i++)
        fprintf(out, "tensor-parallel: %s\n", plan->tp_notes[i]);
    int n = 0;
    int64_t bytes = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *nd = g->nodes[i];
        if (!px_tp_group_values(nd)) continue;
        if (!n++)
            fprintf(out, "tensor-parallel group sums (over --tp %" PRId64 " ranks):",
                    px_attr_int(nd, "tp", 0));
        fprintf(out, " %s (%" PRId64 " values)", nd->name, px_tp_group_values(nd));
        bytes += px_tp_group_sum_bytes(nd);
    }
    if (n)
        fprintf(out,
                "\npredicted tensor-parallel bytes per rank per step (sent + received, besides "
                "the data-parallel traffic): %" PRId64 "\n",
                bytes);
}

static void print_bytes(FILE *out, const px_traffic_prediction *p) {
    fprintf(out, "hybrid %" PRId64 ", allreduce %" PRId64 ", ps %" PRId64 ", auto %" PRId64 "\n",
            p->hybrid, p->allreduce, p->ps, p->auto_);
}

/* The traffic inspect predicts, made once for the text and the JSON; none at
 * the imported stage (no static shapes). */
typedef struct inspect_traffic {
    px_traffic_prediction dp; /* the data-parallel exchange (px_predict_traffic) */
    /* --pp: the data-parallel exchange of a rank of each stage; NULL without */
    px_traffic_prediction *dp_stage;
    /* --tp or --pp at the parallel stage: the layout's own prediction
     * (layout_traffic.h), the mean over the ranks and (--pp) a rank of
     * each stage's */
    int has_layout;
    px_traffic_prediction layout, *layout_stage;
} inspect_traffic;

static void inspect_traffic_free(inspect_traffic *t) {
    free(t->dp_stage);
    free(t->layout_stage);
}

static int predict_traffic(const px_cli *cli, const px_graph *g, const px_train_plan *plan,
                           inspect_traffic *t, px_diag *d) {
    memset(t, 0, sizeof *t);
    px_train_config cfg;
    px_train_config_from_cli(cli, &cfg);
    px_predict_traffic(plan, cli->ranks, &cfg, &t->dp);
    int S = plan->pp > 1 ? plan->pp : 0, rc = 0;
    t->has_layout = cli->stage == PX_STAGE_PARALLEL && (plan->tp > 1 || S);
    if (S) {
        t->dp_stage = calloc((size_t)S, sizeof *t->dp_stage);
        if (t->has_layout) t->layout_stage = calloc((size_t)S, sizeof *t->layout_stage);
        if (!t->dp_stage || (t->has_layout && !t->layout_stage)) rc = -1;
    }
    for (int st = 0; rc == 0 && st < S; st++)
        px_predict_stage_traffic(plan, cli->ranks, &cfg, st, &t->dp_stage[st]);
    if (rc == 0 && t->has_layout)
        rc = px_predict_layout_traffic(g, plan, cli->ranks, cli->ranks, &cfg, t->layout_stage,
                                       &t->layout);
    if (rc == 0) return 0;
    inspect_traffic_free(t);
    return px_error(d, "out of memory predicting the traffic");
}

/* The data-parallel exchange's bytes per rank and seconds per step. Under
 * --pp each stage's ranks AllReduce their own variables: a line per stage,
 * and the seconds of the slowest, which every rank's step waits for. Then,
 * for --tp and --pp, the layout's bytes with its own exchanges. */
static void print_traffic_text(FILE *out, const px_cli *cli, const px_train_plan *plan,
                               const inspect_traffic *t) {
    const char *s = cli->ranks == 1 ? "" : "s";
    if (plan->pp > 1) {
        fprintf(out,
                "predicted bytes per rank per step (%d rank%s, sent + received, besides the "
                "stage transfers above; each stage's ranks AllReduce their own variables):\n",
                cli->ranks, s);
        for (int st = 0; st < plan->pp; st++) {
            fprintf(out, "  a rank of stage %d: ", st);
            print_bytes(out, &t->dp_stage[st]);
        }
    } else {
        fprintf(out, "predicted bytes per rank per step (%d rank%s, sent + received): ", cli->ranks,
                s);
        print_bytes(out, &t->dp);
    }
    const px_traffic_prediction *p = &t->dp;
    fprintf(out,
            "predicted communication seconds per step (%d rank%s, alpha-beta model, no "
            "overlap%s): hybrid %.3g, allreduce %.3g, ps %.3g, auto %.3g\n",
            cli->ranks, s, plan->pp > 1 ? "; the slowest stage's, which every step waits for" : "",
            p->seconds_hybrid, p->seconds_allreduce, p->seconds_ps, p->seconds_auto);
    if (!t->has_layout) return;
    int tp = plan->tp > 1, pp = plan->pp > 1;
    fprintf(out,
            "predicted bytes per rank per step of this layout (%d rank%s, sent + received: the "
            "data-parallel bytes%s%s%s, as --stats counts them)%s",
            cli->ranks, s,
            tp && pp ? ", "
            : tp     ? " and "
                     : "",
            tp ? "the tensor-parallel group sums" : "", pp ? " and the stage transfers" : "",
            pp ? ":\n" : ": ");
    for (int st = 0; st < plan->pp && plan->pp > 1; st++) {
        fprintf(out, "  a rank of stage %d: ", st);
        print_bytes(out, &t->layout_stage[st]);
    }
    if (plan->pp > 1) fputs("  the mean over the ranks: ", out);
    print_bytes(out, &t->layout);
}

static int write_listing(const px_cli *cli, const px_graph *g, const px_train_plan *plan,
                         const px_train_spec *spec, const px_memory_prediction *per_rank,
                         const char *per_rank_why, const px_memory_report *mem, const char *why,
                         const inspect_traffic *traffic, FILE *out, px_diag *d) {
    switch (cli->format) {
    case PX_FORMAT_TEXT:
        /* The summary a user comes for first; the graph (hundreds of lines
         * for a real model) only when asked for. */
        print_variables_text(out, plan->vars, plan->n_vars);
        print_trained_text(out, g, plan, spec);
        print_tp_text(out, g, plan);
        px_print_pipeline_text(out, plan, mem);
        if (traffic) print_traffic_text(out, cli, plan, traffic);
        px_print_memory_text(out, per_rank, per_rank_why);
        print_memory_text(out, mem, why);
        if (cli->show_graph) {
            fputc('\n', out);
            if (px_print_text(out, g, d) != 0) return -1;
        } else {
            fprintf(out, "graph (stage %s): %d nodes; --graph lists them\n",
                    px_stage_name(cli->stage), g->n_nodes);
        }
        if (fflush(out) != 0 || ferror(out))
            return px_error(d, "could not write the listing: %s", strerror(errno));
        return 0;
    case PX_FORMAT_DOT: return px_print_dot(out, g, d);
    case PX_FORMAT_JSON: {
        px_inspect_doc doc = {
            .predicted = traffic ? &traffic->dp : NULL,
            .model = cli->model,
            .stage = px_stage_name(cli->stage),
            .ranks = cli->ranks,
            .g = g,
            .plan = plan,
            .memory = mem,
            .memory_per_rank = per_rank,
            .spec = spec,
            .predicted_by_stage = traffic ? traffic->dp_stage : NULL,
            .predicted_layout = traffic && traffic->has_layout ? &traffic->layout : NULL,
            .predicted_layout_by_stage = traffic ? traffic->layout_stage : NULL,
        };
        return px_print_inspect_json(out, &doc, d);
    }
    case PX_FORMAT_ONNX: break; /* written by px_onnx_save_file, see px_inspect */
    }
    return px_error(d, "internal error: unexpected format %d", (int)cli->format);
}

static int write_output(const px_cli *cli, const px_graph *g, const px_train_plan *plan,
                        const px_train_spec *spec, const px_memory_prediction *per_rank,
                        const char *per_rank_why, const px_memory_report *mem, const char *why,
                        FILE *out, px_diag *d) {
    inspect_traffic traffic = {0};
    int predicted = cli->stage != PX_STAGE_IMPORTED &&
                    (cli->format == PX_FORMAT_TEXT || cli->format == PX_FORMAT_JSON);
    int rc = predicted ? predict_traffic(cli, g, plan, &traffic, d) : 0;
    if (rc == 0)
        rc = write_listing(cli, g, plan, spec, per_rank, per_rank_why, mem, why,
                           predicted ? &traffic : NULL, out, d);
    inspect_traffic_free(&traffic);
    return rc;
}

int px_inspect(const px_cli *cli, px_diag *d) {
    int rc = -1;
    px_graph *g = NULL;
    px_train_plan plan = {0};
    px_model_meta meta = {0};
    px_memory_prediction per_rank = {0};
    char per_rank_why[512] = "";
    px_memory_report mem_report = {0};
    char mem_why[512] = "";
    int have_per_rank = 0;
    const char *out_path = cli->output && strcmp(cli->output, "-") != 0 ? cli->output : NULL;

    /* Binary ONNX on a terminal is useless and can garble it. */
    if (cli->format == PX_FORMAT_ONNX && !out_path && isatty(STDOUT_FILENO)) {
        px_error(d, "--format onnx writes a binary model: use -o FILE or redirect stdout");
        goto cleanup;
    }

    px_import_opts import_opts = {.allow_unsupported = 0};
    g = px_onnx_load_file(cli->model, &import_opts, d);
    if (!g) goto cleanup;

    /* What training would train, as compile decides it (its warnings too). */
    px_train_config cfg;
    px_train_config_from_cli(cli, &cfg);
    if (px_model_meta_read(g, &meta, d)) goto cleanup;
    cfg.spec.meta = &meta;
    /* the "trained:" section lists them */
    if (px_warn_trained_set(g, &cfg.spec, 0, d)) goto cleanup;
    if (cli->stage != PX_STAGE_IMPORTED && px_pass_apply_ties(g, &meta, d)) goto cleanup;

    if (cli->stage != PX_STAGE_IMPORTED) {
        px_bindings micro; /* --pp: folded at the micro-batch, as compile does */
        if (px_pp_micro_bindings(&cli->bindings, &cfg, &micro, d) != 0 ||
            px_pipeline_fold(g, &micro, d) != 0)
            goto cleanup;
    } else {
        if (cli->any_shape_flag && px_pass_bind_shapes(g, &cli->bindings, d) != 0) goto cleanup;
        if (px_infer_shapes(g, d) != 0) goto cleanup;
    }

    /* The variable plan, as compile makes it; its synchronisation is the
     * comm pass's (stage parallel) or what that pass would choose. */
    if (px_plan_variables(g, &cfg.spec, &plan, d) != 0) goto cleanup;
    if (px_plan_weight_sparsity(g, &cfg.sparsity, &plan, d) != 0) goto cleanup;
    if (cli->stage == PX_STAGE_IMPORTED) /* no static shapes yet: look-ups unknown */
        for (int i = 0; i < plan.n_vars; i++) plan.vars[i].lookups_per_step = 0;
    if (cli->stage == PX_STAGE_TRAINED || cli->stage == PX_STAGE_PARALLEL)
        if (px_pass_dropout_rewrite(g, d) != 0 || px_pass_sparsify(g, &plan, d) != 0 ||
            px_pass_tensor_parallel(g, cfg.tp, &plan, d) != 0 ||
            px_pass_pipeline_split(g, &cfg, &plan, d) != 0 ||
            px_pass_loss_denominators(g, &cfg, &plan, d) != 0 ||
            px_pass_optimizer(g, &cfg, &plan, d) != 0 || px_pass_pipeline_grads(g, &plan, d) != 0)
            goto cleanup;
    /* whatever the stage: the bytes predicted are the training program's */
    plan.loss_means_over_ranks = px_loss_means_over_ranks(g, &cfg);
    px_plan_sync(&plan, &cfg);
    if (cli->stage == PX_STAGE_PARALLEL &&
        (px_pass_comm(g, &cfg, &plan, d) != 0 || px_pass_pipeline_schedule(g, &plan, d) != 0))
        goto cleanup;
    if (cli->stage == PX_STAGE_TRAINED || cli->stage == PX_STAGE_PARALLEL)
        if (px_pass_dce(g, d) != 0 || px_graph_verify(g, d) != 0) goto cleanup;
    /* --comm auto's choice for every mode's prediction (the "auto" column). */
    px_auto_choose(&plan, &cfg);

    if (cli->format == PX_FORMAT_ONNX) {
        px_export_opts export_opts = {.external_threshold = 0};
        rc = px_onnx_save_file(g, out_path ? out_path : "-", &export_opts, d);
        goto cleanup;
    }

    /* The buffer plan of the graph shown, made once: at the parallel stage
     * the memory per rank reads it too (on a graph of 100k nodes a plan
     * costs a second). */
    const px_memory_report *mem = memory_plan(cli, g, &mem_report, mem_why, sizeof mem_why);
    /* Memory per rank: for the training program of these flags, whatever
     * the stage shown (the parallel stage's graph when it is the one). */
    if (cli->stage != PX_STAGE_IMPORTED && cli->format != PX_FORMAT_DOT &&
        cli->format != PX_FORMAT_ONNX) {
        int parallel = cli->stage == PX_STAGE_PARALLEL;
        int m = px_inspect_memory(cli, parallel ? g : NULL, parallel ? &plan : NULL,
                                  parallel ? mem : NULL, &per_rank, per_rank_why,
                                  sizeof per_rank_why, d);
        if (m < 0) goto cleanup;
        have_per_rank = m == 0;
    }
    px_atomic_file a; /* the output policy: common/file_atomic.h */
    char err[4400];
    if (out_path && px_atomic_open(&a, out_path, err, sizeof err)) {
        px_error(d, "-o: %s", err);
        goto cleanup;
    }
    rc = write_output(cli, g, &plan, &cfg.spec, have_per_rank ? &per_rank : NULL, per_rank_why, mem,
                      mem_why, out_path ? a.f : stdout, d);
    if (out_path && rc != 0) px_atomic_abort(&a); /* no half-written files */
    if (out_path && rc == 0 && px_atomic_commit(&a, err, sizeof err))
        rc = px_error(d, "-o: %s", err);

cleanup:
    if (rc != 0 && g)
        px_note(d, "while inspecting '%s' at stage '%s'", cli->model, px_stage_name(cli->stage));
    px_memory_prediction_free(&per_rank);
    px_memory_report_free(&mem_report);
    px_train_plan_free(&plan);
    px_model_meta_free(&meta);
    px_graph_release(g);
    return rc;
}
