/* parallaxc data criteo: Criteo click logs (TSV: label, 13 integer
 * features, 26 categorical features as hex strings; any feature may be
 * empty) into a sharded dataset in DLRM's input layout:
 *   label  float32 []    0 or 1
 *   dense  float32 [13]  log(x + 1) in float32 (DLRM's transform; a missing
 *                        or negative value counts as 0)
 *   cat_K  int64 []      (K = 0..25) the row of table K: with --categories
 *                        hash (default) a missing value is row 0 and any
 *                        other value v row 1 + floor(h(v) * (rows - 1) / 2^64)
 *                        for a 64-bit hash h; with mod, v mod rows (missing
 *                        counts as 0), as DLRM's --max-ind-range.
 * The parser makes one pass over each line's bytes; malformed lines (a
 * field count other than 40, a label other than 0 or 1, a non-integer or
 * overflowing integer, a non-hex or longer than 64-bit category) are
 * reported with their file and line. */
#include "data_main.h"

#include "data_job.h"
#include "hash64.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_DENSE 13
#define N_CAT 26
#define N_FIELDS (1 + N_DENSE + N_CAT)
/* log(x + 1) of small counts, the common case, from a table. */
#define LOG_TABLE 4096

typedef struct criteo {
    uint64_t rows[N_CAT];
    int mod;   /* --categories mod */
    int idx32; /* --index-dtype int32 */
    float log1[LOG_TABLE];
    unsigned char hex[256]; /* a hex digit's value, 255 for any other byte */
} criteo;

static const char help[] =
    "usage: parallaxc data criteo IN.tsv[.gz]... -o DIR --table-rows N[,N...] [options]\n"
    "\n"
    "Converts Criteo click logs (tab-separated: label, 13 integer features, 26 hex\n"
    "categorical features; empty fields are missing values) into a sharded dataset in\n"
    "DLRM's input layout: label float32, dense float32 [13] = log(x + 1) (missing or\n"
    "negative: 0), cat_0 .. cat_25 int64 = the row of each of the 26 tables.\n"
    "  --table-rows N[,N...]  rows of the 26 tables (one number for all, or 26)\n"
    "  --categories hash|mod  hash (default): missing -> row 0, value v -> 1 + a 64-bit\n"
    "                         hash of v scaled to rows-1; mod: v mod rows (missing: 0),\n"
    "                         as DLRM's --max-ind-range\n"
    "  --index-dtype int64|int32  dtype of cat_K (default int64, as DLRM)\n";

static int parse_rows(criteo *c, const char *v, char *err, size_t cap) {
    int n = 0;
    const char *p = v;
    while (*p && n < N_CAT) {
        char num[32];
        size_t len = strcspn(p, ",");
        int64_t x;
        snprintf(num, sizeof num, "%.*s", (int)(len < 31 ? len : 31), p);
        if (len >= 31 || px_data_parse_count(num, 1, (int64_t)1 << 62, &x)) {
            snprintf(err, cap, "--table-rows: '%s' is not a row count of at least 1", num);
            return -1;
        }
        c->rows[n++] = (uint64_t)x;
        p += len + (p[len] == ',');
    }
    if (*p || (n != 1 && n != N_CAT)) {
        snprintf(err, cap, "--table-rows takes one count or %d, not '%s'", N_CAT, v);
        return -1;
    }
    for (int k = n; k < N_CAT; k++) c->rows[k] = c->rows[0];
    return 0;
}

#define ONES UINT64_C(0x0101010101010101)
#define HIGH UINT64_C(0x8080808080808080)

/* Eight hex digits (Criteo's categories all have eight), decoded at once:
 * 1 with their value in *v when the 8 bytes at p are all hex digits, else
 * 0. SWAR, on bytes below 0x80: x + (0x80 - c) sets a byte's high bit
 * exactly when x >= c, and no byte carries into the next. */
static int hex8(const char *p, uint64_t *v) {
    uint64_t x;
    memcpy(&x, p, 8); /* byte k is character k: little-endian */
    if (x & HIGH) return 0;
    uint64_t l = x | 0x20 * ONES; /* 'A'-'F' -> 'a'-'f'; digits keep their code */
    uint64_t digit = (l + (0x80 - 0x30) * ONES) & ~(l + (0x7f - 0x39) * ONES);
    uint64_t letter = (l + (0x80 - 0x61) * ONES) & ~(l + (0x7f - 0x66) * ONES);
    /* | 0x20 also moves 0x10-0x19 onto the digits: those must not count. */
    uint64_t printable = x + (0x80 - 0x20) * ONES;
    if (((digit | letter) & printable & HIGH) != HIGH) return 0;
    uint64_t n = (l & 0x0f * ONES) + ((letter & HIGH) >> 7) * 9; /* each byte its digit */
    /* Pairs of digits into bytes, bytes into 16-bit, 16 into 32: the first
     * character is the most significant digit. */
    n = ((n << 4) + (n >> 8)) & UINT64_C(0x00ff00ff00ff00ff);
    n = ((n << 8) + (n >> 16)) & UINT64_C(0x0000ffff0000ffff);
    *v = ((n << 16) + (n >> 32)) & UINT64_C(0xffffffff);
    return 1;
}

static int fields_of(const char *s) {
    int n = 1;
    for (; *s; s++) n += *s == '\t';
    return n;
}

/* Parses one line into the row; 0, or 1 with what is wrong in msg. */
static int parse_line(const criteo *c, const char *s, size_t len, float *label, float *dense,
                      unsigned char *const *cat, char *msg, size_t cap) {
    const char *p = s, *end = s + len; /* *end is '\0' */
    if ((*p != '0' && *p != '1') || (p[1] != '\t' && p[1] != '\0')) {
        if (fields_of(s) != N_FIELDS) goto count;
        snprintf(msg, cap, "the label is not 0 or 1");
        return 1;
    }
    *label = (float)(*p - '0');
    p++;
    for (int k = 0; k < N_DENSE; k++) {
        if (*p != '\t') goto count;
        p++;
        int neg = *p == '-';
        p += neg;
        uint64_t v = 0;
        const char *digits = p;
        while ((unsigned)(*p - '0') < 10) {
            if (v > (UINT64_C(0x7fffffffffffffff) - 9) / 10) {
                snprintf(msg, cap, "integer feature %d overflows 64 bits", k + 1);
                return 1;
            }
            v = v * 10 + (uint64_t)(*p++ - '0');
        }
        if ((*p != '\t' && *p != '\0') || (neg && p == digits)) {
            if (fields_of(s) != N_FIELDS) goto count;
            snprintf(msg, cap, "integer feature %d is not an integer", k + 1);
            return 1;
        }
        if (neg) v = 0;
        dense[k] = v < LOG_TABLE ? c->log1[v] : logf((float)v + 1.0f);
    }
    for (int k = 0; k < N_CAT; k++) {
        if (*p != '\t') goto count;
        p++;
        uint64_t v = 0;
        const char *digits = p;
        /* Eight digits at once when they are there (9 bytes: the digits and
         * the separator, at most the final '\0'); else a table, not
         * branches: hex digits are letters or digits at random, which no
         * branch predictor guesses. */
        if (end - p >= 8 && c->hex[(unsigned char)p[8]] >= 16 && hex8(p, &v))
            p += 8;
        else
            for (unsigned d; (d = c->hex[(unsigned char)*p]) < 16; p++) v = v << 4 | d;
        if (*p != '\t' && *p != '\0') {
            if (fields_of(s) != N_FIELDS) goto count;
            snprintf(msg, cap, "categorical feature %d is not hexadecimal", k + 1);
            return 1;
        }
        if (p - digits > 16) {
            snprintf(msg, cap, "categorical feature %d is longer than 64 bits", k + 1);
            return 1;
        }
        uint64_t rows = c->rows[k], row;
        if (c->mod)
            row = v % rows;
        else if (p == digits || rows == 1)
            row = 0;
        else /* the high half of hash * (rows - 1): uniform without a division */
            row =
                1 + (uint64_t)(((unsigned __int128)px_hash64_u64(PX_HASH64_INIT + (uint64_t)k, v) *
                                (rows - 1)) >>
                               64);
        if (c->idx32) {
            int32_t r32 = (int32_t)row;
            memcpy(cat[k], &r32, 4);
        } else {
            int64_t r64 = (int64_t)row;
            memcpy(cat[k], &r64, 8);
        }
    }
    if (*p == '\0') return 0;
count:
    snprintf(msg, cap, "%d fields, expected %d", fields_of(s), N_FIELDS);
    return 1;
}

static int parse_row(void *ctx, unsigned char *const *row, const char *s, size_t len, char *msg,
                     size_t cap) {
    return parse_line(ctx, s, len, (float *)(void *)row[0], (float *)(void *)row[1], row + 2, msg,
                      cap);
}

static int convert(px_data_job *j, criteo *c, char *err, size_t cap) {
    px_ds_input in[2 + N_CAT];
    memset(in, 0, sizeof in);
    snprintf(in[0].name, sizeof in[0].name, "label");
    in[0].dtype = 1;
    in[0].sample_bytes = 4;
    snprintf(in[1].name, sizeof in[1].name, "dense");
    in[1].dtype = 1;
    in[1].rank = 1;
    in[1].dims[0] = N_DENSE;
    in[1].sample_bytes = 4 * N_DENSE;
    for (int k = 0; k < N_CAT; k++) {
        snprintf(in[2 + k].name, sizeof in[2 + k].name, "cat_%d", k);
        in[2 + k].dtype = c->idx32 ? 6 : 7;
        in[2 + k].sample_bytes = c->idx32 ? 4 : 8;
    }
    /* Rows of every table fit the index dtype. */
    for (int k = 0; k < N_CAT; k++)
        if (c->idx32 && c->rows[k] > INT32_MAX) {
            snprintf(err, cap, "--index-dtype int32: table %d has more than 2^31-1 rows", k);
            return -1;
        }
    return px_data_job_run_lines(j, in, 2 + N_CAT, parse_row, c, 0, err, cap);
}

typedef struct criteo_cli {
    criteo c;
    int rows_given;
} criteo_cli;

static int criteo_flag(void *ctx, const char *flag, const char *v, char *err, size_t cap) {
    criteo_cli *k = ctx;
    if (!strcmp(flag, "--table-rows")) {
        k->rows_given = 1;
        return parse_rows(&k->c, v, err, cap);
    }
    if (!strcmp(flag, "--categories")) {
        if (strcmp(v, "hash") && strcmp(v, "mod")) {
            snprintf(err, cap, "--categories takes hash or mod, not '%s'", v);
            return -1;
        }
        k->c.mod = !strcmp(v, "mod");
        return 0;
    }
    if (strcmp(v, "int64") && strcmp(v, "int32")) {
        snprintf(err, cap, "--index-dtype takes int64 or int32, not '%s'", v);
        return -1;
    }
    k->c.idx32 = !strcmp(v, "int32");
    return 0;
}

static int criteo_check(void *ctx, px_data_job *j, char *err, size_t cap) {
    (void)j;
    if (((criteo_cli *)ctx)->rows_given) return 0;
    snprintf(err, cap, "--table-rows N[,N...] is required (rows of the 26 tables)");
    return -1;
}

static int criteo_convert(void *ctx, px_data_job *j, char *err, size_t cap) {
    return convert(j, &((criteo_cli *)ctx)->c, err, cap);
}

int px_data_criteo(int argc, char **argv) {
    static criteo_cli k;
    memset(&k, 0, sizeof k);
    for (int v = 0; v < LOG_TABLE; v++) k.c.log1[v] = logf((float)v + 1.0f);
    memset(k.c.hex, 255, sizeof k.c.hex);
    for (int d = 0; d < 16; d++) {
        k.c.hex[(unsigned char)"0123456789abcdef"[d]] = (unsigned char)d;
        k.c.hex[(unsigned char)"0123456789ABCDEF"[d]] = (unsigned char)d;
    }
    static const char *const valued[] = {"--table-rows", "--categories", "--index-dtype", NULL};
    const px_data_cmd cmd = {"criteo",    help,         valued,        NULL,
                             criteo_flag, criteo_check, criteo_convert};
    return px_data_run(&cmd, &k, argc, argv);
}
