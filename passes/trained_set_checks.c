/* What a model without parallax.trainable metadata will train (export_checks.h):
 * every float initializer not --freeze'd, listed, with warnings about the
 * ones that look like PyTorch buffers or like the exporter's copy of a tied
 * weight. */
#include "export_checks.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIST_CAP 6000

static int is_trained_guess(const px_value *v, const px_train_spec *spec) {
    return v->kind == PX_VALUE_INITIALIZER && px_dtype_is_float(v->dtype) &&
           !px_train_spec_is_frozen(spec, v->name) && !px_is_running_statistic(v);
}

/* PyTorch names its BatchNorm buffers so; registered as parameters they
 * would be trained. */
static int has_buffer_name(const char *name) {
    static const char *const suffixes[] = {"running_mean", "running_var", "num_batches_tracked"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        size_t k = strlen(suffixes[i]);
        if (n >= k && strcmp(name + n - k, suffixes[i]) == 0 && (n == k || name[n - k - 1] == '.'))
            return 1;
    }
    return 0;
}

/* Read only through windows (Slice data input): how a registered buffer
 * such as a positional encoding table is read, `pe[:seq_len]`. */
static int read_only_by_slice(const px_value *v) {
    int live = 0;
    for (int u = 0; u < v->n_uses; u++) {
        const px_node *n = v->uses[u].node;
        if (n->dead) continue;
        live++;
        if (n->op != PX_OP_Slice || v->uses[u].index != 0) return 0;
    }
    return live > 0;
}

/* FNV-1a over the elements of v in the order of transpose(v, perm 1,0)
 * (transposed != 0, rank 2) or in memory order. */
static uint64_t content_hash(const px_value *v, int transposed) {
    const px_tensor *t = v->data;
    size_t es = px_dtype_size(t->dtype);
    int64_t rows = transposed ? v->shape.dims[0] : 1, cols = px_tensor_numel(t) / rows;
    const unsigned char *b = t->data;
    uint64_t h = 1469598103934665603ULL;
    for (int64_t j = 0; j < (transposed ? cols : 1); j++)
        for (int64_t i = 0; i < (transposed ? rows : cols); i++) {
            const unsigned char *e = b + (size_t)(transposed ? i * cols + j : i) * es;
            for (size_t k = 0; k < es; k++) h = (h ^ e[k]) * 1099511628211ULL;
        }
    return h;
}

static int all_one_value(const px_tensor *t) {
    size_t es = px_dtype_size(t->dtype), n = (size_t)px_tensor_numel(t);
    for (size_t i = 1; i < n; i++)
        if (memcmp((const char *)t->data + i * es, t->data, es) != 0) return 0;
    return 1;
}

/* Does b hold a's values (transposed != 0: a's transpose), element for element? */
static int same_values(const px_value *a, const px_value *b, int transposed) {
    const px_tensor *ta = a->data, *tb = b->data;
    size_t es = px_dtype_size(ta->dtype);
    int64_t n = px_tensor_numel(ta), rows = a->shape.dims[0], cols = n / (rows ? rows : 1);
    if (!transposed) return memcmp(ta->data, tb->data, (size_t)n * es) == 0;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            if (memcmp((const char *)ta->data + (size_t)(i * cols + j) * es,
                       (const char *)tb->data + (size_t)(j * rows + i) * es, es) != 0)
                return 0;
    return 1;
}

typedef struct candidate {
    const px_value *v;
    uint64_t plain, transposed; /* transposed: 0 unless some candidate has the transposed shape */
    int shared;                 /* another candidate has as many elements */
} candidate;

static int has_transposed_shape(const candidate *c, int n, const px_value *v) {
    for (int k = 0; k < n; k++)
        if (c[k].shared && c[k].v != v && c[k].v->shape.rank == 2 &&
            c[k].v->shape.dims[0] == v->shape.dims[1] && c[k].v->shape.dims[1] == v->shape.dims[0])
            return 1;
    return 0;
}

/* Pairs of trained initializers holding the same values, or one the
 * other's transpose (constant folding's copy of a tied weight). Only sizes
 * that two initializers share are hashed. */
static int check_copies(const px_graph *g, const px_train_spec *spec, px_diag *w) {
    int n = 0, found = 0;
    candidate *c = calloc((size_t)g->n_inits + 1, sizeof *c);
    if (!c) return 0;
    for (int i = 0; i < g->n_inits; i++) {
        const px_value *v = g->inits[i];
        if (!is_trained_guess(v, spec) || !v->data || px_tensor_numel(v->data) < 2 ||
            all_one_value(v->data))
            continue;
        c[n++].v = v;
    }
    for (int i = 0; i < n; i++) {
        int shared = 0;
        for (int k = 0; k < n && !shared; k++)
            shared = k != i && c[k].v->dtype == c[i].v->dtype &&
                     px_tensor_numel(c[k].v->data) == px_tensor_numel(c[i].v->data);
        c[i].shared = shared;
    }
    for (int i = 0; i < n; i++) {
        if (!c[i].shared) continue;
        c[i].plain = content_hash(c[i].v, 0);
        c[i].transposed = c[i].v->shape.rank == 2 && has_transposed_shape(c, n, c[i].v)
                              ? content_hash(c[i].v, 1)
                              : 0;
    }
    for (int i = 0; i < n; i++)
        for (int k = i + 1; c[i].shared && k < n; k++) {
            const px_value *a = c[i].v, *b = c[k].v;
            if (!c[k].shared || a->dtype != b->dtype ||
                px_tensor_numel(a->data) != px_tensor_numel(b->data))
                continue;
            int copy = c[i].plain == c[k].plain && same_values(a, b, 0);
            int transposed =
                !copy && c[i].transposed && c[i].transposed == c[k].plain && same_values(a, b, 1);
            if (!copy && !transposed) continue;
            found++;
            px_warning(w,
                       "initializers '%s' and '%s' hold the same values%s: if they are one tied "
                       "parameter (with constant folding, torch.onnx.export stores a tied "
                       "lm_head as the embedding's transpose), they would train as two. Export "
                       "with python/parallax (the parallax.ties metadata, docs/metadata.md) "
                       "so that they train as one",
                       a->name, b->name, transposed ? " (the second is the first transposed)" : "");
        }
    free(c);
    return found;
}

int px_check_trained_set(const px_graph *g, const px_train_spec *spec, int list_all, px_diag *w) {
    if (spec && spec->meta && spec->meta->has_trainable) return 0;
    int count = 0, warnings = 0;
    char *list = calloc(LIST_CAP, 1);
    size_t len = 0;
    for (int i = 0; i < g->n_inits; i++) {
        const px_value *v = g->inits[i];
        if (!is_trained_guess(v, spec)) continue;
        count++;
        if (list && len + 8 < LIST_CAP)
            len += (size_t)snprintf(list + len, LIST_CAP - len, "%s'%s'", len ? ", " : "", v->name);
        if (has_buffer_name(v->name)) {
            warnings++;
            px_warning(w,
                       "initializer '%s' has the name of a PyTorch buffer but no training-mode "
                       "BatchNormalization updates it: it would be trained as a weight. Export "
                       "with python/parallax (docs/metadata.md) or --freeze %s",
                       v->name, v->name);
        } else if (read_only_by_slice(v)) {
            warnings++;
            px_warning(w,
                       "initializer '%s' is read only through Slice, the way a registered buffer "
                       "(e.g. a positional encoding) is: it would be trained as a weight, which "
                       "PyTorch never does to a buffer. Export with python/parallax "
                       "(docs/metadata.md) or --freeze %s if it is not an nn.Parameter",
                       v->name, v->name);
        }
    }
    warnings += check_copies(g, spec, w);
    if (count && list_all)
        px_note(w,
                "the model has no parallax.trainable metadata: training every float initializer "
                "not --freeze'd (%d): %s%s",
                count, list ? list : "", list && len + 8 >= LIST_CAP ? ", ..." : "");
    free(list);
    return warnings;
}
