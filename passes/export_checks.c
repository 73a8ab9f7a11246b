/* Warnings about exports that would train a different model than the
 * PyTorch module they came from (export_checks.h). Each names the nodes or
 * initializers and says how to export instead. */
#include "export_checks.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define FIX                                                                                        \
    "export with torch.onnx.export(..., training=torch.onnx.TrainingMode.TRAINING, "               \
    "do_constant_folding=False)"
#define MAX_LISTED 8

/* A note line as train_errors.sh reads it ("note: ..." at the line's start;
 * px_note indents its notes under an error). */
__attribute__((format(printf, 2, 3))) static void note(px_diag *w, const char *fmt, ...) {
    if (w->len + 16 >= sizeof w->text) return;
    w->len += (size_t)snprintf(w->text + w->len, sizeof w->text - w->len, "note: ");
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(w->text + w->len, sizeof w->text - w->len, fmt, ap);
    va_end(ap);
    if (k > 0) w->len += (size_t)k;
    if (w->len >= sizeof w->text - 1) w->len = sizeof w->text - 2;
    w->text[w->len++] = '\n';
    w->text[w->len] = '\0';
}

static int is_weight(const px_value *v) {
    return v && v->kind == PX_VALUE_INITIALIZER && px_dtype_is_float(v->dtype);
}

/* torch.onnx.export's constant folding merges initializers with equal
 * values into one, read by the others through Identity nodes. */
static int check_tied(const px_graph *g, px_diag *w) {
    int count = 0;
    char list[1024] = "";
    size_t len = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        if (n->dead || n->op != PX_OP_Identity || !is_weight(n->inputs[0]) || !n->outputs[0])
            continue;
        if (count++ < MAX_LISTED && len < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s' = node '%s'('%s')",
                                    count > 1 ? ", " : "", n->outputs[0]->name, n->name,
                                    n->inputs[0]->name);
    }
    if (count)
        px_warning(
            w,
            "%d value%s read an initializer through Identity: %s%s. PyTorch's exporter merged "
            "parameters that had equal values (e.g. LayerNorm weights and biases at their "
            "initial values) into one, so they would train as one tied parameter; %s",
            count, count == 1 ? "" : "s", list, count > MAX_LISTED ? ", ..." : "", FIX);
    return count ? 1 : 0;
}

/* Signs of an eval-mode export: BatchNormalization in inference mode,
 * Dropout switched off, Conv weights made by folding (BatchNorm folded into
 * them: torch names those initializers onnx::Conv_N). */
static int check_eval_mode(const px_graph *g, px_diag *w) {
    int bn = 0, drop = 0, folded = 0;
    const char *bn_name = "", *drop_name = "", *conv_name = "", *conv_weight = "";
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        if (n->dead) continue;
        if (n->op == PX_OP_BatchNormalization && px_attr_int(n, "training_mode", 0) == 0 &&
            n->n_outputs <= 1) {
            if (!bn++) bn_name = n->name;
        } else if (n->op == PX_OP_Dropout) {
            const px_value *tm = n->n_inputs > 2 ? n->inputs[2] : NULL;
            int off = !tm || (px_value_is_const(tm) && px_tensor_get_i64(tm->data, 0) == 0);
            if (tm && tm->producer && tm->producer->op == PX_OP_Constant) {
                const px_tensor *t = px_attr_tensor(tm->producer, "value");
                off = t && px_tensor_numel(t) == 1 && px_tensor_get_i64(t, 0) == 0;
            }
            if (off && !drop++) drop_name = n->name;
        } else if (n->op == PX_OP_Conv && n->n_inputs > 1 && is_weight(n->inputs[1]) &&
                   strncmp(n->inputs[1]->name, "onnx::Conv_", 11) == 0) {
            if (!folded++) {
                conv_name = n->name;
                conv_weight = n->inputs[1]->name;
            }
        }
    }
    if (bn)
        px_warning(
            w,
            "%d BatchNormalization node%s (e.g. '%s') %s exported in eval mode: training would "
            "normalize with the fixed running statistics instead of each batch's, and never "
            "update them, unlike PyTorch's training; %s",
            bn, bn == 1 ? "" : "s", bn_name, bn == 1 ? "was" : "were", FIX);
    if (drop)
        px_warning(w,
                   "%d Dropout node%s (e.g. '%s') %s exported in eval mode: training would drop "
                   "nothing; %s",
                   drop, drop == 1 ? "" : "s", drop_name, drop == 1 ? "was" : "were", FIX);
    if (folded)
        px_warning(
            w,
            "%d Conv node%s (e.g. '%s', weight '%s') read weights that the exporter computed "
            "(named onnx::Conv_N): an eval-mode export folds BatchNorm into the convolution "
            "before it, so the BatchNorm would not train as such; %s",
            folded, folded == 1 ? "" : "s", conv_name, conv_weight, FIX);
    return (bn > 0) + (drop > 0) + (folded > 0);
}

/* torch.onnx.export runs the module in eval mode unless asked otherwise
 * (training=TrainingMode.EVAL is its default), and an eval-mode export has
 * no Dropout node at all: nothing in the graph shows that the module had
 * one. So a PyTorch export without Dropout and without BatchNormalization
 * (whose eval mode check_eval_mode sees), not made by the export helper
 * (its parallax.* metadata: it exports in training mode), gets a note. */
static int check_dropout_gone(const px_graph *g, px_diag *w) {
    if (!g->producer_name || strcmp(g->producer_name, "pytorch") != 0) return 0;
    for (int i = 0; i < g->n_meta; i++)
        if (strncmp(g->meta[i].key, "parallax.", 9) == 0) return 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        if (!n->dead && (n->op == PX_OP_Dropout || n->op == PX_OP_BatchNormalization)) return 0;
    }
    note(w,
         "this PyTorch export has no Dropout node. torch.onnx.export leaves Dropout out unless it "
         "exports in training mode: if the module has Dropout, this program trains without it; "
         "%s (or use parallax.export, which does)",
         FIX);
    return 1;
}

/* The first all-zero row of a table read only by Gather on axis 0, or -1. */
static int64_t zero_row(const px_value *v) {
    if (!is_weight(v) || v->shape.rank != 2 || v->shape.dims[0] < 2 || !v->data || v->n_uses == 0)
        return -1;
    for (int u = 0; u < v->n_uses; u++) {
        const px_node *n = v->uses[u].node;
        if (n->op != PX_OP_Gather || v->uses[u].index != 0 || px_attr_int(n, "axis", 0) != 0)
            return -1;
    }
    int64_t rows = v->shape.dims[0], cols = v->shape.dims[1], found = -1, nonzero = 0;
    for (int64_t r = 0; r < rows; r++) {
        int zero = 1;
        for (int64_t c = 0; c < cols && zero; c++)
            zero = px_tensor_get_f64(v->data, r * cols + c) == 0;
        if (zero && found < 0) found = r;
        nonzero |= !zero;
    }
    return nonzero ? found : -1; /* an all-zero table is just initialized that way */
}

static int check_padding_rows(const px_graph *g, const px_model_meta *m, px_diag *w) {
    int count = 0;
    for (int i = 0; i < g->n_inits; i++) {
        const px_value *v = g->inits[i];
        int64_t r = zero_row(v);
        if (r < 0 || px_model_meta_padding_row(m, v->name) == r) continue;
        count++;
        px_warning(
            w,
            "row %lld of embedding table '%s' is all zeros: it looks like the padding_idx row "
            "of an nn.Embedding, which PyTorch never trains; here it trains like any row that "
            "a batch reads. Export with python/parallax, which records padding_idx in the "
            "model's metadata so that the row is never updated (docs/metadata.md), keep padding "
            "ids out of the batches, or --freeze '%s' if the whole table is fixed",
            (long long)r, v->name, v->name);
    }
    return count;
}

int px_check_export(const px_graph *g, const px_model_meta *m, px_diag *w) {
    return check_tied(g, w) + check_eval_mode(g, w) + check_dropout_gone(g, w) +
           check_padding_rows(g, m, w);
}
