/* The numeric CSV files a run writes (losses.csv, eval.csv, progress.csv):
 * a header line of column names, then one line of numbers per row. */
#ifndef PX_REPORT_CSV_READ_H
#define PX_REPORT_CSV_READ_H

#include <stddef.h>

typedef struct px_csv {
    int n_cols;
    char **cols; /* the header's names */
    int n_rows;
    double *cells; /* n_rows x n_cols, row-major; NaN where a cell is empty */
} px_csv;

/* Parses text (len bytes, no NUL needed). 0, or -1 with a message naming
 * the line in err (a row whose cell count differs from the header's, a
 * cell that is not a number). A last line cut short (a run still writing)
 * is left out, not an error. */
int px_csv_parse(const char *text, size_t len, px_csv *out, char *err, size_t err_cap);
/* The column named name, or -1. */
int px_csv_col(const px_csv *c, const char *name);
double px_csv_at(const px_csv *c, int row, int col);
void px_csv_free(px_csv *c);

#endif
