#include "svg_chart.h"

#include <limits.h>
#include <math.h>
#include <string.h>

enum { W = 600, H = 270, ML = 70, MR = 14, MT = 30, MB = 40 };
#define PW (W - ML - MR)
#define PH (H - MT - MB)

/* Enough distinct colours for every series a chart of ours draws (the
 * planner's 20 settings plus linear scaling): the ten usual ones, then
 * darker shades that stay apart from them. Past the palette, lines repeat
 * a colour but are dashed. */
static const char *const palette[] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd",
    "#e6550d", "#31a354", "#756bb1", "#636363", "#000000", "#9c9ede"};
#define N_COLORS ((int)(sizeof palette / sizeof palette[0]))

void px_xml_escape(FILE *f, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

void px_format_value(char *buf, size_t cap, double v, px_unit unit) {
    double a = fabs(v);
    switch (unit) {
    case PX_UNIT_BYTES: {
        static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
        int u = 0;
        while (a >= 1000 && u < 4) a /= 1000, v /= 1000, u++;
        snprintf(buf, cap, "%.3g %s", v, units[u]);
        return;
    }
    case PX_UNIT_MS:
        if (a >= 1000)
            snprintf(buf, cap, "%.3g s", v / 1000);
        else if (a > 0 && a < 0.1)
            snprintf(buf, cap, "%.3g us", v * 1000);
        else
            snprintf(buf, cap, "%.3g ms", v);
        return;
    case PX_UNIT_PLAIN:
        if (a >= 1e9)
            snprintf(buf, cap, "%.3gG", v / 1e9);
        else if (a >= 1e6)
            snprintf(buf, cap, "%.3gM", v / 1e6);
        else if (a >= 1e4)
            snprintf(buf, cap, "%.3gk", v / 1e3);
        else
            snprintf(buf, cap, "%.4g", v);
        return;
    }
}

/* A round step (1, 2 or 5 times a power of ten) giving about 5 ticks over span. */
static double tick_step(double span) {
    double raw = span / 5, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

/* Widens [*lo, *hi] to round ticks (and a span that is not zero). */
static double round_range(double *lo, double *hi) {
    if (!(*hi > *lo)) {
        double pad = *lo != 0 ? fabs(*lo) * 0.1 : 1;
        *lo -= pad;
        *hi += pad;
    }
    double step = tick_step(*hi - *lo);
    *lo = floor(*lo / step) * step;
    *hi = ceil(*hi / step) * step;
    return step;
}

/* The x of each legend entry and the row it is on (entries wrap at the
 * right edge); returns the number of rows. */
static int legend_layout(const char *const *labels, int n, double *x, int *row) {
    double at = ML;
    int r = 0;
    for (int i = 0; i < n; i++) {
        double w = 13 + 6.2 * (double)strlen(labels[i]) + 14;
        if (at > ML && at + w > W - MR) at = ML, r++;
        x[i] = at, row[i] = r;
        at += w;
    }
    return r + 1;
}

/* The <svg> element, the legend (one row per 14 px above the plot) and the
 * plot's frame, inside a group shifted down by the legend's extra rows;
 * close_svg ends both. */
static void open_svg(FILE *f, const char *const *labels, int n) {
    double x[64];
    int row[64];
    if (n > 64) n = 64;
    int rows = legend_layout(labels, n, x, row), extra = 14 * (rows - 1);
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"%d\" "
            "height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n",
            W, H + extra, W, H + extra);
    for (int i = 0; i < n; i++) {
        fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>", x[i],
                8 + 14 * row[i], palette[i % N_COLORS]);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\">", x[i] + 13, 17 + 14 * row[i]);
        px_xml_escape(f, labels[i]);
        fputs("</text>\n", f);
    }
    fprintf(f, "<g transform=\"translate(0 %d)\">\n", extra);
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff\" stroke=\"#ccc\"/>\n",
            ML, MT, PW, PH);
}

static void close_svg(FILE *f) {
    fputs("</g></svg>\n", f);
}

/* Horizontal grid lines and labels of the y axis over [lo, hi]. */
static void y_axis(FILE *f, double lo, double hi, double step, px_unit unit) {
    for (int i = 0; lo + i * step <= hi + step * 1e-9; i++) {
        double v = lo + i * step;
        double y = MT + PH - (v - lo) / (hi - lo) * PH;
        char label[32];
        px_format_value(label, sizeof label, fabs(v) < step * 1e-9 ? 0 : v, unit);
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>", ML,
                ML + PW, y, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", ML - 4, y + 4,
                label);
    }
}

static void print_extremes(FILE *f, double ax, double ay, double bx, double by) {
    if (ax > bx) {
        double t = ax;
        ax = bx, bx = t, t = ay, ay = by, by = t;
    }
    fprintf(f, "%.1f,%.1f %.1f,%.1f ", ax, ay, bx, by);
}

/* The series as one polyline. A series longer than twice the plot's width
 * keeps, per pixel column, its lowest and highest point (in x order), so
 * spikes survive and the path stays small. */
static void polyline(FILE *f, const px_series *sr, int s, double x0, double x1, double y0,
                     double y1) {
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"",
            palette[s % N_COLORS], s >= N_COLORS ? " stroke-dasharray=\"6,3\"" : "");
    int dense = sr->n > 2 * PW, column = INT_MIN;
    double lo = 0, hi = 0, lo_x = 0, hi_x = 0; /* pixel rows: lo is the larger */
    for (int i = 0; i < sr->n; i++) {
        if (!isfinite(sr->x[i]) || !isfinite(sr->y[i])) continue;
        double px = ML + (sr->x[i] - x0) / (x1 - x0) * PW;
        double py = MT + PH - (sr->y[i] - y0) / (y1 - y0) * PH;
        if (!dense) {
            fprintf(f, "%.1f,%.1f ", px, py);
            continue;
        }
        int c = (int)floor(px);
        if (c != column) {
            if (column != INT_MIN) print_extremes(f, lo_x, lo, hi_x, hi);
            column = c;
            lo = hi = py, lo_x = hi_x = px;
        } else {
            if (py > lo) lo = py, lo_x = px;
            if (py < hi) hi = py, hi_x = px;
        }
    }
    if (dense && column != INT_MIN) print_extremes(f, lo_x, lo, hi_x, hi);
    fputs("\"/>\n", f);
}

int px_svg_lines(FILE *f, const char *xlabel, px_unit yunit, const px_series *series,
                 int n_series) {
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    int points = 0;
    for (int s = 0; s < n_series; s++)
        for (int i = 0; i < series[s].n; i++) {
            double x = series[s].x[i], y = series[s].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            x0 = fmin(x0, x), x1 = fmax(x1, x), y0 = fmin(y0, y), y1 = fmax(y1, y);
            points++;
        }
    const char *labels[64] = {0};
    int n_labels = n_series < 64 ? n_series : 64;
    for (int s = 0; s < n_labels; s++) labels[s] = series[s].label;
    open_svg(f, labels, n_labels);
    if (points == 0) {
        close_svg(f);
        return 0;
    }
    double ystep = round_range(&y0, &y1);
    if (!(x1 > x0)) x0 -= 1, x1 += 1;
    y_axis(f, y0, y1, ystep, yunit);
    double xstep = tick_step(x1 - x0);
    for (double v = ceil(x0 / xstep) * xstep; v <= x1 + xstep * 1e-9; v += xstep) {
        double x = ML + (v - x0) / (x1 - x0) * PW;
        char label[32];
        px_format_value(label, sizeof label, v, PX_UNIT_PLAIN);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>", x, MT + PH + 14,
                label);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", ML + PW / 2, H - 6);
    px_xml_escape(f, xlabel);
    fputs("</text>\n", f);
    for (int s = 0; s < n_series; s++) {
        const px_series *sr = &series[s];
        const char *color = palette[s % N_COLORS];
        if (sr->markers) {
            for (int i = 0; i < sr->n; i++) {
                if (!isfinite(sr->x[i]) || !isfinite(sr->y[i])) continue;
                fprintf(f,
                        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\" stroke=\"#fff\"/>",
                        ML + (sr->x[i] - x0) / (x1 - x0) * PW,
                        MT + PH - (sr->y[i] - y0) / (y1 - y0) * PH, color);
            }
            fputc('\n', f);
            continue;
        }
        polyline(f, sr, s, x0, x1, y0, y1);
    }
    close_svg(f);
    return points;
}

int px_svg_bars(FILE *f, px_unit yunit, const px_bars *b) {
    double top = 0;
    int values = 0;
    for (int g = 0; g < b->n_groups; g++) {
        double sum = 0;
        for (int s = 0; s < b->n_segments; s++) {
            double v = b->values[g * b->n_segments + s];
            if (!isfinite(v)) continue;
            values++;
            sum = b->stacked ? sum + v : fmax(sum, v);
        }
        top = fmax(top, sum);
    }
    open_svg(f, b->segment_labels, b->n_segments);
    if (values == 0) {
        close_svg(f);
        return 0;
    }
    double lo = 0, hi = top > 0 ? top : 1;
    double step = round_range(&lo, &hi);
    y_axis(f, lo, hi, step, yunit);
    double slot = (double)PW / b->n_groups;
    double width = slot * 0.7 / (b->stacked ? 1 : b->n_segments);
    int small = b->n_groups > 8;
    for (int g = 0; g < b->n_groups; g++) {
        double x = ML + g * slot + slot * 0.15, base = MT + PH;
        for (int s = 0; s < b->n_segments; s++) {
            double v = b->values[g * b->n_segments + s];
            if (!isfinite(v) || v <= 0) continue;
            double h = v / (hi - lo) * PH;
            double bx = b->stacked ? x : x + s * width;
            double by = b->stacked ? base - h : MT + PH - h;
            char label[32];
            px_format_value(label, sizeof label, v, yunit);
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
                    "<title>",
                    bx, by, width, h, palette[s % N_COLORS]);
            px_xml_escape(f, b->group_labels[g]);
            fputs(", ", f);
            px_xml_escape(f, b->segment_labels[s]);
            fprintf(f, ": %s</title></rect>", label);
            if (b->stacked) base -= h;
        }
        double cx = ML + g * slot + slot / 2;
        if (small)
            fprintf(f,
                    "<text x=\"%.1f\" y=\"%d\" font-size=\"9\" text-anchor=\"end\" "
                    "transform=\"rotate(-30 %.1f %d)\">",
                    cx, MT + PH + 12, cx, MT + PH + 12);
        else
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", cx, MT + PH + 14);
        px_xml_escape(f, b->group_labels[g]);
        fputs("</text>\n", f);
    }
    close_svg(f);
    return values;
}
