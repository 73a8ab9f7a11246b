#include "csv_read.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Splits one line (without its newline) at commas into malloc'd fields. */
static int split(const char *line, size_t len, char ***fields, int *n) {
    int count = 1;
    for (size_t i = 0; i < len; i++) count += line[i] == ',';
    char **f = calloc((size_t)count, sizeof *f);
    if (!f) return -1;
    size_t start = 0;
    int k = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && line[i] != ',') continue;
        size_t l = i - start;
        if (l && line[start + l - 1] == '\r') l--;
        f[k] = malloc(l + 1);
        if (!f[k]) {
            for (int j = 0; j < k; j++) free(f[j]);
            free(f);
            return -1;
        }
        memcpy(f[k], line + start, l);
        f[k][l] = '\0';
        k++;
        start = i + 1;
    }
    *fields = f;
    *n = count;
    return 0;
}

static void free_fields(char **f, int n) {
    for (int i = 0; i < n; i++) free(f[i]);
    free(f);
}

int px_csv_parse(const char *text, size_t len, px_csv *out, char *err, size_t err_cap) {
    memset(out, 0, sizeof *out);
    const char *end = text + len, *p = text;
    const char *nl = len ? memchr(p, '\n', len) : NULL;
    if (!nl) {
        snprintf(err, err_cap, "no header line");
        return -1;
    }
    if (split(p, (size_t)(nl - p), &out->cols, &out->n_cols) != 0) goto oom;
    p = nl + 1;
    size_t lines = 0;
    for (const char *q = p; q < end; q++) lines += *q == '\n';
    out->cells = malloc((lines ? lines : 1) * (size_t)out->n_cols * sizeof *out->cells);
    if (!out->cells) goto oom;
    int line_no = 2;
    while (p < end) {
        nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) break; /* a line still being written */
        char **f;
        int n;
        if (split(p, (size_t)(nl - p), &f, &n) != 0) goto oom;
        if (n == 1 && !f[0][0]) { /* a blank line */
            free_fields(f, n);
            p = nl + 1;
            line_no++;
            continue;
        }
        if (n != out->n_cols) {
            snprintf(err, err_cap, "line %d has %d cells, the header names %d", line_no, n,
                     out->n_cols);
            free_fields(f, n);
            px_csv_free(out);
            return -1;
        }
        double *row = out->cells + (size_t)out->n_rows * (size_t)out->n_cols;
        for (int i = 0; i < n; i++) {
            char *stop;
            row[i] = f[i][0] ? strtod(f[i], &stop) : NAN;
            if (f[i][0] && *stop) {
                snprintf(err, err_cap, "line %d, column '%s': '%.40s' is not a number", line_no,
                         out->cols[i], f[i]);
                free_fields(f, n);
                px_csv_free(out);
                return -1;
            }
        }
        free_fields(f, n);
        out->n_rows++;
        p = nl + 1;
        line_no++;
    }
    return 0;
oom:
    snprintf(err, err_cap, "out of memory");
    px_csv_free(out);
    return -1;
}

int px_csv_col(const px_csv *c, const char *name) {
    for (int i = 0; i < c->n_cols; i++)
        if (strcmp(c->cols[i], name) == 0) return i;
    return -1;
}

double px_csv_at(const px_csv *c, int row, int col) {
    return c->cells[(size_t)row * (size_t)c->n_cols + (size_t)col];
}

void px_csv_free(px_csv *c) {
    if (c->cols) free_fields(c->cols, c->n_cols);
    free(c->cells);
    memset(c, 0, sizeof *c);
}
