#include "report_html.h"
#include "svg_chart.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const traffic_kinds[] = {"allreduce", "ps_pull", "ps_push", "other"};
#define N_KINDS 4
/* Span names drawn in the timeline chart; the rest is "other". */
#define TOP_SPANS 7

static const char style[] =
    "body{font-family:sans-serif;margin:24px;color:#222;background:#fafafa}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}"
    ".sub{color:#666;margin-bottom:16px}"
    "table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px;text-align:left;"
    "border-bottom:1px solid #e4e4e4}th{background:#f0f0f0}td.n{text-align:right}"
    ".grid{display:flex;flex-wrap:wrap;gap:18px;margin-top:20px}"
    "figure{margin:0;background:#fff;border:1px solid #ddd;padding:10px;width:580px}"
    "figure svg{width:100%;height:auto}"
    "figcaption{font-weight:bold;margin-bottom:4px}.note{color:#666;font-size:12px;margin:4px 0 0}";

/* The y values of column col of c over its step column; NaN for cells
 * that are not positive when positive_only is set. The caller frees. */
static double *column(const px_csv *c, int col, int positive_only, double **steps) {
    int step = px_csv_col(c, "step");
    double *x = malloc(((size_t)c->n_rows + 1) * sizeof *x);
    double *y = malloc(((size_t)c->n_rows + 1) * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        *steps = NULL;
        return NULL;
    }
    for (int i = 0; i < c->n_rows; i++) {
        x[i] = px_csv_at(c, i, step);
        y[i] = col < 0 ? NAN : px_csv_at(c, i, col);
        if (positive_only && !(y[i] > 0)) y[i] = NAN;
    }
    *steps = x;
    return y;
}

/* Up to 8 series built from csv columns, freed together. */
typedef struct series_set {
    px_series s[8];
    double *mem[16];
    char *labels[8]; /* labels made for the series */
    int n, n_mem, n_labels;
} series_set;

static void add_column(series_set *set, const px_csv *c, const char *name, const char *label,
                       int markers, int positive_only) {
    int col = px_csv_col(c, name);
    if (col < 0 || set->n >= 8 || c->n_rows == 0) return;
    double *x, *y = column(c, col, positive_only, &x);
    if (!y) return;
    set->mem[set->n_mem++] = x;
    set->mem[set->n_mem++] = y;
    set->s[set->n++] = (px_series){label, x, y, c->n_rows, markers};
}

static void free_set(series_set *set) {
    for (int i = 0; i < set->n_mem; i++) free(set->mem[i]);
    for (int i = 0; i < set->n_labels; i++) free(set->labels[i]);
    memset(set, 0, sizeof *set);
}

static void open_figure(FILE *f, const char *name, const char *title, int points) {
    fprintf(f, "<figure data-chart=\"%s\" data-points=\"%d\"><figcaption>", name, points);
    px_xml_escape(f, title);
    fputs("</figcaption>\n", f);
}

static void note(FILE *f, const char *text) {
    fputs("<p class=\"note\">", f);
    px_xml_escape(f, text);
    fputs("</p>", f);
}

/* A figure whose SVG is drawn first into memory, so that the figure's
 * data-points attribute can carry the count the drawing returns. */
typedef int (*draw_fn)(FILE *f, const void *arg);

static int figure(FILE *out, const char *name, const char *title, draw_fn draw, const void *arg,
                  const char *note_if_data, const char *note_if_empty) {
    char *svg = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&svg, &len);
    if (!mem) return -1;
    int points = draw(mem, arg);
    if (fclose(mem) != 0 || points < 0) {
        free(svg);
        return -1;
    }
    open_figure(out, name, title, points);
    if (points > 0) fwrite(svg, 1, len, out);
    if (points == 0 && note_if_empty) note(out, note_if_empty);
    if (points > 0 && note_if_data) note(out, note_if_data);
    fputs("</figure>\n", out);
    free(svg);
    return 0;
}

typedef struct lines_arg {
    const char *xlabel;
    px_unit unit;
    const series_set *set;
} lines_arg;

static int draw_lines(FILE *f, const void *arg) {
    const lines_arg *a = arg;
    return px_svg_lines(f, a->xlabel, a->unit, a->set->s, a->set->n);
}

typedef struct bars_arg {
    px_unit unit;
    px_bars bars;
} bars_arg;

static int draw_unit_bars(FILE *f, const void *arg) {
    const bars_arg *a = arg;
    return px_svg_bars(f, a->unit, &a->bars);
}

static int is_metric(const char *name) {
    return strcmp(name, "step") != 0 && strcmp(name, "loss") != 0 && strcmp(name, "lr") != 0;
}

static int loss_charts(FILE *f, const px_run *run) {
    series_set set = {0};
    add_column(&set, &run->losses, "loss", "training loss (each step)", 0, 0);
    add_column(&set, &run->progress, "loss_smoothed", "training loss (moving average)", 0, 0);
    add_column(&set, &run->eval, "loss", "validation loss", 1, 0);
    lines_arg a = {"step", PX_UNIT_PLAIN, &set};
    int rc = figure(f, "loss", "Loss", draw_lines, &a, NULL,
                    "No losses: losses.csv, progress.csv and eval.csv are missing or empty.");
    free_set(&set);
    /* Other scalar outputs (accuracy, ...): training and validation. */
    for (int i = 0; i < run->losses.n_cols && set.n < 8; i++)
        if (is_metric(run->losses.cols[i]))
            add_column(&set, &run->losses, run->losses.cols[i], run->losses.cols[i], 0, 0);
    for (int i = 0; i < run->eval.n_cols && set.n < 8; i++)
        if (is_metric(run->eval.cols[i])) {
            char label[160];
            snprintf(label, sizeof label, "validation %s", run->eval.cols[i]);
            char *kept = strdup(label); /* outlives this loop: freed with the set */
            if (!kept) continue;
            set.labels[set.n_labels++] = kept;
            add_column(&set, &run->eval, run->eval.cols[i], kept, 1, 0);
        }
    if (rc == 0 && set.n > 0) rc = figure(f, "metrics", "Metrics", draw_lines, &a, NULL, NULL);
    free_set(&set);
    return rc;
}

static int lr_chart(FILE *f, const px_run *run) {
    series_set set = {0};
    add_column(&set, &run->losses, "lr", "learning rate", 0, 0);
    if (set.n == 0) add_column(&set, &run->progress, "lr", "learning rate", 0, 0);
    lines_arg a = {"step", PX_UNIT_PLAIN, &set};
    int rc = figure(f, "lr", "Learning rate", draw_lines, &a, NULL,
                    "No learning rate: neither losses.csv nor progress.csv has an lr column.");
    free_set(&set);
    return rc;
}

static int throughput_chart(FILE *f, const px_run *run) {
    series_set set = {0};
    add_column(&set, &run->progress, "samples_per_second", "samples/s (moving average)", 0, 1);
    lines_arg a = {"step", PX_UNIT_PLAIN, &set};
    char text[160] = "";
    double rate = px_json_number_or(run->stats, "samples_per_second", NAN);
    if (isfinite(rate))
        snprintf(text, sizeof text, "Whole run: %.6g samples/s (stats.json).", rate);
    int rc = figure(f, "throughput", "Samples per second", draw_lines, &a, text[0] ? text : NULL,
                    "No rate: progress.csv (written by --run-dir) is missing; warm-up steps "
                    "have none.");
    free_set(&set);
    return rc;
}

/* The stats.json rank objects, or NULL. */
static const px_json *stats_ranks(const px_run *run) {
    return px_json_get_kind(run->stats, "ranks", PX_JSON_ARRAY);
}

/* compile.json's predicted bytes per rank per step for the run's ranks and
 * --comm mode (NAN when either file lacks them): the layout's own
 * prediction, inspect's (with --tp and --pp the group sums and the stage
 * transfers too), the mean over the ranks. */
static double predicted_bytes(const px_run *run) {
    const px_json *list = px_json_get_kind(run->compile, "predicted_bytes_per_step", PX_JSON_ARRAY);
    double ranks = px_json_number_or(run->run, "ranks", NAN);
    const char *comm = px_json_string_or(run->run, "comm", NULL);
    if (!list || !comm || !isfinite(ranks)) return NAN;
    for (size_t i = 0; i < list->n; i++)
        if (px_json_number_or(list->items[i], "ranks", -1) == ranks)
            return px_json_number_or(list->items[i], comm, NAN);
    return NAN;
}

static int bytes_chart(FILE *f, const px_run *run) {
    const px_json *ranks = stats_ranks(run);
    int n = ranks ? (int)ranks->n : 0;
    char **labels = calloc((size_t)(2 * n + 1), sizeof *labels);
    double *values = calloc((size_t)(2 * n + 1) * N_KINDS, sizeof *values);
    int rc = -1;
    if (!labels || !values) goto done;
    double measured = 0;
    for (int r = 0; r < n; r++) {
        const px_json *rk = ranks->items[r];
        int id = (int)px_json_number_or(rk, "rank", r);
        for (int dir = 0; dir < 2; dir++) {
            char buf[48];
            snprintf(buf, sizeof buf, "rank %d %s", id, dir ? "received" : "sent");
            if (!(labels[2 * r + dir] = strdup(buf))) goto done;
            const px_json *by =
                px_json_get(rk, dir ? "bytes_received_per_step" : "bytes_sent_per_step");
            for (int k = 0; k < N_KINDS; k++) {
                double v = px_json_number_or(by, traffic_kinds[k], NAN);
                values[(2 * r + dir) * N_KINDS + k] = v;
                if (isfinite(v)) measured += v;
            }
        }
    }
    bars_arg bars = {PX_UNIT_BYTES,
                     {2 * n, N_KINDS, (const char *const *)labels, traffic_kinds, values, 1}};
    char text[256] = "";
    double predicted = predicted_bytes(run);
    if (n > 0 && isfinite(predicted)) {
        char a[32], b[32];
        px_format_value(a, sizeof a, predicted, PX_UNIT_BYTES);
        px_format_value(b, sizeof b, measured / n, PX_UNIT_BYTES);
        snprintf(text, sizeof text,
                 "Sent + received per rank per step, mean over ranks: predicted %s (compile.json, "
                 "%s), measured %s.",
                 a, px_json_string_or(run->run, "comm", "?"), b);
    }
    rc = figure(f, "bytes", "Bytes per step, by kind", draw_unit_bars, &bars, text[0] ? text : NULL,
                "No traffic: stats.json is missing (it is written at the end of the run).");
done:
    for (int i = 0; labels && i < 2 * n; i++) free(labels[i]);
    free(labels);
    free(values);
    return rc;
}

/* Bars of one or two numbers per rank taken from stats.json. */
typedef void (*rank_values_fn)(const px_json *rank, double *out);

static int rank_chart(FILE *f, const px_run *run, const char *name, const char *title, px_unit unit,
                      const char *const *segments, int n_segments, int stacked,
                      rank_values_fn values_of, const char *data_note, const char *empty_note) {
    const px_json *ranks = stats_ranks(run);
    int n = ranks ? (int)ranks->n : 0;
    char **labels = calloc((size_t)n + 1, sizeof *labels);
    double *values = calloc(((size_t)n + 1) * (size_t)n_segments, sizeof *values);
    int rc = -1;
    if (!labels || !values) goto done;
    for (int r = 0; r < n; r++) {
        char buf[32];
        snprintf(buf, sizeof buf, "rank %d", (int)px_json_number_or(ranks->items[r], "rank", r));
        if (!(labels[r] = strdup(buf))) goto done;
        values_of(ranks->items[r], values + (size_t)r * (size_t)n_segments);
    }
    bars_arg a = {unit, {n, n_segments, (const char *const *)labels, segments, values, stacked}};
    rc = figure(f, name, title, draw_unit_bars, &a, data_note, empty_note);
done:
    for (int i = 0; labels && i < n; i++) free(labels[i]);
    free(labels);
    free(values);
    return rc;
}

static void comm_values(const px_json *rank, double *out) {
    double busy = px_json_number_or(rank, "comm_seconds_per_step", NAN) * 1000;
    double hidden = px_json_number_or(rank, "comm_hidden_fraction", NAN); /* null: none */
    out[0] = isfinite(hidden) ? busy * hidden : NAN;
    out[1] = isfinite(hidden) ? busy * (1 - hidden) : NAN;
}

static void memory_values(const px_json *rank, double *out) {
    out[0] = px_json_number_or(px_json_get(rank, "predicted_memory_bytes"), "total", NAN);
    out[1] = px_json_number_or(rank, "peak_rss_bytes", NAN);
}

typedef struct span_rank {
    const char *name;
    double total_ms;
} span_rank;

static int by_total(const void *a, const void *b) {
    double x = ((const span_rank *)a)->total_ms, y = ((const span_rank *)b)->total_ms;
    return (x < y) - (x > y);
}

/* The names of the TOP_SPANS spans with the most time over every rank and
 * thread (borrowed from the summary), then "other"; returns their count. */
static int top_spans(const px_trace_summary *t, const char **names) {
    int n = 0, cap = 0;
    span_rank *all = NULL;
    for (int r = 0; r < t->n_ranks; r++)
        for (int h = 0; h < t->ranks[r].n_threads; h++)
            for (int s = 0; s < t->ranks[r].threads[h].n_spans; s++) {
                const px_span_total *sp = &t->ranks[r].threads[h].spans[s];
                int i = 0;
                while (i < n && strcmp(all[i].name, sp->name) != 0) i++;
                if (i == n) {
                    if (n == cap) {
                        span_rank *grown =
                            realloc(all, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *all);
                        if (!grown) continue; /* out of memory: the span counts as "other" */
                        all = grown;
                    }
                    all[n++] = (span_rank){sp->name, 0};
                }
                all[i].total_ms += sp->total_ms;
            }
    if (n > 1) qsort(all, (size_t)n, sizeof *all, by_total);
    int k = n < TOP_SPANS ? n : TOP_SPANS;
    for (int i = 0; i < k; i++) names[i] = all[i].name;
    names[k] = "other";
    free(all);
    return k + 1;
}

static int timeline(FILE *f, const px_run *run) {
    const px_trace_summary *t = &run->trace;
    int groups = 0;
    for (int r = 0; r < t->n_ranks; r++) groups += t->ranks[r].n_threads;
    const char *segments[TOP_SPANS + 1];
    int n_seg = top_spans(t, segments);
    char **labels = calloc((size_t)groups + 1, sizeof *labels);
    double *values = calloc(((size_t)groups + 1) * (size_t)n_seg, sizeof *values);
    int rc = -1, g = 0;
    if (!labels || !values) goto done;
    for (int r = 0; r < t->n_ranks; r++)
        for (int h = 0; h < t->ranks[r].n_threads; h++, g++) {
            const px_thread_total *th = &t->ranks[r].threads[h];
            char buf[96];
            snprintf(buf, sizeof buf, "rank %d %s", t->ranks[r].pid, th->name);
            if (!(labels[g] = strdup(buf))) goto done;
            for (int s = 0; s < th->n_spans; s++) {
                int k = n_seg - 1;
                for (int i = 0; i < n_seg - 1; i++)
                    if (strcmp(segments[i], th->spans[s].name) == 0) k = i;
                values[(size_t)g * (size_t)n_seg + (size_t)k] += th->spans[s].total_ms;
            }
        }
    /* Drawn values: one per (rank, thread, segment) that has time. */
    for (int i = 0; i < groups * n_seg; i++)
        if (!(values[i] > 0)) values[i] = NAN;
    bars_arg a = {PX_UNIT_MS, {groups, n_seg, (const char *const *)labels, segments, values, 1}};
    rc = figure(f, "timeline", "Time per rank and thread (whole run, from the trace)",
                draw_unit_bars, &a,
                "Spans nest (a step holds its pulls and waits), so a bar adds up time that "
                "overlaps; the table below gives each span's share of the rank's wall time.",
                "No timeline: the run wrote no trace (add --trace DIR/trace.json).");
done:
    for (int i = 0; labels && i < groups; i++) free(labels[i]);
    free(labels);
    free(values);
    return rc;
}

/* Every span of every rank and thread: count, total, mean, share of wall time. */
static void timeline_table(FILE *f, const px_trace_summary *t) {
    if (t->n_ranks == 0) return;
    fputs("<h2>Timeline summary</h2>\n<table><tr><th>rank</th><th>thread</th><th>span</th>"
          "<th>count</th><th>total ms</th><th>mean ms</th><th>share of the rank's wall "
          "time</th></tr>\n",
          f);
    for (int r = 0; r < t->n_ranks; r++) {
        const px_rank_timeline *rk = &t->ranks[r];
        double wall_ms = (rk->last_us - rk->first_us) / 1000;
        for (int h = 0; h < rk->n_threads; h++)
            for (int s = 0; s < rk->threads[h].n_spans; s++) {
                const px_span_total *sp = &rk->threads[h].spans[s];
                fprintf(f, "<tr><td>%d</td><td>", rk->pid);
                px_xml_escape(f, rk->threads[h].name);
                fputs("</td><td>", f);
                px_xml_escape(f, sp->name);
                fprintf(f,
                        "</td><td class=\"n\">%ld</td><td class=\"n\">%.3f</td><td "
                        "class=\"n\">%.4f</td><td class=\"n\">%.1f%%</td></tr>\n",
                        sp->count, sp->total_ms, sp->count ? sp->total_ms / sp->count : 0,
                        wall_ms > 0 ? 100 * sp->total_ms / wall_ms : 0);
            }
    }
    fputs("</table>\n", f);
}

static void summary_row(FILE *f, const char *key, const char *value) {
    fputs("<tr><th>", f);
    px_xml_escape(f, key);
    fputs("</th><td>", f);
    px_xml_escape(f, value);
    fputs("</td></tr>\n", f);
}

static void summary_number(FILE *f, const char *key, const px_json *obj, const char *field) {
    const px_json *v = px_json_get_kind(obj, field, PX_JSON_NUMBER);
    if (!v) return;
    char buf[32];
    snprintf(buf, sizeof buf, "%.10g", v->number);
    summary_row(f, key, buf);
}

static void summary(FILE *f, const px_run *run) {
    fputs("<table>\n", f);
    const px_json *r = run->run;
    const char *s;
    if ((s = px_json_string_or(r, "model", NULL))) summary_row(f, "model", s);
    if ((s = px_json_string_or(r, "status", NULL))) summary_row(f, "status", s);
    summary_number(f, "ranks", r, "ranks");
    summary_number(f, "threads per rank", r, "threads_per_rank");
    summary_number(f, "global batch", r, "global_batch");
    summary_number(f, "steps done", r, "steps_done");
    summary_number(f, "epochs", r, "epochs");
    if ((s = px_json_string_or(r, "comm", NULL))) summary_row(f, "--comm", s);
    const px_json *opt = px_json_get(r, "optimizer");
    if ((s = px_json_string_or(opt, "name", NULL))) summary_row(f, "optimizer", s);
    summary_number(f, "learning rate", opt, "lr");
    summary_number(f, "steps (stats.json)", run->stats, "steps");
    summary_number(f, "samples/s (stats.json)", run->stats, "samples_per_second");
    int missing = 0;
    for (int i = 0; i < PX_RF_COUNT; i++) missing += !run->found[i] && run->path[i];
    for (int found = 1; found >= !missing; found--) {
        fprintf(f, "<tr><th>%s</th><td>", found ? "files read" : "files not found");
        const char *sep = "";
        for (int i = 0; i < PX_RF_COUNT; i++)
            if (run->found[i] == found && (found || run->path[i])) {
                fputs(sep, f);
                px_xml_escape(f, found ? run->path[i] : px_run_file_default((px_run_file)i));
                sep = ", ";
            }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

int px_report_write_html(FILE *f, const px_run *run, const char *dir) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>", f);
    px_xml_escape(f, "Parallax run: ");
    px_xml_escape(f, dir);
    fprintf(f, "</title>\n<style>%s</style>\n</head><body>\n<h1>Parallax run report</h1>\n", style);
    fputs("<div class=\"sub\">", f);
    px_xml_escape(f, dir);
    fputs("</div>\n", f);
    summary(f, run);
    /* One grid, two charts a row: training, then communication, memory and time. */
    fputs("<div class=\"grid\">\n", f);
    static const char *const hidden_exposed[] = {"hidden behind compute", "exposed (waited for)"};
    static const char *const memory[] = {"predicted", "measured (peak RSS)"};
    if (loss_charts(f, run) || lr_chart(f, run) || throughput_chart(f, run) ||
        bytes_chart(f, run) ||
        rank_chart(f, run, "comm", "Communication per step: hidden and exposed", PX_UNIT_MS,
                   hidden_exposed, 2, 1, comm_values,
                   "Time each rank spent communicating per step (AllReduce, parameter-server "
                   "pulls and pushes); hidden: the part its compute did not wait for.",
                   "No communication to show: stats.json is missing, or no rank communicated "
                   "(one rank without parameter-server variables).") ||
        rank_chart(f, run, "memory", "Memory per rank: predicted and measured", PX_UNIT_BYTES,
                   memory, 2, 0, memory_values,
                   "Predicted: what the rank holds (its parameter-server rows and optimizer "
                   "state, row caches, dense replicas, activations); the process itself (binary, "
                   "MPI, BLAS, the mapped data) is not predicted. Measured: peak RSS.",
                   "No memory figures: stats.json is missing.") ||
        timeline(f, run))
        return -1;
    fputs("</div>\n", f);
    timeline_table(f, &run->trace);
    fputs("</body></html>\n", f);
    return ferror(f) ? -1 : 0;
}
