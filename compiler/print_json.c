/* The JSON document of `parallaxc inspect --format json`. One object; the
 * entries of "values", "nodes" and "variables" each on their own line so the
 * output diffs well. Unknown dims are null, symbolic dims their name. */
#include "print_json.h"

#include "inspect_pipeline.h"
#include "print.h"
#include "tensor_parallel.h"

#include <errno.h>
#include <string.h>
#include <inttypes.h>

static void print_value(FILE *out, const px_value *v) {
    fputs("{\"name\": ", out);
    px_print_json_string(out, v->name);
    fputs(", \"dtype\": ", out);
    px_print_json_string(out, v->dtype == PX_UNDEFINED ? NULL : px_dtype_name(v->dtype));
    fputs(", \"shape\": ", out);
    px_print_json_shape(out, &v->shape);
    fputc('}', out);
}

/* Omitted optional inputs/outputs are "" as in ONNX. */
static void print_name_list(FILE *out, px_value *const *vals, int n) {
    fputc('[', out);
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", out);
        px_print_json_string(out, vals[i] ? vals[i]->name : "");
    }
    fputc(']', out);
}

static void print_node(FILE *out, const px_node *n) {
    fputs("{\"name\": ", out);
    px_print_json_string(out, n->name ? n->name : "");
    fputs(", \"op\": ", out);
    px_print_json_string(out, n->op_type ? n->op_type : px_op_name(n->op));
    fputs(", \"domain\": ", out);
    px_print_json_string(out, n->domain ? n->domain : "");
    fputs(", \"inserted_by\": ", out);
    px_print_json_string(out, px_node_inserted_by(n)); /* null: the model's */
    fputs(", \"inputs\": ", out);
    print_name_list(out, n->inputs, n->n_inputs);
    fputs(", \"outputs\": ", out);
    print_name_list(out, n->outputs, n->n_outputs);
    fputc('}', out);
}

void px_print_bytes_fields(FILE *out, const px_traffic_prediction *p) {
    fprintf(out,
            "\"hybrid\": %" PRId64 ", \"allreduce\": %" PRId64 ", \"ps\": %" PRId64
            ", \"auto\": %" PRId64,
            p->hybrid, p->allreduce, p->ps, p->auto_);
}

static void print_bytes_json(FILE *out, const px_traffic_prediction *p) {
    fputc('{', out);
    px_print_bytes_fields(out, p);
    fputc('}', out);
}

/* "key": [the bytes of a rank of each of the S stages] (nothing when S is 0
 * or by is NULL). */
static void print_stages_json(FILE *out, const char *key, const px_traffic_prediction *by, int S) {
    if (!by || !S) return;
    fprintf(out, ",\n \"%s\": [", key);
    for (int s = 0; s < S; s++) {
        if (s) fputs(", ", out);
        print_bytes_json(out, &by[s]);
    }
    fputc(']', out);
}

/* --tp: the group sums and their bytes per rank and step; null without. */
static void print_tensor_parallel(FILE *out, const px_graph *g, const px_train_plan *plan) {
    int n = 0;
    int64_t bytes = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *nd = g->nodes[i];
        if (!px_tp_group_values(nd)) continue;
        fprintf(out,
                n++ ? ", " : ",\n \"tensor_parallel\": {\"tp\": %" PRId64 ", \"group_sums\": [",
                px_attr_int(nd, "tp", 1));
        fputs("{\"node\": ", out);
        px_print_json_string(out, nd->name);
        fprintf(out, ", \"values\": %" PRId64 ", \"bytes_per_step\": %" PRId64 "}",
                px_tp_group_values(nd), px_tp_group_sum_bytes(nd));
        bytes += px_tp_group_sum_bytes(nd);
    }
    if (n) {
        fprintf(out, "], \"bytes_per_rank_per_step\": %" PRId64 ", \"notes\": [", bytes);
        for (int i = 0; plan && i < plan->n_tp_notes; i++) {
            if (i) fputs(", ", out);
            px_print_json_string(out, plan->tp_notes[i]);
        }
        fputs("]}", out);
    } else
        fputs(",\n \"tensor_parallel\": null", out);
}

void px_print_variable_json(FILE *out, const px_train_var *tv) {
    fputs("{\"name\": ", out);
    px_print_json_string(out, tv->value->name);
    fputs(", \"shape\": ", out);
    px_print_json_shape(out, &tv->value->shape);
    int64_t bytes = px_var_bytes(tv);
    if (bytes >= 0)
        fprintf(out, ", \"bytes\": %" PRId64, bytes);
    else
        fputs(", \"bytes\": null", out);
    fprintf(out, ", \"class\": \"%s\", \"sync\": \"%s\", ", px_var_class_name(tv->cls),
            px_var_sync_name(tv->sync));
    if (tv->partitions > 0)
        fprintf(out, "\"partitions\": %d", tv->partitions);
    else
        fputs("\"partitions\": \"auto\"", out);
    double touched = px_rows_touched_fraction(tv);
    if (touched >= 0)
        fprintf(out, ", \"rows_touched_per_step\": %.6g", touched);
    else
        fputs(", \"rows_touched_per_step\": null", out);
    /* A worker's copy of a sparse PS variable: the rows of its pulls' caches
     * (one per index a step reads), not the table. null: a full replica. */
    if (tv->row_cache_only)
        fprintf(out, ", \"row_cache_rows\": %" PRId64, tv->lookups_per_step);
    else
        fputs(", \"row_cache_rows\": null", out);
    fprintf(out, ", \"weight_decay\": %s", tv->no_decay ? "false" : "true");
    /* --tp: which features of the weight a tensor-parallel group splits */
    if (tv->tp_split)
        fprintf(out, ", \"tp_split\": \"%s\"", tv->tp_split == PX_TP_COLUMNS ? "columns" : "rows");
    /* stored split: "shape" is a rank's slab, this the whole variable's */
    if (px_tp_stored(tv)) {
        fputs(", \"tp_whole_shape\": ", out);
        px_print_json_shape(out, &tv->tp_full);
    }
    /* a masked weight (--sparsity): its mask, kernels, FLOPs and gradient bytes */
    const px_masked_plan *m = tv->masked;
    if (!m) {
        fputs(", \"sparsity\": null}", out);
        return;
    }
    char pat[64];
    fprintf(
        out,
        ", \"sparsity\": {\"sparsity\": %.17g, \"pattern\": \"%s\", \"live\": %" PRId64
        ", \"total\": %" PRId64 ", \"init\": \"%s\", \"kernels\": \"%s\", "
        "\"flops_per_step\": %" PRId64 ", \"dense_flops_per_step\": %" PRId64
        ", \"gradient_bytes\": %" PRId64 ", \"live_bytes\": %" PRId64 "}}",
        1 - (double)m->nnz / (double)(m->out * m->in), px_masked_pattern_text(m, pat, sizeof pat),
        m->nnz, m->out * m->in, px_sparsity_init_name(m->init), m->dense_path ? "dense" : "sparse",
        m->dense_path ? m->flops_dense : m->flops_sparse, m->flops_dense, m->nnz * 4, m->nnz * 4);
}

/* "trained": the initializers the step trains and, for every other float
 * initializer, why not (px_not_trained_reason). */
static void print_trained(FILE *out, const px_inspect_doc *doc) {
    const px_graph *g = doc->g;
    const px_train_plan *p = doc->plan;
    fputs(",\n \"trained\": {\"from\": ", out);
    px_print_json_string(out, px_trained_set_source(doc->spec));
    for (int pass = 0; pass < 2; pass++) {
        fputs(pass ? ", \"not_trained\": [" : ", \"initializers\": [", out);
        int first = 1;
        for (int i = 0; i < g->n_inits; i++) {
            const px_value *v = g->inits[i];
            if (v->kind != PX_VALUE_INITIALIZER || !px_dtype_is_float(v->dtype)) continue;
            const char *why = px_not_trained_reason(p, doc->spec, v);
            if ((why != NULL) != pass) continue;
            fputs(first ? "" : ", ", out);
            first = 0;
            if (!pass) {
                px_print_json_string(out, v->name);
                continue;
            }
            fputs("{\"name\": ", out);
            px_print_json_string(out, v->name);
            fputs(", \"reason\": ", out);
            px_print_json_string(out, why);
            fputc('}', out);
        }
        fputc(']', out);
    }
    fputc('}', out);
}

int px_print_inspect_json(FILE *out, const px_inspect_doc *doc, px_diag *d) {
    const px_graph *g = doc->g;
    fputs("{\"model\": ", out);
    px_print_json_string(out, doc->model);
    fputs(",\n \"stage\": ", out);
    px_print_json_string(out, doc->stage);
    fprintf(out, ",\n \"ranks\": %d", doc->ranks);
    int64_t opset = px_graph_opset(g, "");
    if (opset > 0)
        fprintf(out, ",\n \"opset\": %" PRId64, opset);
    else
        fputs(",\n \"opset\": null", out);

    fputs(",\n \"values\": [", out);
    for (int i = 0; i < g->n_values; i++) {
        fputs(i ? ",\n  " : "\n  ", out);
        print_value(out, g->values[i]);
    }
    fputs("]", out);

    fputs(",\n \"nodes\": [", out);
    int first = 1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i]->dead) continue;
        fputs(first ? "\n  " : ",\n  ", out);
        first = 0;
        print_node(out, g->nodes[i]);
    }
    fputs("]", out);

    fputs(",\n \"variables\": [", out);
    for (int i = 0; doc->plan && i < doc->plan->n_vars; i++) {
        fputs(i ? ",\n  " : "\n  ", out);
        px_print_variable_json(out, &doc->plan->vars[i]);
    }
    fputs("]", out);
    if (doc->spec) print_trained(out, doc);

    const px_traffic_prediction *p = doc->predicted;
    if (p) {
        fputs(",\n \"predicted_bytes_per_step\": ", out);
        print_bytes_json(out, p);
        fprintf(out,
                ",\n \"predicted_seconds_per_step\": {\"hybrid\": %.6g, \"allreduce\": %.6g, "
                "\"ps\": %.6g, \"auto\": %.6g}",
                p->seconds_hybrid, p->seconds_allreduce, p->seconds_ps, p->seconds_auto);
        int S = doc->plan && doc->plan->pp > 1 ? doc->plan->pp : 0;
        print_stages_json(out, "predicted_bytes_per_step_by_stage", doc->predicted_by_stage, S);
        if (doc->predicted_layout) {
            fputs(",\n \"predicted_layout_bytes_per_step\": ", out);
            print_bytes_json(out, doc->predicted_layout);
            print_stages_json(out, "predicted_layout_bytes_per_step_by_stage",
                              doc->predicted_layout_by_stage, S);
        }
    } else {
        fputs(",\n \"predicted_bytes_per_step\": null", out);
        fputs(",\n \"predicted_seconds_per_step\": null", out);
    }
    if (doc->memory)
        fprintf(out,
                ",\n \"memory\": {\"arena_bytes\": %" PRId64 ", \"unplanned_bytes\": %" PRId64
                ", \"constant_bytes\": %" PRId64 "}",
                doc->memory->arena_bytes, doc->memory->unplanned_bytes,
                doc->memory->constant_bytes);
    else
        fputs(",\n \"memory\": null", out);
    px_print_memory_json(out, doc->memory_per_rank);
    print_tensor_parallel(out, g, doc->plan);
    if (doc->plan) px_print_pipeline_json(out, doc->plan, doc->memory);
    fputs("}\n", out);

    if (fflush(out) != 0 || ferror(out))
        return px_error(d, "could not write the JSON description of '%s': %s", doc->model,
                        strerror(errno));
    return 0;
}
