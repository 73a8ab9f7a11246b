/* Option parsing for `parallaxc compile` and `parallaxc inspect`. Every flag
 * of design.md §3 is parsed and validated here, so mistakes are reported
 * before any model is read, with the flag and the value named. */
#include "cli.h"

#include "parallel_flags.h"
#include "weight_sparsity.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest dim a shape flag may bind, and the most ranks/partitions: far above
 * anything real, low enough that products of a few dims cannot overflow. */
#define MAX_DIM 2147483647LL
#define MAX_RANKS 65536
#define MAX_PARTITIONS 65536

enum { FOR_COMPILE = 1, FOR_INSPECT = 2, FOR_BOTH = 3 };

typedef enum flag_id {
    F_HELP,
    F_OUTPUT,
    F_BATCH,
    F_DIM,
    F_SHAPE,
    F_FREEZE,
    F_RANKS,
    F_RANKS_PER_NODE,
    F_STAGE,
    F_FORMAT,
    F_LOSS,
    F_OPTIMIZER,
    F_LR,
    F_MOMENTUM,
    F_BETA1,
    F_BETA2,
    F_EPSILON,
    F_WEIGHT_DECAY,
    F_COMM,
    F_PARTITIONS,
    F_INFER,
    F_EMIT_GRAPH,
    F_NESTEROV,
    F_BUCKET_MB,
    F_GRAPH,
    F_OUTPUTS,
    F_SPARSITY,
    F_SPARSITY_PATTERN,
    F_SPARSITY_INIT,
    F_SPARSITY_SEED,
    F_SPARSE_KERNELS,
    F_ALPHA,
    F_NO_DECAY,
    F_TP,
    F_PP,
    F_MICRO_BATCHES,
    F_COUNT
} flag_id;

typedef struct flag_spec {
    const char *name;  /* long form, with the dashes */
    const char *alias; /* short form or NULL */
    int takes_value;
    int repeatable;
    unsigned commands;
} flag_spec;

static const flag_spec flags[F_COUNT] = {
    [F_HELP] = {"--help", "-h", 0, 1, FOR_BOTH},
    [F_OUTPUT] = {"--output", "-o", 1, 0, FOR_BOTH},
    [F_BATCH] = {"--batch", NULL, 1, 0, FOR_BOTH},
    [F_DIM] = {"--dim", NULL, 1, 1, FOR_BOTH},
    [F_SHAPE] = {"--shape", NULL, 1, 1, FOR_BOTH},
    [F_FREEZE] = {"--freeze", NULL, 1, 1, FOR_BOTH},
    [F_RANKS] = {"--ranks", NULL, 1, 0, FOR_BOTH},
    [F_STAGE] = {"--stage", NULL, 1, 0, FOR_INSPECT},
    [F_RANKS_PER_NODE] = {"--ranks-per-node", NULL, 1, 0, FOR_INSPECT},
    [F_FORMAT] = {"--format", NULL, 1, 0, FOR_INSPECT},
    [F_LOSS] = {"--loss", NULL, 1, 0, FOR_BOTH},
    [F_OPTIMIZER] = {"--optimizer", NULL, 1, 0, FOR_BOTH},
    [F_LR] = {"--lr", NULL, 1, 0, FOR_BOTH},
    [F_MOMENTUM] = {"--momentum", NULL, 1, 0, FOR_BOTH},
    [F_BETA1] = {"--beta1", NULL, 1, 0, FOR_BOTH},
    [F_BETA2] = {"--beta2", NULL, 1, 0, FOR_BOTH},
    [F_EPSILON] = {"--epsilon", NULL, 1, 0, FOR_BOTH},
    [F_WEIGHT_DECAY] = {"--weight-decay", NULL, 1, 0, FOR_BOTH},
    [F_COMM] = {"--comm", NULL, 1, 0, FOR_BOTH},
    [F_PARTITIONS] = {"--partitions", NULL, 1, 0, FOR_BOTH},
    [F_INFER] = {"--infer", NULL, 0, 0, FOR_COMPILE},
    [F_EMIT_GRAPH] = {"--emit-graph", NULL, 1, 0, FOR_COMPILE},
    [F_NESTEROV] = {"--nesterov", NULL, 0, 0, FOR_BOTH},
    [F_BUCKET_MB] = {"--bucket-mb", NULL, 1, 0, FOR_BOTH},
    [F_GRAPH] = {"--graph", NULL, 0, 0, FOR_INSPECT},
    [F_OUTPUTS] = {"--outputs", NULL, 1, 1, FOR_COMPILE},
    [F_SPARSITY] = {"--sparsity", NULL, 1, 1, FOR_BOTH},
    [F_SPARSITY_PATTERN] = {"--sparsity-pattern", NULL, 1, 0, FOR_BOTH},
    [F_SPARSITY_INIT] = {"--sparsity-init", NULL, 1, 0, FOR_BOTH},
    [F_SPARSITY_SEED] = {"--sparsity-seed", NULL, 1, 0, FOR_BOTH},
    [F_SPARSE_KERNELS] = {"--sparse-kernels", NULL, 1, 0, FOR_BOTH},
    [F_ALPHA] = {"--alpha", NULL, 1, 0, FOR_BOTH},
    [F_NO_DECAY] = {"--no-decay", NULL, 1, 1, FOR_BOTH},
    [F_TP] = {"--tp", NULL, 1, 0, FOR_BOTH},
    [F_PP] = {"--pp", NULL, 1, 0, FOR_BOTH},
    [F_MICRO_BATCHES] = {"--micro-batches", NULL, 1, 0, FOR_BOTH},
};

static const char *const stage_names[] = {"imported", "folded", "trained", "parallel"};
static const char *const format_names[] = {"text", "dot", "json", "onnx"};
static const char *const optimizer_names[] = {PX_OPTIM_KINDS(PX_ENUM_NAME)};
static const char *const comm_names[] = {PX_COMM_MODES(PX_ENUM_NAME)};
static const char *const sparsity_init_names[] = {PX_SPARSITY_INITS(PX_ENUM_NAME)};
static const char *const sparse_kernel_names[] = {"auto", "sparse", "dense"};

#define COUNT_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

const char *px_stage_name(px_stage s) {
    return (int)s >= 0 && (int)s < COUNT_OF(stage_names) ? stage_names[s] : "?";
}
const char *px_format_name(px_format f) {
    return (int)f >= 0 && (int)f < COUNT_OF(format_names) ? format_names[f] : "?";
}

/* ---- parser state ---- */

typedef struct parser {
    px_cli *cli;
    char *err;
    size_t err_cap;
    int seen[F_COUNT];
} parser;

__attribute__((format(printf, 2, 3))) static int fail(parser *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, p->err_cap, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *command_name(px_command c) {
    return c == PX_CMD_COMPILE ? "compile" : c == PX_CMD_INSPECT ? "inspect" : "parallaxc";
}

static int lookup_name(const char *const *names, int n, const char *s) {
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0) return i;
    return -1;
}

static void join_names(char *buf, size_t cap, const char *const *names, int n, const char *sep) {
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, cap - len, "%s%s", i ? sep : "", names[i]);
    }
}

/* Picks one of names for flag; the error lists the choices. */
static int parse_choice(parser *p, const char *flag, const char *value, const char *const *names,
                        int n, int *out) {
    int i = lookup_name(names, n, value);
    if (i < 0) {
        char list[128];
        join_names(list, sizeof list, names, n, "|");
        return fail(p, "%s: unknown value '%s' (expected %s)", flag, value, list);
    }
    *out = i;
    return 0;
}

/* A decimal integer in [lo, hi]; no signs, spaces or suffixes. */
static int parse_int_range(parser *p, const char *flag, const char *text, long long lo,
                           long long hi, int64_t *out) {
    const char *s = text;
    if (*s == '-' && s[1] >= '0' && s[1] <= '9') s++; /* reported as out of range below */
    if (!*s) return fail(p, "%s: empty value (expected an integer in %lld..%lld)", flag, lo, hi);
    for (const char *c = s; *c; c++)
        if (*c < '0' || *c > '9')
            return fail(p, "%s: '%s' is not an integer (expected %lld..%lld)", flag, text, lo, hi);
    errno = 0;
    long long v = strtoll(text, NULL, 10);
    if (errno == ERANGE || v < lo || v > hi)
        return fail(p, "%s: '%s' is out of range (expected %lld..%lld)", flag, text, lo, hi);
    *out = v;
    return 0;
}

/* A finite decimal number; lo_open/hi_open make the bounds exclusive. */
static int parse_real(parser *p, const char *flag, const char *text, double lo, int lo_open,
                      double hi, int hi_open, double *out) {
    char range[96];
    snprintf(range, sizeof range, "%s%g, %g%s", lo_open ? "(" : "[", lo, hi, hi_open ? ")" : "]");
    if (!*text) return fail(p, "%s: empty value (expected a number in %s)", flag, range);
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (*end || end == text || !isfinite(v) || errno == ERANGE || text[0] == ' ' || text[0] == '\t')
        return fail(p, "%s: '%s' is not a finite number (expected %s)", flag, text, range);
    if (v < lo || (lo_open && v == lo) || v > hi || (hi_open && v == hi))
        return fail(p, "%s: %s is out of range (expected %s)", flag, text, range);
    *out = v;
    return 0;
}

/* Splits "NAME=VALUE" at the last '=' (names may contain '=', values never
 * do). Returns a malloc'd copy of NAME, or NULL with an error. */
static char *split_binding(parser *p, const char *flag, const char *text, const char *syntax,
                           const char **value) {
    const char *eq = strrchr(text, '=');
    if (!eq || eq == text) {
        fail(p, "%s: expected %s, got '%s'", flag, syntax, text);
        return NULL;
    }
    char *name = strndup(text, (size_t)(eq - text));
    if (!name) fail(p, "out of memory");
    *value = eq + 1;
    return name;
}

static int add_dim(parser *p, const char *text) {
    px_bindings *b = &p->cli->bindings;
    const char *value;
    char *name = split_binding(p, "--dim", text, "NAME=N", &value);
    if (!name) return -1;
    for (int i = 0; i < b->n_dims; i++)
        if (strcmp(b->dims[i].name, name) == 0) {
            fail(p, "--dim: '%s' is bound twice", name);
            free(name);
            return -1;
        }
    int64_t v;
    char flag[64];
    snprintf(flag, sizeof flag, "--dim %.40s", name);
    if (parse_int_range(p, flag, value, 1, MAX_DIM, &v) != 0) {
        free(name);
        return -1;
    }
    px_dim_binding *grown = realloc(b->dims, sizeof *grown * (size_t)(b->n_dims + 1));
    if (!grown) {
        free(name);
        return fail(p, "out of memory");
    }
    b->dims = grown;
    b->dims[b->n_dims].name = name;
    b->dims[b->n_dims].value = v;
    b->n_dims++;
    return 0;
}

static int add_shape(parser *p, const char *text) {
    px_bindings *b = &p->cli->bindings;
    const char *value;
    char *name = split_binding(p, "--shape", text, "INPUT=AxBxC", &value);
    if (!name) return -1;
    px_shape shape = px_shape_scalar();
    int rc = -1;
    for (int i = 0; i < b->n_shapes; i++)
        if (strcmp(b->shapes[i].input, name) == 0) {
            fail(p, "--shape: input '%s' is given twice", name);
            goto cleanup;
        }
    if (!*value) {
        fail(p, "--shape %s: no dims after '=' (expected INPUT=AxBxC, e.g. %s=32x128)", name, name);
        goto cleanup;
    }
    const char *s = value;
    for (;;) {
        const char *x = strchr(s, 'x');
        size_t len = x ? (size_t)(x - s) : strlen(s);
        char dim[32];
        if (len == 0 || len >= sizeof dim) {
            fail(p,
                 "--shape %s: bad dims '%s' (expected positive integers joined by 'x', "
                 "e.g. 32x128)",
                 name, value);
            goto cleanup;
        }
        if (shape.rank == PX_MAX_RANK) {
            fail(p, "--shape %s: more than %d dims in '%s'", name, PX_MAX_RANK, value);
            goto cleanup;
        }
        memcpy(dim, s, len);
        dim[len] = '\0';
        int64_t v;
        char flag[64];
        snprintf(flag, sizeof flag, "--shape %.40s", name);
        if (parse_int_range(p, flag, dim, 1, MAX_DIM, &v) != 0) goto cleanup;
        shape.dims[shape.rank] = v;
        shape.sym_id[shape.rank] = 0;
        shape.rank++;
        if (!x) break;
        s = x + 1;
    }
    px_shape_binding *grown = realloc(b->shapes, sizeof *grown * (size_t)(b->n_shapes + 1));
    if (!grown) {
        fail(p, "out of memory");
        goto cleanup;
    }
    b->shapes = grown;
    b->shapes[b->n_shapes].input = name;
    b->shapes[b->n_shapes].shape = shape;
    b->n_shapes++;
    name = NULL;
    rc = 0;
cleanup:
    free(name);
    return rc;
}

/* NAME[,NAME...] of flag appended to *list. */
static int add_names(parser *p, const char *flag, const char *text, int *n, char ***list) {
    const char *s = text;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (len == 0) return fail(p, "%s: empty name in '%s'", flag, text);
        char **grown = realloc(*list, sizeof(char *) * (size_t)(*n + 1));
        if (!grown) return fail(p, "out of memory");
        *list = grown;
        grown[*n] = strndup(s, len);
        if (!grown[*n]) return fail(p, "out of memory");
        (*n)++;
        if (!comma) return 0;
        s = comma + 1;
    }
}

/* --sparsity NAME=F[,NAME=F...] or auto:F (repeatable; a later value for a
 * name replaces an earlier one). */
static int add_sparsity(parser *p, const char *text) {
    px_sparsity_config *sc = &p->cli->sparsity;
    const char *s = text;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char *item = strndup(s, len);
        if (!item) return fail(p, "out of memory");
        int rc = 0;
        char flag[160];
        double f;
        if (!strncmp(item, "auto:", 5)) {
            rc = parse_real(p, "--sparsity auto", item + 5, 0, 0, 1, 1, &f);
            sc->has_auto = 1;
            sc->auto_sparsity = f;
        } else {
            const char *value;
            char *name = split_binding(p, "--sparsity", item, "NAME=F or auto:F", &value);
            if (!name) {
                free(item);
                return -1;
            }
            snprintf(flag, sizeof flag, "--sparsity %.120s", name);
            rc = parse_real(p, flag, value, 0, 0, 1, 1, &f);
            px_sparsity_target *grown =
                rc ? NULL : realloc(sc->targets, sizeof *grown * (size_t)(sc->n_targets + 1));
            if (!rc && !grown) rc = fail(p, "out of memory");
            if (rc) {
                free(name);
            } else {
                sc->targets = grown;
                sc->targets[sc->n_targets++] = (px_sparsity_target){name, f};
            }
        }
        free(item);
        if (rc) return -1;
        if (!comma) return 0;
        s = comma + 1;
    }
}

/* --sparsity-pattern unstructured | block:AxB (block:B: BxB) | N:M. */
static int parse_pattern(parser *p, const char *v) {
    px_sparsity_config *sc = &p->cli->sparsity;
    const char *flag = "--sparsity-pattern";
    int64_t a, b;
    if (!strcmp(v, "unstructured")) {
        sc->pattern = PX_PATTERN_UNSTRUCTURED;
        return 0;
    }
    char num[2][32];
    if (!strncmp(v, "block:", 6)) {
        const char *x = strchr(v + 6, 'x');
        size_t la = x ? (size_t)(x - (v + 6)) : strlen(v + 6);
        if (la == 0 || la >= sizeof num[0] || (x && strlen(x + 1) >= sizeof num[1]))
            return fail(p, "%s: '%s' is not block:AxB (e.g. block:4x4)", flag, v);
        snprintf(num[0], sizeof num[0], "%.*s", (int)la, v + 6);
        snprintf(num[1], sizeof num[1], "%s", x ? x + 1 : num[0]);
        if (parse_int_range(p, flag, num[0], 1, 65536, &a) ||
            parse_int_range(p, flag, num[1], 1, 65536, &b))
            return -1;
        sc->pattern = PX_PATTERN_BLOCK;
    } else {
        const char *colon = strchr(v, ':');
        if (!colon || colon == v || (size_t)(colon - v) >= sizeof num[0] ||
            strlen(colon + 1) >= sizeof num[1])
            return fail(p, "%s: unknown pattern '%s' (expected unstructured, block:AxB or N:M)",
                        flag, v);
        snprintf(num[0], sizeof num[0], "%.*s", (int)(colon - v), v);
        snprintf(num[1], sizeof num[1], "%s", colon + 1);
        if (parse_int_range(p, flag, num[0], 1, 65536, &a) ||
            parse_int_range(p, flag, num[1], 2, 65536, &b))
            return -1;
        if (a >= b)
            return fail(p, "%s: %s keeps %lld of every %lld entries; N must be below M", flag, v,
                        (long long)a, (long long)b);
        sc->pattern = PX_PATTERN_NM;
    }
    sc->pa = a;
    sc->pb = b;
    return 0;
}

/* --emit-graph's format comes from the file extension. */
static int parse_emit_graph(parser *p, const char *path) {
    static const char *const ext[] = {".txt", ".dot", ".json", ".onnx"};
    static const px_format fmt[] = {PX_FORMAT_TEXT, PX_FORMAT_DOT, PX_FORMAT_JSON, PX_FORMAT_ONNX};
    size_t n = strlen(path);
    for (int i = 0; i < COUNT_OF(ext); i++) {
        size_t e = strlen(ext[i]);
        if (n > e && strcmp(path + n - e, ext[i]) == 0) {
            p->cli->emit_graph = path;
            p->cli->emit_format = fmt[i];
            return 0;
        }
    }
    return fail(p,
                "--emit-graph: cannot tell the format of '%s' (name it .onnx, .dot, .json "
                "or .txt)",
                path);
}

static int parse_stage(parser *p, const char *value) {
    int i = lookup_name(stage_names, COUNT_OF(stage_names), value);
    char list[64];
    join_names(list, sizeof list, stage_names, COUNT_OF(stage_names), ", ");
    if (i >= 0) {
        p->cli->stage = (px_stage)i;
        p->cli->stage_given = 1;
        return 0;
    }
    return fail(p, "--stage: unknown stage '%s' (known stages: %s)", value, list);
}

static int apply_flag(parser *p, flag_id id, const char *v) {
    px_cli *c = p->cli;
    const char *name = flags[id].name;
    int64_t n;
    int choice = 0; /* set by parse_choice when it returns 0; -O3 cannot see that */
    switch (id) {
    case F_HELP: c->help = 1; return 0;
    case F_OUTPUT:
        if (!*v) return fail(p, "-o: empty file name");
        c->output = v;
        return 0;
    case F_BATCH:
        if (parse_int_range(p, name, v, 1, MAX_DIM, &n) != 0) return -1;
        c->bindings.batch = n;
        c->any_shape_flag = 1;
        return 0;
    case F_DIM: c->any_shape_flag = 1; return add_dim(p, v);
    case F_SHAPE: c->any_shape_flag = 1; return add_shape(p, v);
    case F_FREEZE: return add_names(p, "--freeze", v, &p->cli->n_freeze, &p->cli->freeze);
    case F_OUTPUTS: return add_names(p, "--outputs", v, &p->cli->n_outputs, &p->cli->outputs);
    case F_RANKS:
        if (parse_int_range(p, name, v, 1, MAX_RANKS, &n) != 0) return -1;
        c->ranks = (int)n;
        return 0;
    case F_TP:
        if (parse_int_range(p, name, v, 1, MAX_RANKS, &n) != 0) return -1;
        c->tp = (int)n;
        return 0;
    case F_PP:
        if (parse_int_range(p, name, v, 1, MAX_RANKS, &n) != 0) return -1;
        c->pp = (int)n;
        return 0;
    case F_MICRO_BATCHES:
        if (parse_int_range(p, name, v, 1, MAX_DIM, &n) != 0) return -1;
        c->micro_batches = (int)n;
        return 0;
    case F_RANKS_PER_NODE:
        if (parse_int_range(p, name, v, 1, MAX_RANKS, &n) != 0) return -1;
        c->ranks_per_node = (int)n;
        return 0;
    case F_STAGE: return parse_stage(p, v);
    case F_FORMAT:
        if (parse_choice(p, name, v, format_names, COUNT_OF(format_names), &choice) != 0) return -1;
        c->format = (px_format)choice;
        return 0;
    case F_LOSS:
        if (!*v) return fail(p, "--loss: empty output name");
        c->loss = v;
        return 0;
    case F_OPTIMIZER:
        if (parse_choice(p, name, v, optimizer_names, COUNT_OF(optimizer_names), &choice) != 0)
            return -1;
        c->optimizer = (px_optim_kind)choice;
        return 0;
    case F_LR: return parse_real(p, name, v, 0, 1, 1e6, 0, &c->lr);
    case F_MOMENTUM: return parse_real(p, name, v, 0, 0, 1, 1, &c->momentum);
    case F_BETA1: return parse_real(p, name, v, 0, 0, 1, 1, &c->beta1);
    case F_BETA2: return parse_real(p, name, v, 0, 0, 1, 1, &c->beta2);
    case F_EPSILON: return parse_real(p, name, v, 0, 1, 1, 0, &c->epsilon);
    case F_WEIGHT_DECAY: return parse_real(p, name, v, 0, 0, 1e6, 0, &c->weight_decay);
    case F_ALPHA: return parse_real(p, name, v, 0, 0, 1, 1, &c->alpha);
    case F_NO_DECAY: return add_names(p, "--no-decay", v, &p->cli->n_no_decay, &p->cli->no_decay);
    case F_COMM:
        if (parse_choice(p, name, v, comm_names, COUNT_OF(comm_names), &choice) != 0) return -1;
        c->comm = (px_comm_mode)choice;
        return 0;
    case F_PARTITIONS:
        if (strcmp(v, "auto") == 0) {
            c->partitions = 0;
            return 0;
        }
        if (parse_int_range(p, name, v, 1, MAX_PARTITIONS, &n) != 0) {
            /* Mention the other accepted spelling. */
            size_t len = strlen(p->err);
            snprintf(p->err + len, p->err_cap - len, " or 'auto'");
            return -1;
        }
        c->partitions = (int)n;
        return 0;
    case F_INFER: c->infer = 1; return 0;
    case F_EMIT_GRAPH: return parse_emit_graph(p, v);
    case F_NESTEROV: c->nesterov = 1; return 0;
    case F_BUCKET_MB: return parse_real(p, name, v, 0, 1, 1e6, 0, &c->bucket_mb);
    case F_GRAPH: c->show_graph = 1; return 0;
    case F_SPARSITY: return add_sparsity(p, v);
    case F_SPARSITY_PATTERN: return parse_pattern(p, v);
    case F_SPARSITY_INIT:
        if (parse_choice(p, name, v, sparsity_init_names, COUNT_OF(sparsity_init_names), &choice))
            return -1;
        c->sparsity.init = (px_sparsity_init)choice;
        return 0;
    case F_SPARSITY_SEED:
        if (parse_int_range(p, name, v, 0, INT64_MAX, &n) != 0) return -1;
        c->sparsity.seed = (uint64_t)n;
        return 0;
    case F_SPARSE_KERNELS:
        if (parse_choice(p, name, v, sparse_kernel_names, COUNT_OF(sparse_kernel_names), &choice))
            return -1;
        c->sparsity.kernels = (px_sparse_kernels)choice;
        return 0;
    case F_COUNT: break;
    }
    return fail(p, "internal error: unhandled flag %s", name);
}

/* Finds a flag by its spelling; *inline_value is set for "--flag=value". */
static int find_flag(const char *arg, const char **inline_value) {
    *inline_value = NULL;
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    for (int i = 0; i < F_COUNT; i++) {
        const char *names[2] = {flags[i].name, flags[i].alias};
        for (int k = 0; k < 2; k++)
            if (names[k] && strlen(names[k]) == len && strncmp(arg, names[k], len) == 0) {
                if (eq) *inline_value = eq + 1;
                return i;
            }
    }
    return -1;
}

/* Cross-flag rules, checked once everything is parsed. */
/* --pp S --micro-batches M: each needs the other; the batch (the batch of
 * one pipeline group) must split into M equal micro-batches. */
static int validate_pp(parser *p) {
    px_cli *c = p->cli;
    if (p->seen[F_MICRO_BATCHES] && c->pp <= 1)
        return fail(p, "--micro-batches splits the batch of a pipeline (--pp S, S >= 2); it "
                       "needs --pp");
    if (c->pp <= 1) return 0;
    if (!p->seen[F_MICRO_BATCHES])
        return fail(p,
                    "--pp %d needs --micro-batches M (the micro-batches each step's batch is "
                    "split into)",
                    c->pp);
    if (c->bindings.batch > 0 && c->bindings.batch % c->micro_batches != 0)
        return fail(p, "--micro-batches %d does not divide the batch %lld", c->micro_batches,
                    (long long)c->bindings.batch);
    return 0;
}

/* --tp, --pp and --micro-batches against each other, --comm, --sparsity
 * and --ranks (parallel_flags.c, shared with plan --layouts). inspect
 * builds the program compile would: the same rules. */
static int validate_parallel(parser *p) {
    px_cli *c = p->cli;
    char why[256];
    if (validate_pp(p) != 0) return -1;
    if (px_check_parallel_flags(c->tp, c->pp, c->comm, px_sparsity_requested(&c->sparsity), why,
                                sizeof why) != 0)
        return fail(p, "%s", why);
    /* inspect predicts for one group (or pipeline) unless told otherwise:
     * fewer ranks cannot run the program */
    if (!p->seen[F_RANKS] && c->cmd == PX_CMD_INSPECT) c->ranks = c->tp * c->pp;
    if (p->seen[F_RANKS] && px_check_parallel_ranks(c->tp, c->pp, c->ranks, why, sizeof why) != 0)
        return fail(p, "%s", why);
    return 0;
}

static int validate(parser *p) {
    px_cli *c = p->cli;
    if (c->help) return 0;
    if (!c->model)
        return fail(p, "%s: missing MODEL.onnx (see 'parallaxc %s --help')", command_name(c->cmd),
                    command_name(c->cmd));
    static const flag_id need_sparsity[] = {F_SPARSITY_PATTERN, F_SPARSITY_INIT, F_SPARSITY_SEED,
                                            F_SPARSE_KERNELS};
    for (int i = 0; i < COUNT_OF(need_sparsity); i++)
        if (p->seen[need_sparsity[i]] && !p->seen[F_SPARSITY])
            return fail(p,
                        "%s shapes the masks of --sparsity; it needs --sparsity NAME=F or "
                        "auto:F",
                        flags[need_sparsity[i]].name);
    if (c->cmd == PX_CMD_INSPECT) {
        if (validate_parallel(p) != 0) return -1;
        if (!c->stage_given) c->stage = c->any_shape_flag ? PX_STAGE_FOLDED : PX_STAGE_IMPORTED;
        return 0;
    }
    if (!c->output) return fail(p, "compile: missing -o PROGRAM (the executable to write)");
    if (p->seen[F_OUTPUTS] && !c->infer)
        return fail(p, "--outputs selects what an inference program computes; it needs --infer");
    if (c->infer) {
        static const flag_id training_only[] = {
            F_LOSS,   F_OPTIMIZER, F_LR,           F_MOMENTUM, F_BETA1,        F_BETA2,
            F_ALPHA,  F_EPSILON,   F_WEIGHT_DECAY, F_COMM,     F_NO_DECAY,     F_PARTITIONS,
            F_FREEZE, F_SPARSITY,  F_TP,           F_PP,       F_MICRO_BATCHES};
        for (int i = 0; i < COUNT_OF(training_only); i++)
            if (p->seen[training_only[i]])
                return fail(p, "%s applies to training; it cannot be combined with --infer",
                            flags[training_only[i]].name);
        return 0;
    }
    /* Hyper-parameters that the chosen optimizer would silently ignore. */
    if (p->seen[F_MOMENTUM] && c->optimizer != PX_OPTIM_MOMENTUM)
        return fail(p, "--momentum applies to --optimizer momentum, not '%s'",
                    px_optim_kind_name(c->optimizer));
    if (p->seen[F_NESTEROV] && c->optimizer != PX_OPTIM_MOMENTUM)
        return fail(p, "--nesterov applies to --optimizer momentum, not '%s'",
                    px_optim_kind_name(c->optimizer));
    int adam_like = c->optimizer == PX_OPTIM_ADAM || c->optimizer == PX_OPTIM_ADAMW;
    if ((p->seen[F_BETA1] || p->seen[F_BETA2]) && !adam_like)
        return fail(p, "%s applies to --optimizer adam or adamw, not '%s'",
                    p->seen[F_BETA1] ? "--beta1" : "--beta2", px_optim_kind_name(c->optimizer));
    if (p->seen[F_EPSILON] && !adam_like && c->optimizer != PX_OPTIM_ADAGRAD &&
        c->optimizer != PX_OPTIM_RMSPROP)
        return fail(p, "--epsilon applies to --optimizer adam, adamw, adagrad or rmsprop, not '%s'",
                    px_optim_kind_name(c->optimizer));
    if (p->seen[F_ALPHA] && c->optimizer != PX_OPTIM_RMSPROP)
        return fail(p, "--alpha applies to --optimizer rmsprop, not '%s'",
                    px_optim_kind_name(c->optimizer));
    /* torch.optim.AdamW's default decay */
    if (!p->seen[F_WEIGHT_DECAY] && c->optimizer == PX_OPTIM_ADAMW) c->weight_decay = 0.01;
    if (p->seen[F_NO_DECAY] && c->weight_decay == 0)
        return fail(p, "--no-decay excludes variables from weight decay, but there is none: give "
                       "--weight-decay F");
    if (p->seen[F_PARTITIONS] && c->comm == PX_COMM_MODE_ALLREDUCE)
        return fail(p, "--partitions applies to parameter-server variables; --comm allreduce "
                       "has none");
    if (!p->seen[F_EPSILON]) c->epsilon = c->optimizer == PX_OPTIM_ADAGRAD ? 1e-10 : 1e-8;
    return validate_parallel(p);
}

static void set_defaults(px_cli *c) {
    memset(c, 0, sizeof *c);
    c->ranks = 1;
    c->tp = 1;
    c->pp = 1;
    c->micro_batches = 1;
    c->format = PX_FORMAT_TEXT;
    c->optimizer = PX_OPTIM_SGD;
    c->lr = 0.01;
    c->momentum = 0.9;
    c->beta1 = 0.9;
    c->beta2 = 0.999;
    c->epsilon = 1e-8;
    c->weight_decay = 0;
    c->alpha = 0.99;
    c->comm = PX_COMM_MODE_HYBRID;
    c->partitions = 0; /* auto, as in the paper: timed during the first steps */
    c->bucket_mb = 4;
    c->sparsity.seed = 1;
}

int px_cli_parse(int argc, char **argv, px_cli *cli, char *err, size_t err_cap) {
    parser p = {.cli = cli, .err = err, .err_cap = err_cap};
    set_defaults(cli);
    if (err_cap) err[0] = '\0';
    if (argc < 2) return fail(&p, "no command given (expected 'compile', 'inspect' or 'report')");

    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        cli->help = 1;
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        cli->version = 1;
        return 0;
    }
    if (strcmp(cmd, "compile") == 0)
        cli->cmd = PX_CMD_COMPILE;
    else if (strcmp(cmd, "inspect") == 0)
        cli->cmd = PX_CMD_INSPECT;
    else if (cmd[0] == '-')
        return fail(
            &p,
            "unknown option '%s' (expected a command: 'compile', 'inspect', 'report' or 'data')",
            cmd);
    else
        return fail(&p, "unknown command '%s' (expected 'compile', 'inspect', 'report' or 'data')",
                    cmd);
    unsigned mask = cli->cmd == PX_CMD_COMPILE ? FOR_COMPILE : FOR_INSPECT;

    int options_done = 0;
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        if (options_done || arg[0] != '-' || strcmp(arg, "-") == 0) {
            if (cli->model)
                return fail(&p, "%s: two model files given: '%s' and '%s'", command_name(cli->cmd),
                            cli->model, arg);
            if (!*arg) return fail(&p, "%s: empty model file name", command_name(cli->cmd));
            cli->model = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            options_done = 1;
            continue;
        }
        const char *value;
        int id = find_flag(arg, &value);
        if (id < 0) return fail(&p, "%s: unknown option '%s'", command_name(cli->cmd), arg);
        const flag_spec *f = &flags[id];
        if (!(f->commands & mask))
            return fail(&p, "%s is a flag of 'parallaxc %s', not of '%s'", f->name,
                        f->commands == FOR_COMPILE ? "compile" : "inspect", command_name(cli->cmd));
        if (id == F_HELP) {
            cli->help = 1;
            return 0; /* help wins over whatever else is on the line */
        }
        /* Messages use the spelling on the command line ("-o", not "--output"). */
        int spelled_len = (int)(value ? (size_t)(value - 1 - arg) : strlen(arg));
        if (!f->takes_value && value)
            return fail(&p, "%.*s takes no value (got '%s')", spelled_len, arg, arg);
        if (f->takes_value && !value) {
            /* A following "--flag" is not taken as this flag's value: forgetting
             * a value is far likelier than a value that starts with "--". */
            if (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0)
                return fail(&p, "%.*s expects a value", spelled_len, arg);
            value = argv[++i];
        }
        if (p.seen[id] && !f->repeatable)
            return fail(&p, "%.*s is given more than once", spelled_len, arg);
        p.seen[id] = 1;
        if (apply_flag(&p, (flag_id)id, value) != 0) return -1;
    }
    return validate(&p);
}

void px_cli_free(px_cli *cli) {
    for (int i = 0; i < cli->bindings.n_dims; i++) free((char *)cli->bindings.dims[i].name);
    free(cli->bindings.dims);
    for (int i = 0; i < cli->bindings.n_shapes; i++) free((char *)cli->bindings.shapes[i].input);
    free(cli->bindings.shapes);
    for (int i = 0; i < cli->n_freeze; i++) free(cli->freeze[i]);
    free(cli->freeze);
    for (int i = 0; i < cli->n_outputs; i++) free(cli->outputs[i]);
    free(cli->outputs);
    px_sparsity_config_free(&cli->sparsity);
    for (int i = 0; i < cli->n_no_decay; i++) free(cli->no_decay[i]);
    free(cli->no_decay);
    memset(cli, 0, sizeof *cli);
}

/* ---- help ---- */

static const char help_top[] =
    "usage: parallaxc <command> [options]\n"
    "\n"
    "Parallax compiles an ONNX model into one native program for sparsity-aware\n"
    "data-parallel training under MPI.\n"
    "\n"
    "commands:\n"
    "  compile MODEL.onnx -o PROGRAM [options]   build a training (or inference) program\n"
    "  inspect MODEL.onnx [options]              show the graph after a pipeline stage\n"
    "  report RUN_DIR [-o REPORT.html]           one HTML page about a training run\n"
    "  data criteo|csv|tokens IN... -o DIR       convert click logs, CSV or a text corpus\n"
    "                                            into a sharded dataset (--data DIR)\n"
    "  plan MODEL.onnx --batch B --hosts H --link RATE --cores C (--data DIR | --step-seconds T)\n"
    "                                            predict a cluster: step time and samples/s\n"
    "                                            of each setting at 1, 2, 4 ... H hosts\n"
    "\n"
    "  parallaxc <command> --help   options of a command\n"
    "  parallaxc --version          print the version\n";

static const char help_shape_flags[] =
    "shape flags (bind symbolic dims of the inputs; all dims are positive integers):\n"
    "  --batch N               per-rank batch: binds a symbolic leading dim of the inputs\n"
    "  --dim NAME=N            bind the named symbolic dim (repeatable)\n"
    "  --shape INPUT=AxBxC     explicit shape of an input (repeatable)\n";

static const char help_compile_head[] = "usage: parallaxc compile MODEL.onnx -o PROGRAM [options]\n"
                                        "\n";
static const char help_train_flags[] =
    "training (compile, and inspect --stage trained|parallel):\n"
    "  --loss NAME             the scalar loss output (default: the only scalar float output)\n"
    "  --optimizer NAME        sgd | momentum | adam | adamw | adagrad | rmsprop (default sgd),\n"
    "                          with torch.optim's semantics for dense variables; sparse\n"
    "                          (embedding) variables get lazy row updates: only the rows a\n"
    "                          step touched change\n"
    "  --lr F                  learning rate, > 0 (default 0.01)\n"
    "  --momentum F            momentum, in [0, 1) (default 0.9; --optimizer momentum)\n"
    "  --nesterov              Nesterov momentum (--optimizer momentum)\n"
    "  --beta1 F, --beta2 F    Adam/AdamW decay rates, in [0, 1) (default 0.9, 0.999)\n"
    "  --alpha F               RMSprop smoothing constant, in [0, 1) (default 0.99)\n"
    "  --epsilon F             Adam/AdamW/RMSprop/Adagrad epsilon, > 0 (default 1e-8;\n"
    "                          Adagrad 1e-10)\n"
    "  --weight-decay F        weight decay, >= 0: L2 added to the gradient (default 0);\n"
    "                          AdamW's is decoupled, w *= 1 - lr*F (default 0.01)\n"
    "  --no-decay PATTERN[,PATTERN...]  variables without weight decay: shell patterns\n"
    "                          (fnmatch) of initializer names, e.g. '*.bias,*norm*';\n"
    "                          each must match a trained variable (repeatable)\n"
    "  --freeze NAME[,NAME...] initializers that are not trained (repeatable)\n"
    "\n"
    "distribution:\n"
    "  --comm MODE             hybrid (default): AllReduce for dense variables, parameter\n"
    "                          servers for sparse ones; allreduce: every gradient through\n"
    "                          AllReduce (sparse ones densified, as Horovod does); ps: every\n"
    "                          variable on parameter servers; auto: each sparse variable, and\n"
    "                          the dense ones as a group, go the way an alpha-beta model\n"
    "                          (50 us a message, 1 Gbit/s links) predicts to take less time\n"
    "                          on --ranks ranks (default 4). The mode changes how bytes move,\n"
    "                          not the numbers.\n"
    "  --partitions N|auto     row partitions of each parameter-server variable, spread over\n"
    "                          every node's shard, contiguously (default auto: from one\n"
    "                          per shard, the count timed during the first steps is kept)\n"
    "  --bucket-mb F           AllReduce bucket size in MiB (default 4)\n"
    "  --tp K                  tensor parallelism (default 1: none): ranks form groups of K\n"
    "                          consecutive ranks that share each step's batch; every MLP\n"
    "                          pair (MatMul/Gemm, elementwise ops, MatMul/Gemm) has its\n"
    "                          hidden units split over the group, each rank storing only\n"
    "                          its slab of the pair's weights and their optimizer state,\n"
    "                          with one group sum forward and one backward; data\n"
    "                          parallelism runs across groups. The program needs a\n"
    "                          multiple of K ranks; --save and checkpoints hold the whole\n"
    "                          model (docs/parallelism.md)\n"
    "  --pp S                  pipeline parallelism (default 1: none): the model is cut into S\n"
    "                          stages of consecutive layers, balanced by predicted compute;\n"
    "                          ranks form pipelines of S stages (of --tp K ranks each), which\n"
    "                          pass activations forward and their gradients back in the 1F1B\n"
    "                          schedule; data parallelism runs across pipelines. The program\n"
    "                          needs a multiple of K x S ranks (docs/parallelism.md)\n"
    "  --micro-batches M       with --pp: each step's batch is split into M micro-batches\n"
    "                          (M must divide --batch); their gradients are summed before\n"
    "                          the update, so the step equals one over the whole batch\n"
    "\n"
    "sparse training (masked weights: MatMul/Gemm weights that keep a fixed number of live\n"
    "entries, the others exactly zero; docs/sparse_training.md):\n"
    "  --sparsity NAME=F[,...] train weight NAME with a fraction F in [0, 1) of zeros\n"
    "                          (repeatable); auto:F: every float32 MatMul/Gemm weight\n"
    "  --sparsity-pattern P    unstructured (default) | block:AxB (whole blocks of A outputs\n"
    "                          x B inputs) | N:M (N live of every M consecutive inputs,\n"
    "                          sparsity 1 - N/M)\n"
    "  --sparsity-init I       the initial mask: magnitude (default: the largest initial\n"
    "                          weights) | random | erk (auto:F spread over the weights by\n"
    "                          RigL's Erdos-Renyi-Kernel rule, random masks)\n"
    "  --sparsity-seed S       seed of the random masks and of --dst set's growth (default 1)\n"
    "  --sparse-kernels K      auto (default: the sparse kernels where the measured crossover\n"
    "                          says they beat the dense GEMM) | sparse | dense\n"
    "  The gradient of a masked weight is reduced over its live entries only; the\n"
    "  program's --dst set|rigl changes the masks during training.\n";

static const char help_compile_tail[] =
    "  --ranks N               ranks --comm auto's cost model assumes (default 4; the\n"
    "                          program runs on any number: a multiple of tp x pp under\n"
    "                          --tp/--pp)\n"
    "  --infer                 forward only: build an inference program, in eval mode\n"
    "                          (BatchNormalization uses its running statistics, Dropout\n"
    "                          is the identity, as model.eval() in PyTorch)\n"
    "  --outputs NAME[,NAME...] with --infer: compute only these outputs (any value of\n"
    "                          the model); inputs they do not need (labels) are not read\n"
    "\n"
    "output:\n"
    "  -o, --output PROGRAM    the executable to write (required)\n"
    "  --emit-graph FILE       also write the final graph; format from the extension:\n"
    "                          .onnx, .dot, .json or .txt\n";

static const char help_inspect_head[] =
    "usage: parallaxc inspect MODEL.onnx [shape flags] [--ranks N] [--stage S] [--graph]\n"
    "                         [--format text|dot|json|onnx] [-o FILE] [training flags]\n"
    "\n"
    "Shows the model after a stage of the pipeline: its trainable variables, the\n"
    "predicted traffic and memory, and (--graph, or any format but text) the graph.\n"
    "\n";
static const char help_inspect_tail[] =
    "\n"
    "  --stage S               imported: as read, with shapes inferred\n"
    "                          folded: shapes bound, constants folded, dead code removed;\n"
    "                                  every shape must end up static\n"
    "                          trained: folded + backward pass + optimizer update nodes\n"
    "                          parallel: trained + communication (AllReduce buckets,\n"
    "                                  parameter-server pull/push), what compile builds\n"
    "                          (default: folded if a shape flag is given, else imported)\n"
    "  --format F              text (default) | dot (Graphviz) | json | onnx\n"
    "  --graph                 text: list the graph's inputs, nodes and outputs after the\n"
    "                          summary\n"
    "  -o, --output FILE       write to FILE instead of standard output ('-' = stdout)\n"
    "  --ranks N               number of MPI ranks to predict traffic and memory for\n"
    "                          (default 1; tp x pp under --tp/--pp, and a multiple of\n"
    "                          it): the bytes each rank holds (shard rows,\n"
    "                          optimizer state, row caches, dense replicas, frozen\n"
    "                          weights, activations) in the program compile builds\n"
    "  --ranks-per-node K      ranks per node, as the program's flag: one parameter-server\n"
    "                          shard per node (default: all ranks on one node, one shard)\n"
    "\n"
    "Variables are the float initializers that are not frozen. Each is classified\n"
    "sparse (every use is a Gather on axis 0 with runtime indices) or dense, and\n"
    "gets the synchronisation --comm gives it. With static shapes (a shape flag),\n"
    "the predicted bytes each rank sends plus receives per step, and the seconds of\n"
    "communication per step of an alpha-beta model (50 us a message, 1 Gbit/s, no\n"
    "overlap), are listed for hybrid, allreduce, ps and auto.\n";

const char *px_cli_help(px_command cmd) {
    /* Built on first use; the shape-flag block is shared by both commands. */
    static char compile_help[sizeof help_compile_head + sizeof help_shape_flags +
                             sizeof help_train_flags + sizeof help_compile_tail + 2];
    static char inspect_help[sizeof help_inspect_head + sizeof help_shape_flags +
                             sizeof help_inspect_tail + sizeof help_train_flags + 2];
    switch (cmd) {
    case PX_CMD_COMPILE:
        snprintf(compile_help, sizeof compile_help, "%s%s\n%s%s", help_compile_head,
                 help_shape_flags, help_train_flags, help_compile_tail);
        return compile_help;
    case PX_CMD_INSPECT:
        snprintf(inspect_help, sizeof inspect_help, "%s%s%s\n%s", help_inspect_head,
                 help_shape_flags, help_inspect_tail, help_train_flags);
        return inspect_help;
    default: return help_top;
    }
}

/* The training configuration the flags describe (compile and inspect). */
void px_train_config_from_cli(const px_cli *cli, px_train_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->spec.loss = cli->loss;
    cfg->spec.n_freeze = cli->n_freeze;
    cfg->spec.freeze = (const char *const *)cli->freeze;
    cfg->optimizer = cli->optimizer;
    cfg->lr = cli->lr;
    cfg->momentum = cli->momentum;
    cfg->nesterov = cli->nesterov;
    cfg->beta1 = cli->beta1;
    cfg->beta2 = cli->beta2;
    cfg->epsilon = cli->epsilon;
    cfg->weight_decay = cli->weight_decay;
    cfg->alpha = cli->alpha;
    cfg->n_no_decay = cli->n_no_decay;
    cfg->no_decay = (const char *const *)cli->no_decay;
    cfg->comm = cli->comm;
    cfg->partitions = cli->partitions;
    cfg->bucket_bytes = (int64_t)(cli->bucket_mb * 1024 * 1024);
    if (cfg->bucket_bytes < 4) cfg->bucket_bytes = 4;
    cfg->model_ranks = cli->ranks;
    cfg->sparsity = cli->sparsity; /* borrowed: cli owns the names */
    cfg->tp = cli->tp;
    cfg->pp = cli->pp;
    cfg->micro_batches = cli->micro_batches;
}
