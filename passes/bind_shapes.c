/* Binds the symbolic dims of graph inputs from the command line: explicit
 * --shape INPUT=AxB first, then --dim NAME=N, then --batch N for a symbolic or
 * unknown leading dim. Every bound name is then replaced throughout the
 * graph's declared shapes, so declared value_info/outputs agree with inputs. */
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sym_binding {
    const char *name;
    int64_t value;
    const char *origin; /* which flag bound it, for contradiction messages */
} sym_binding;

typedef struct sym_map {
    int n, cap;
    sym_binding *items;
} sym_map;

static sym_binding *sym_find(const sym_map *m, const char *name) {
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->items[i].name, name) == 0) return &m->items[i];
    return NULL;
}

static int sym_bind(sym_map *m, const char *name, int64_t value, const char *origin, px_diag *d) {
    sym_binding *b = sym_find(m, name);
    if (b) {
        if (b->value == value) return 0;
        return px_error(d, "dimension '%s' is bound to %lld by %s but to %lld by %s", name,
                        (long long)b->value, b->origin, (long long)value, origin);
    }
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 8;
        sym_binding *items = realloc(m->items, (size_t)cap * sizeof *items);
        if (!items) return px_error(d, "out of memory binding dimension '%s'", name);
        m->items = items;
        m->cap = cap;
    }
    m->items[m->n++] = (sym_binding){px_intern(name), value, origin};
    return 0;
}

/* Replaces every symbolic dim named in m by its value. */
static void apply_syms(px_shape *s, const sym_map *m) {
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] >= 0 || !px_shape_sym(s, i)) continue;
        const sym_binding *b = sym_find(m, px_shape_sym(s, i));
        if (b) {
            s->dims[i] = b->value;
            s->sym_id[i] = 0;
        }
    }
}

static px_value *find_input(const px_graph *g, const char *name) {
    for (int i = 0; i < g->n_inputs; i++)
        if (strcmp(g->inputs[i]->name, name) == 0) return g->inputs[i];
    return NULL;
}

static void note_inputs(const px_graph *g, px_diag *d) {
    char buf[256];
    for (int i = 0; i < g->n_inputs; i++)
        px_note(d, "graph input '%s' has shape %s", g->inputs[i]->name,
                px_shape_str(&g->inputs[i]->shape, buf, sizeof buf));
    if (g->n_inputs == 0) px_note(d, "the model has no graph inputs");
}

static int bind_explicit(px_graph *g, const px_shape_binding *sb, sym_map *m, px_diag *d) {
    char want[256], have[256], origin[64];
    px_value *v = find_input(g, sb->input);
    px_shape_str(&sb->shape, want, sizeof want);
    if (!v) {
        px_error(d, "--shape %s=%s: the model has no graph input named '%s'", sb->input, want,
                 sb->input);
        note_inputs(g, d);
        return -1;
    }
    if (!px_shape_is_static(&sb->shape))
        return px_error(d, "--shape %s=%s: the shape must be fully static", sb->input, want);
    px_shape_str(&v->shape, have, sizeof have);
    if (v->shape.rank >= 0 && v->shape.rank != sb->shape.rank)
        return px_error(d, "--shape %s=%s: input '%s' has rank %d (shape %s), not %d", sb->input,
                        want, v->name, v->shape.rank, have, sb->shape.rank);
    snprintf(origin, sizeof origin, "--shape %s", sb->input);
    for (int i = 0; i < v->shape.rank; i++) {
        int64_t dim = v->shape.dims[i];
        if (dim >= 0 && dim != sb->shape.dims[i])
            return px_error(d, "--shape %s=%s contradicts input '%s' of shape %s: dim %d is %lld",
                            sb->input, want, v->name, have, i, (long long)dim);
        if (dim < 0 && px_shape_sym(&v->shape, i) &&
            sym_bind(m, px_shape_sym(&v->shape, i), sb->shape.dims[i], px_intern(origin), d) != 0)
            return -1;
    }
    v->shape = px_shape_make(sb->shape.rank, sb->shape.dims);
    return 0;
}

static int name_occurs(const px_shape *orig, int n, const char *name) {
    for (int k = 0; k < n; k++)
        for (int i = 0; i < orig[k].rank; i++)
            if (orig[k].dims[i] < 0 && px_shape_sym(&orig[k], i) &&
                strcmp(px_shape_sym(&orig[k], i), name) == 0)
                return 1;
    return 0;
}

static int bind_batch(px_graph *g, int64_t batch, sym_map *m, px_diag *d) {
    int bound_any = 0;
    for (int k = 0; k < g->n_inputs; k++) {
        px_shape *s = &g->inputs[k]->shape;
        if (s->rank < 1 || s->dims[0] >= 0) continue;
        if (px_shape_sym(s, 0) && sym_bind(m, px_shape_sym(s, 0), batch, "--batch", d) != 0)
            return -1;
        s->dims[0] = batch;
        s->sym_id[0] = 0;
        bound_any = 1;
    }
    if (bound_any) return 0;
    /* Nothing symbolic: accept a batch the model already has, refuse another one
     * rather than silently running with the exported batch size. */
    for (int k = 0; k < g->n_inputs; k++) {
        const px_shape *s = &g->inputs[k]->shape;
        if (s->rank >= 1 && s->dims[0] != batch) {
            char buf[256];
            px_error(d,
                     "--batch %lld: no graph input has a symbolic leading dimension, and input "
                     "'%s' has fixed shape %s",
                     (long long)batch, g->inputs[k]->name, px_shape_str(s, buf, sizeof buf));
            px_note(d,
                    "the model was exported with a fixed batch of %lld: export it with a dynamic "
                    "batch, torch.onnx.export(..., dynamic_axes={'%s': {0: 'batch'}, ...}) with "
                    "an entry for every input (parallax.export does this), or compile with "
                    "--batch %lld",
                    (long long)s->dims[0], g->inputs[k]->name, (long long)s->dims[0]);
            return -1;
        }
    }
    return 0;
}

/* The leading dim every input shares, or 0; *a and *b get the first two
 * inputs that disagree (*b NULL: *a is a scalar). */
static int64_t common_batch(const px_graph *g, const px_value **a, const px_value **b) {
    *a = *b = NULL;
    if (g->n_inputs == 0) return 0;
    for (int k = 0; k < g->n_inputs; k++) {
        const px_value *v = g->inputs[k];
        if (v->shape.rank < 1) {
            *a = v;
            return 0;
        }
        if (v->shape.dims[0] != g->inputs[0]->shape.dims[0]) {
            *a = g->inputs[0];
            *b = v;
            return 0;
        }
    }
    return g->inputs[0]->shape.dims[0];
}

int px_require_batch(const px_graph *g, px_diag *d) {
    const px_value *a, *b;
    char sa[256], sb[256];
    if (common_batch(g, &a, &b) > 0) return 0;
    if (!a) return px_error(d, "a training program needs a graph input with samples along dim 0");
    px_shape_str(&a->shape, sa, sizeof sa);
    if (!b)
        return px_error(d,
                        "graph input '%s' has shape %s: a training program reads the batch "
                        "along dim 0 of every input",
                        a->name, sa);
    px_shape_str(&b->shape, sb, sizeof sb);
    px_error(d,
             "graph inputs '%s' (shape %s) and '%s' (shape %s) disagree on the batch: "
             "leading dims %lld and %lld",
             a->name, sa, b->name, sb, (long long)a->shape.dims[0], (long long)b->shape.dims[0]);
    px_note(d, "every input of a training program holds the same samples along dim 0; bind them "
               "with --batch N or consistent --shape/--dim values");
    return -1;
}

int px_pass_bind_shapes(px_graph *g, const px_bindings *b, px_diag *d) {
    int rc = -1;
    sym_map m = {0};
    px_shape *orig = calloc((size_t)g->n_inputs + 1, sizeof *orig);
    if (!orig) {
        px_error(d, "out of memory binding shapes");
        goto cleanup;
    }
    for (int k = 0; k < g->n_inputs; k++) orig[k] = g->inputs[k]->shape;

    for (int i = 0; b && i < b->n_shapes; i++)
        if (bind_explicit(g, &b->shapes[i], &m, d) != 0) goto cleanup;

    for (int i = 0; b && i < b->n_dims; i++) {
        const px_dim_binding *db = &b->dims[i];
        if (db->value < 0) {
            px_error(d, "--dim %s=%lld: a dimension cannot be negative", db->name,
                     (long long)db->value);
            goto cleanup;
        }
        if (!name_occurs(orig, g->n_inputs, db->name)) {
            px_error(d, "--dim %s=%lld: no graph input has a dimension named '%s'", db->name,
                     (long long)db->value, db->name);
            note_inputs(g, d);
            goto cleanup;
        }
        if (sym_bind(&m, db->name, db->value, "--dim", d) != 0) goto cleanup;
    }
    for (int k = 0; k < g->n_inputs; k++) apply_syms(&g->inputs[k]->shape, &m);

    if (b && b->batch < 0) {
        px_error(d, "--batch %lld: the batch size must be positive", (long long)b->batch);
        goto cleanup;
    }
    if (b && b->batch > 0) {
        if (bind_batch(g, b->batch, &m, d) != 0) goto cleanup;
        for (int k = 0; k < g->n_inputs; k++) apply_syms(&g->inputs[k]->shape, &m);
    }

    int failed = 0;
    for (int k = 0; k < g->n_inputs; k++) {
        const px_value *v = g->inputs[k];
        if (px_shape_is_static(&v->shape)) continue;
        char buf[256];
        px_error(d, "graph input '%s' still has a non-static shape %s", v->name,
                 px_shape_str(&v->shape, buf, sizeof buf));
        px_note(d, "bind it with --batch N, --dim NAME=N or --shape %s=AxB...", v->name);
        failed = 1;
    }
    if (failed) goto cleanup;

    /* Declared shapes elsewhere (value_info, outputs) use the same names. */
    for (int i = 0; i < g->n_values; i++) apply_syms(&g->values[i]->shape, &m);
    const px_value *ua, *ub;
    g->batch = common_batch(g, &ua, &ub);
    rc = 0;
cleanup:
    free(orig);
    free(m.items);
    return rc;
}
