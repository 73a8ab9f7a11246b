/* inspect's description of the pipeline of --pp S --micro-batches M: the
 * stage cut, what each stage trains and computes, the bytes that cross each
 * cut, and the 1F1B bubble, as text and as JSON. */
#include "inspect_pipeline.h"

#include "print.h"

#include <inttypes.h>

/* Bytes of activations stage s sends on per step: one transfer per
 * micro-batch forward, and their gradients come back as many. */
static int64_t send_bytes_per_step(const px_train_plan *plan, int s) {
    return plan->pp_stages[s].send_bytes * plan->micro_batches;
}

static double total_flops(const px_train_plan *plan) {
    double t = 0;
    for (int s = 0; s < plan->pp; s++) t += plan->pp_stages[s].flops;
    return t > 0 ? t : 1;
}

double px_pp_bubble(const px_train_plan *plan) {
    int S = plan->pp, M = plan->micro_batches;
    return S > 1 ? (double)(S - 1) / (double)(M + S - 1) : 0;
}

int px_pp_in_flight(const px_train_plan *plan, int s) {
    int n = plan->pp - s;
    return n < plan->micro_batches ? n : plan->micro_batches;
}

/* The arena of stage s's ranks, -1 when there is no buffer plan. */
static int64_t stage_arena(const px_memory_report *mem, int s) {
    return mem ? px_memory_report_arena(mem, s) : -1;
}

void px_print_pipeline_text(FILE *out, const px_train_plan *plan, const px_memory_report *mem) {
    if (plan->pp <= 1 || !plan->pp_stages) return;
    int S = plan->pp, M = plan->micro_batches;
    fprintf(out,
            "pipeline (--pp %d --micro-batches %d, 1F1B): each stage idles (S-1)/(M+S-1) = "
            "%d/%d = %.1f%% of a step (the bubble)\n",
            S, M, S - 1, M + S - 1, 100 * px_pp_bubble(plan));
    double total = total_flops(plan), var_total = 0;
    for (int s = 0; s < S; s++) var_total += (double)plan->pp_stages[s].var_bytes;
    for (int s = 0; s < S; s++) {
        const px_pp_stage_info *st = &plan->pp_stages[s];
        fprintf(out,
                "  stage %d: %s .. %s, %d layer%s, %.4g forward FLOPs per micro-batch (%.1f%%), "
                "variables %" PRId64 " bytes (%.1f%%)",
                s, st->first, st->last, st->n_layers, st->n_layers == 1 ? "" : "s", st->flops,
                100 * st->flops / total, st->var_bytes,
                var_total > 0 ? 100 * (double)st->var_bytes / var_total : 0.0);
        if (s + 1 < S)
            fprintf(out,
                    "; sends on %" PRId64 " bytes per micro-batch (%" PRId64
                    " per step forward, as many back)",
                    st->send_bytes, send_bytes_per_step(plan, s));
        int64_t arena = stage_arena(mem, s);
        int flight = px_pp_in_flight(plan, s);
        if (arena >= 0)
            fprintf(out, "; activation arena %" PRId64 " bytes (%d micro-batch%s in flight)", arena,
                    flight, flight == 1 ? "" : "es");
        fputc('\n', out);
    }
    fputs("  each stage's ranks hold its variables only, with their optimizer state and "
          "gradients, and the activations of its own micro-batches in flight (the memory per "
          "rank)\n",
          out);
}

void px_print_pipeline_json(FILE *out, const px_train_plan *plan, const px_memory_report *mem) {
    if (plan->pp <= 1 || !plan->pp_stages) return;
    fprintf(out, ",\n \"pipeline\": {\"stages\": %d, \"micro_batches\": %d, \"bubble\": %.6g",
            plan->pp, plan->micro_batches, px_pp_bubble(plan));
    fputs(", \"stage\": [", out);
    for (int s = 0; s < plan->pp; s++) {
        const px_pp_stage_info *st = &plan->pp_stages[s];
        fprintf(out, "%s\n  {\"first\": ", s ? "," : "");
        px_print_json_string(out, st->first);
        fputs(", \"last\": ", out);
        px_print_json_string(out, st->last);
        fprintf(out,
                ", \"layers\": %d, \"forward_flops_per_micro_batch\": %.6g, \"variable_bytes\": "
                "%" PRId64 ", \"send_bytes_per_micro_batch\": %" PRId64
                ", \"send_bytes_per_step\": %" PRId64,
                st->n_layers, st->flops, st->var_bytes, s + 1 < plan->pp ? st->send_bytes : 0,
                s + 1 < plan->pp ? send_bytes_per_step(plan, s) : 0);
        fprintf(out,
                ", \"micro_batches_in_flight\": %d, \"arena_bytes\": ", px_pp_in_flight(plan, s));
        int64_t arena = stage_arena(mem, s);
        if (arena >= 0)
            fprintf(out, "%" PRId64 "}", arena);
        else
            fputs("null}", out);
    }
    fputs("]}", out);
}
