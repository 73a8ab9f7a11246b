/* Inline SVG charts for the run report: lines over steps and (stacked or
 * side-by-side) bars, with axes, ticks at round numbers and a legend. No
 * script, no external reference: the SVG renders offline in any browser. */
#ifndef PX_REPORT_SVG_CHART_H
#define PX_REPORT_SVG_CHART_H

#include <stdio.h>

typedef enum px_unit {
    PX_UNIT_PLAIN, /* 0.123, 45.6k */
    PX_UNIT_BYTES, /* 12.3 kB, 4.5 MB (powers of 1000) */
    PX_UNIT_MS,    /* 1.23 ms, 2.5 s */
} px_unit;

/* Writes v as the unit says into buf. */
void px_format_value(char *buf, size_t cap, double v, px_unit unit);
/* Writes s with &, <, >, " and ' escaped (HTML and SVG text). */
void px_xml_escape(FILE *f, const char *s);

typedef struct px_series {
    const char *label;
    const double *x, *y; /* n points; points with a non-finite coordinate are skipped */
    int n;
    int markers; /* draw the points as dots instead of joining them */
} px_series;

/* A line chart of the series (each its own colour, in order), x labelled
 * xlabel, y in unit. Returns the number of points drawn (finite ones). */
int px_svg_lines(FILE *f, const char *xlabel, px_unit yunit, const px_series *series, int n_series);

typedef struct px_bars {
    int n_groups, n_segments;
    const char *const *group_labels;   /* n_groups, along the x axis */
    const char *const *segment_labels; /* n_segments, in the legend */
    const double *values;              /* n_groups x n_segments, >= 0 */
    int stacked;                       /* 1: segments on top of each other; 0: side by side */
} px_bars;

/* A bar chart. Returns the number of values drawn (finite ones). */
int px_svg_bars(FILE *f, px_unit yunit, const px_bars *bars);

#endif
