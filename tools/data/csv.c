/* parallaxc data csv: delimited text (no quoting) whose columns --schema
 * groups into inputs. Each group takes COUNT consecutive columns (one
 * sample of shape [COUNT], or [] without a count); its type says how a
 * field is read: float32, float64, int32 and int64 as numbers (an empty
 * field is malformed), hashN as any text hashed to a row in [0, N) (int64),
 * skip as nothing (the columns are ignored). */
#include "data_main.h"

#include "data_job.h"
#include "hash64.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GROUPS 256

enum { T_F32, T_F64, T_I32, T_I64, T_HASH, T_SKIP };

typedef struct group {
    char name[PX_MANIFEST_NAME_MAX + 1];
    int type;
    int64_t count; /* columns; 0: one column, a scalar sample */
    uint64_t rows; /* hashN */
    int input;     /* index among the written inputs, -1 for skip */
} group;

typedef struct csv {
    group g[MAX_GROUPS];
    int n;
    int64_t columns;
    char delim;
    int header;
} csv;

static const char help[] =
    "usage: parallaxc data csv IN.csv... -o DIR --schema SPEC [options]\n"
    "\n"
    "Converts delimited text (no quoting) into a sharded dataset. SPEC lists the columns\n"
    "in order as NAME:TYPE[:COUNT] groups, comma-separated: COUNT consecutive columns\n"
    "(default 1) make input NAME, of sample shape [COUNT] ([] without a count). TYPE:\n"
    "  float32 float64 int32 int64   numbers (an empty field makes the line malformed)\n"
    "  hashN                         any text, hashed to a row in [0, N) (int64)\n"
    "  skip                          columns to ignore\n"
    "e.g. --schema label:float32,x:float32:13,user:hash100000,_:skip:2\n"
    "  --delimiter C          the field separator (default ','; 'tab' for a tab)\n"
    "  --header               skip the first line of each file\n";

static int parse_schema(csv *c, const char *spec, char *err, size_t cap) {
    char copy[8192];
    if (strlen(spec) >= sizeof copy) {
        snprintf(err, cap, "--schema is too long");
        return -1;
    }
    snprintf(copy, sizeof copy, "%s", spec);
    int inputs = 0;
    for (char *save, *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (c->n == MAX_GROUPS) {
            snprintf(err, cap, "--schema: more than %d groups", MAX_GROUPS);
            return -1;
        }
        group *g = &c->g[c->n];
        char *type = strchr(item, ':');
        char *count = type ? strchr(type + 1, ':') : NULL;
        if (!type) goto bad;
        *type++ = '\0';
        if (count) *count++ = '\0';
        if (snprintf(g->name, sizeof g->name, "%s", item) >= (int)sizeof g->name) goto bad;
        if (!strcmp(type, "float32"))
            g->type = T_F32;
        else if (!strcmp(type, "float64"))
            g->type = T_F64;
        else if (!strcmp(type, "int32"))
            g->type = T_I32;
        else if (!strcmp(type, "int64"))
            g->type = T_I64;
        else if (!strcmp(type, "skip"))
            g->type = T_SKIP;
        else if (!strncmp(type, "hash", 4)) {
            int64_t rows;
            if (px_data_parse_count(type + 4, 1, (int64_t)1 << 62, &rows)) goto bad;
            g->type = T_HASH;
            g->rows = (uint64_t)rows;
        } else {
            goto bad;
        }
        g->count = 0;
        if (count && px_data_parse_count(count, 1, 1 << 20, &g->count)) goto bad;
        if (g->type != T_SKIP && !px_manifest_input_name_ok(g->name)) {
            snprintf(err, cap, "--schema: '%s' cannot name an input (printable, no spaces)",
                     g->name);
            return -1;
        }
        for (int q = 0; q < c->n; q++)
            if (g->type != T_SKIP && c->g[q].type != T_SKIP && !strcmp(c->g[q].name, g->name)) {
                snprintf(err, cap, "--schema: input '%s' is named twice", g->name);
                return -1;
            }
        g->input = g->type == T_SKIP ? -1 : inputs++;
        c->columns += g->count ? g->count : 1;
        c->n++;
    }
    if (!inputs) {
        snprintf(err, cap, "--schema names no input");
        return -1;
    }
    return 0;
bad:
    snprintf(err, cap,
             "--schema: '%s' is not NAME:TYPE[:COUNT] with TYPE float32, float64, int32, "
             "int64, hashN or skip",
             spec);
    return -1;
}

static int64_t type_bytes(int type) {
    return type == T_F32 || type == T_I32 ? 4 : 8;
}

/* One field [s, e) of group g into dst; 0, or 1 with a message. */
static int put_field(const group *g, const char *s, const char *e, unsigned char *dst, char *msg,
                     size_t cap, int64_t column) {
    if (g->type == T_HASH) {
        uint64_t h = px_hash64(PX_HASH64_INIT, s, (size_t)(e - s));
        int64_t row = (int64_t)(((unsigned __int128)h * g->rows) >> 64);
        memcpy(dst, &row, 8);
        return 0;
    }
    char num[64];
    if (e == s || e - s >= (long)sizeof num) {
        snprintf(msg, cap, "column %lld (%s) is %s", (long long)column + 1, g->name,
                 e == s ? "empty" : "too long for a number");
        return 1;
    }
    memcpy(num, s, (size_t)(e - s));
    num[e - s] = '\0';
    char *end;
    errno = 0;
    if (g->type == T_F32 || g->type == T_F64) {
        double v = strtod(num, &end);
        if (*end || errno == ERANGE || (g->type == T_F32 && isfinite(v) && fabs(v) > 3.4028235e38))
            goto bad;
        if (g->type == T_F32) {
            float f = (float)v;
            memcpy(dst, &f, 4);
        } else {
            memcpy(dst, &v, 8);
        }
        return 0;
    }
    long long v = strtoll(num, &end, 10);
    if (*end || errno || (g->type == T_I32 && (v < INT32_MIN || v > INT32_MAX))) goto bad;
    if (g->type == T_I32) {
        int32_t i = (int32_t)v;
        memcpy(dst, &i, 4);
    } else {
        int64_t i = v;
        memcpy(dst, &i, 8);
    }
    return 0;
bad:
    snprintf(msg, cap, "column %lld (%s): '%s' is not a%s %s", (long long)column + 1, g->name, num,
             g->type == T_I32 || g->type == T_I64 ? "n" : "",
             g->type == T_F32   ? "float32"
             : g->type == T_F64 ? "float64"
             : g->type == T_I32 ? "int32"
                                : "int64");
    return 1;
}

static int parse_row(void *ctx, unsigned char *const *row, const char *s, size_t len, char *msg,
                     size_t cap) {
    const csv *c = ctx;
    const char *p = s, *end = s + len;
    int64_t fields = 1;
    for (const char *q = s; q < end; q++) fields += *q == c->delim;
    if (fields != c->columns) {
        snprintf(msg, cap, "%lld fields, expected %lld", (long long)fields, (long long)c->columns);
        return 1;
    }
    int64_t column = 0;
    for (int k = 0; k < c->n; k++) {
        const group *g = &c->g[k];
        int64_t n = g->count ? g->count : 1;
        unsigned char *dst = g->input >= 0 ? row[g->input] : NULL;
        for (int64_t i = 0; i < n; i++, column++) {
            const char *e = memchr(p, c->delim, (size_t)(end - p));
            if (!e) e = end;
            if (dst && put_field(g, p, e, dst + i * type_bytes(g->type), msg, cap, column))
                return 1;
            p = e + 1;
        }
    }
    return 0;
}

static int convert(px_data_job *j, csv *c, char *err, size_t cap) {
    px_ds_input in[MAX_GROUPS];
    int n_in = 0;
    memset(in, 0, sizeof in);
    for (int k = 0; k < c->n; k++) {
        const group *g = &c->g[k];
        if (g->input < 0) continue;
        px_ds_input *d = &in[n_in++];
        snprintf(d->name, sizeof d->name, "%s", g->name);
        d->dtype = g->type == T_F32 ? 1 : g->type == T_F64 ? 11 : g->type == T_I32 ? 6 : 7;
        d->rank = g->count ? 1 : 0;
        d->dims[0] = g->count;
        d->sample_bytes = type_bytes(g->type) * (g->count ? g->count : 1);
    }
    return px_data_job_run_lines(j, in, n_in, parse_row, c, c->header, err, cap);
}

typedef struct csv_cli {
    csv c;
    const char *schema;
} csv_cli;

static int csv_flag(void *ctx, const char *flag, const char *v, char *err, size_t cap) {
    csv_cli *k = ctx;
    if (!strcmp(flag, "--header")) {
        k->c.header = 1;
    } else if (!strcmp(flag, "--schema")) {
        k->schema = v;
    } else if (!strcmp(v, "tab")) {
        k->c.delim = '\t';
    } else if (strlen(v) == 1 && v[0] != '\n' && v[0] != '\r') {
        k->c.delim = v[0];
    } else {
        snprintf(err, cap, "--delimiter takes one character or 'tab', not '%s'", v);
        return -1;
    }
    return 0;
}

static int csv_check(void *ctx, px_data_job *j, char *err, size_t cap) {
    csv_cli *k = ctx;
    (void)j;
    if (!k->schema) {
        snprintf(err, cap, "--schema SPEC is required (see --help)");
        return -1;
    }
    return parse_schema(&k->c, k->schema, err, cap);
}

static int csv_convert(void *ctx, px_data_job *j, char *err, size_t cap) {
    return convert(j, &((csv_cli *)ctx)->c, err, cap);
}

int px_data_csv(int argc, char **argv) {
    static csv_cli k;
    memset(&k, 0, sizeof k);
    k.c.delim = ',';
    static const char *const valued[] = {"--schema", "--delimiter", NULL};
    static const char *const switches[] = {"--header", NULL};
    const px_data_cmd cmd = {"csv", help, valued, switches, csv_flag, csv_check, csv_convert};
    return px_data_run(&cmd, &k, argc, argv);
}
