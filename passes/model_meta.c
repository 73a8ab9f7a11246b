/* The parallax.* metadata (model_meta.h, docs/metadata.md). */
#include "model_meta.h"

#include "json_read.h"
#include "shape_infer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX "parallax."
#define VERSION "1"

static const char *meta_value(const px_graph *g, const char *key) {
    for (int i = 0; i < g->n_meta; i++)
        if (g->meta[i].key && strcmp(g->meta[i].key, key) == 0) return g->meta[i].value;
    return NULL;
}

static const char *kind_name(px_json_kind k) {
    static const char *const names[] = {"null", "boolean", "number", "string", "array", "object"};
    return names[k];
}

/* 1 with *out set when a is a whole number in [0, limit). */
static int as_index(const px_json *a, int64_t limit, int64_t *out) {
    if (a->kind != PX_JSON_NUMBER || !(a->number >= 0) || !(a->number < (double)limit)) return 0;
    *out = (int64_t)a->number;
    return (double)*out == a->number;
}

static px_json *parse_key(const px_graph *g, const char *key, px_json_kind want, px_diag *d) {
    const char *text = meta_value(g, key);
    if (!text) return NULL;
    char err[300];
    px_json *j = px_json_parse(text, strlen(text), err, sizeof err);
    if (!j) {
        px_error(d, "model metadata '%s': %s", key, err);
        return NULL;
    }
    if (j->kind != want) {
        px_error(d, "model metadata '%s': expected a JSON %s, found a%s %s", key, kind_name(want),
                 j->kind == PX_JSON_ARRAY || j->kind == PX_JSON_OBJECT ? "n" : "",
                 kind_name(j->kind));
        px_json_free(j);
        return NULL;
    }
    return j;
}

/* The float initializer name of g, or NULL with an error naming key. */
static px_value *float_init(const px_graph *g, const char *key, const char *name, px_diag *d) {
    px_value *v = px_graph_find_value(g, name);
    if (!v || v->kind != PX_VALUE_INITIALIZER) {
        px_error(d, "model metadata '%s': '%s' is not an initializer of the model", key, name);
        return NULL;
    }
    if (!px_dtype_is_float(v->dtype)) {
        px_error(d, "model metadata '%s': initializer '%s' is %s, not float", key, name,
                 px_dtype_name(v->dtype));
        return NULL;
    }
    return v;
}

static char *dup(const char *s, px_diag *d) {
    char *c = strdup(s);
    if (!c) px_error(d, "out of memory");
    return c;
}

static int read_trainable(const px_graph *g, px_model_meta *m, px_diag *d) {
    const char *key = PREFIX "trainable";
    if (!meta_value(g, key)) return 0;
    px_json *j = parse_key(g, key, PX_JSON_ARRAY, d);
    if (!j) return -1;
    int rc = -1;
    m->has_trainable = 1;
    m->trainable = calloc((size_t)j->n + 1, sizeof *m->trainable);
    if (!m->trainable) {
        px_error(d, "out of memory");
        goto done;
    }
    for (int i = 0; i < (int)j->n; i++) {
        const px_json *e = j->items[i];
        if (e->kind != PX_JSON_STRING) {
            px_error(d, "model metadata '%s': element %d is a %s, not a string", key, i,
                     kind_name(e->kind));
            goto done;
        }
        if (!float_init(g, key, e->string, d)) goto done;
        if (px_model_meta_is_trainable(m, e->string)) {
            px_error(d, "model metadata '%s': '%s' is listed twice", key, e->string);
            goto done;
        }
        if (!(m->trainable[m->n_trainable] = dup(e->string, d))) goto done;
        m->n_trainable++;
    }
    rc = 0;
done:
    px_json_free(j);
    return rc;
}

/* 1 when copy holds reshape(transpose(of, perm)) exactly, element by element. */
static int holds_transposed(const px_value *copy, const px_value *of, const px_tie *t) {
    const px_tensor *c = copy->data, *s = of->data;
    if (!c || !s || c->dtype != s->dtype) return 0;
    int r = of->shape.rank;
    int64_t n = px_tensor_numel(s), stride[PX_MAX_RANK], dims[PX_MAX_RANK], idx[PX_MAX_RANK] = {0};
    size_t es = px_dtype_size(s->dtype);
    if (n != px_tensor_numel(c)) return 0;
    int64_t acc = 1;
    for (int k = r - 1; k >= 0; k--) {
        stride[k] = acc;
        acc *= of->shape.dims[k];
    }
    /* dims and strides of transpose(of, perm) in of's memory */
    int64_t tstride[PX_MAX_RANK];
    for (int k = 0; k < r; k++) {
        int p = t->n_perm ? (int)t->perm[k] : k;
        dims[k] = of->shape.dims[p];
        tstride[k] = stride[p];
    }
    const char *cb = c->data, *sb = s->data;
    int64_t off = 0;
    for (int64_t i = 0; i < n; i++) {
        if (memcmp(cb + (size_t)i * es, sb + (size_t)off * es, es) != 0) return 0;
        for (int k = r - 1; k >= 0; k--) { /* next index of the transposed view */
            idx[k]++;
            off += tstride[k];
            if (idx[k] < dims[k]) break;
            off -= tstride[k] * dims[k];
            idx[k] = 0;
        }
    }
    return 1;
}

static int read_tie(const px_graph *g, const px_json *e, int i, px_tie *t, px_diag *d) {
    const char *key = PREFIX "ties";
    const px_json *copy = px_json_get(e, "initializer"), *of = px_json_get(e, "of"),
                  *perm = px_json_get(e, "perm");
    if (e->kind != PX_JSON_OBJECT || !copy || copy->kind != PX_JSON_STRING || !of ||
        of->kind != PX_JSON_STRING)
        return px_error(d,
                        "model metadata '%s': element %d is not an object with string "
                        "\"initializer\" and \"of\"",
                        key, i);
    px_value *cv = float_init(g, key, copy->string, d), *ov = float_init(g, key, of->string, d);
    if (!cv || !ov) return -1;
    if (cv == ov) return px_error(d, "model metadata '%s': '%s' is tied to itself", key, cv->name);
    int r = ov->shape.rank;
    if (perm && perm->kind != PX_JSON_NULL) {
        int seen[PX_MAX_RANK] = {0};
        if (perm->kind != PX_JSON_ARRAY || perm->n != (size_t)r)
            return px_error(d, "model metadata '%s': \"perm\" of '%s' is not %d axes of '%s'", key,
                            cv->name, r, ov->name);
        for (int k = 0; k < r; k++) {
            int64_t a;
            if (!as_index(perm->items[k], r, &a) || seen[a]++)
                return px_error(d,
                                "model metadata '%s': \"perm\" of '%s' is not a permutation of "
                                "0..%d",
                                key, cv->name, r - 1);
            t->perm[k] = a;
        }
        t->n_perm = r;
    }
    if (!holds_transposed(cv, ov, t))
        return px_error(d,
                        "model metadata '%s': initializer '%s' does not hold the values of '%s'%s "
                        "(a tie must be an exact copy)",
                        key, cv->name, ov->name, t->n_perm ? " transposed by \"perm\"" : "");
    t->copy = dup(cv->name, d);
    t->of = dup(ov->name, d);
    return t->copy && t->of ? 0 : -1;
}

static int read_ties(const px_graph *g, px_model_meta *m, px_diag *d) {
    const char *key = PREFIX "ties";
    if (!meta_value(g, key)) return 0;
    px_json *j = parse_key(g, key, PX_JSON_ARRAY, d);
    if (!j) return -1;
    int rc = -1;
    m->ties = calloc((size_t)j->n + 1, sizeof *m->ties);
    if (!m->ties) {
        px_error(d, "out of memory");
        goto done;
    }
    for (int i = 0; i < (int)j->n; i++) {
        px_tie *t = &m->ties[m->n_ties];
        int bad = read_tie(g, j->items[i], i, t, d);
        if (t->copy || t->of) m->n_ties++; /* freed with m */
        if (bad) goto done;
    }
    for (int i = 0; i < m->n_ties; i++) {
        const px_tie *t = &m->ties[i];
        for (int k = 0; k < m->n_ties; k++) {
            if (k != i && strcmp(m->ties[k].copy, t->copy) == 0) {
                px_error(d, "model metadata '%s': '%s' is tied twice", key, t->copy);
                goto done;
            }
            if (strcmp(m->ties[k].copy, t->of) == 0) {
                px_error(d, "model metadata '%s': '%s' copies '%s', itself a copy", key, t->copy,
                         t->of);
                goto done;
            }
        }
        if (px_model_meta_is_trainable(m, t->copy)) {
            px_error(d,
                     "model metadata: '%s' is both trainable and a tied copy of '%s' "
                     "(parallax.trainable must list only '%s')",
                     t->copy, t->of, t->of);
            goto done;
        }
    }
    rc = 0;
done:
    px_json_free(j);
    return rc;
}

static int read_padding(const px_graph *g, px_model_meta *m, px_diag *d) {
    const char *key = PREFIX "padding_idx";
    if (!meta_value(g, key)) return 0;
    px_json *j = parse_key(g, key, PX_JSON_OBJECT, d);
    if (!j) return -1;
    int rc = -1;
    m->padding_tables = calloc((size_t)j->n + 1, sizeof *m->padding_tables);
    m->padding_rows = calloc((size_t)j->n + 1, sizeof *m->padding_rows);
    if (!m->padding_tables || !m->padding_rows) {
        px_error(d, "out of memory");
        goto done;
    }
    for (int i = 0; i < (int)j->n; i++) {
        const px_json *row = j->items[i];
        px_value *v = float_init(g, key, j->keys[i], d);
        if (!v) goto done;
        int64_t rows = v->shape.rank >= 1 ? v->shape.dims[0] : 0, r;
        if (!as_index(row, rows, &r)) {
            px_error(d,
                     "model metadata '%s': the row of '%s' must be an integer in [0, %lld), "
                     "the rows of the table",
                     key, v->name, (long long)rows);
            goto done;
        }
        if (px_model_meta_padding_row(m, v->name) >= 0) {
            px_error(d, "model metadata '%s': '%s' is listed twice", key, v->name);
            goto done;
        }
        if (!(m->padding_tables[m->n_padding] = dup(v->name, d))) goto done;
        m->padding_rows[m->n_padding++] = r;
    }
    rc = 0;
done:
    px_json_free(j);
    return rc;
}

int px_model_meta_read(const px_graph *g, px_model_meta *m, px_diag *d) {
    memset(m, 0, sizeof *m);
    for (int i = 0; i < g->n_meta; i++)
        if (g->meta[i].key && strncmp(g->meta[i].key, PREFIX, strlen(PREFIX)) == 0) m->present = 1;
    if (!m->present) return 0;
    const char *version = meta_value(g, PREFIX "helper_version");
    if (!version || strcmp(version, VERSION) != 0)
        return px_error(d,
                        "model metadata '" PREFIX "helper_version' is %s%s%s: this parallaxc reads "
                        "version " VERSION " of the parallax.* keys (docs/metadata.md); export "
                        "the model again with this tree's python/parallax",
                        version ? "'" : "", version ? version : "missing", version ? "'" : "");
    if (read_trainable(g, m, d) || read_ties(g, m, d) || read_padding(g, m, d)) return -1;
    return 0;
}

void px_model_meta_free(px_model_meta *m) {
    if (!m) return;
    for (int i = 0; i < m->n_trainable; i++) free(m->trainable[i]);
    for (int i = 0; i < m->n_ties; i++) {
        free(m->ties[i].copy);
        free(m->ties[i].of);
    }
    for (int i = 0; i < m->n_padding; i++) free(m->padding_tables[i]);
    free(m->trainable);
    free(m->ties);
    free(m->padding_tables);
    free(m->padding_rows);
    memset(m, 0, sizeof *m);
}

int64_t px_model_meta_padding_row(const px_model_meta *m, const char *name) {
    for (int i = 0; m && i < m->n_padding; i++)
        if (strcmp(m->padding_tables[i], name) == 0) return m->padding_rows[i];
    return -1;
}

int px_model_meta_is_trainable(const px_model_meta *m, const char *name) {
    for (int i = 0; m && i < m->n_trainable; i++)
        if (strcmp(m->trainable[i], name) == 0) return 1;
    return 0;
}

int px_model_meta_is_tied_copy(const px_model_meta *m, const char *name) {
    for (int i = 0; m && i < m->n_ties; i++)
        if (strcmp(m->ties[i].copy, name) == 0) return 1;
    return 0;
}

int px_pass_apply_ties(px_graph *g, const px_model_meta *m, px_diag *d) {
    for (int i = 0; m && i < m->n_ties; i++) {
        const px_tie *t = &m->ties[i];
        px_value *copy = px_graph_find_value(g, t->copy), *of = px_graph_find_value(g, t->of);
        if (!copy || !of) return px_error(d, "internal error: tie '%s' of '%s'", t->copy, t->of);
        if (copy->n_uses == 0 && !copy->is_output) continue;
        char name[300];
        snprintf(name, sizeof name, "tie/%s", t->copy);
        px_value *cur = of;
        px_shape unknown = px_shape_unknown();
        if (t->n_perm) {
            px_value *out = px_graph_new_value(g, name, of->dtype, &unknown);
            px_node *n = px_graph_insert_node(g, 0, "Transpose", "", name, 1, &cur, 1, &out);
            px_node_set_attr_ints(n, "perm", t->n_perm, t->perm);
            if (px_infer_node(g, n, d)) return -1;
            cur = out;
        }
        if (!px_shape_equal(&cur->shape, &copy->shape)) {
            px_shape one = px_shape_make(1, (int64_t[]){copy->shape.rank});
            px_tensor *st = px_tensor_new(PX_I64, &one, d);
            if (!st) return -1;
            for (int k = 0; k < copy->shape.rank; k++)
                px_tensor_set_i64(st, k, copy->shape.dims[k]);
            px_value *ins[2] = {cur, px_graph_add_constant(g, "tie/shape", st)};
            px_value *out = px_graph_new_value(g, name, of->dtype, &unknown);
            px_node *n = px_graph_insert_node(g, 0, "Reshape", "", name, 2, ins, 1, &out);
            if (px_infer_node(g, n, d)) return -1;
            cur = out;
        }
        if (cur == of) { /* an identical copy: read the source itself */
            px_value_replace_uses(g, copy, of);
            continue;
        }
        px_value_replace_uses(g, copy, cur);
    }
    return px_graph_toposort(g, d);
}
