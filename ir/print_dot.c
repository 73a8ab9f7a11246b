/* Graphviz DOT output of a graph. DOT ids come from the IR's numbering
 * ("n3" = node id 3, "v7" = value id 7, "o0" = first graph output) so that
 * any name, however odd, only ever appears inside an escaped label. */
#include "print.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

/* Appends s to a DOT double-quoted string. A newline becomes DOT's "\n" line
 * break; other control characters are shown as visible "\xNN" text (a literal
 * backslash in DOT is "\\"); bytes that are not UTF-8 become U+FFFD because
 * Graphviz rejects invalid UTF-8. */
static void dot_escape(FILE *out, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', out), fputc((int)c, out), p++;
        } else if (c == '\n') {
            fputs("\\n", out), p++;
        } else if (c < 0x20 || c == 0x7F) {
            fprintf(out, "\\\\x%02x", c), p++;
        } else if (c < 0x80) {
            fputc((int)c, out), p++;
        } else {
            int n = px_utf8_seq_len(p);
            if (n == 0) {
                fputs("\xEF\xBF\xBD", out); /* U+FFFD */
                p++;
            } else {
                fwrite(p, 1, (size_t)n, out);
                p += n;
            }
        }
    }
}

static void dot_type(FILE *out, const px_value *v) {
    dot_escape(out, v->dtype == PX_UNDEFINED ? "?" : px_dtype_name(v->dtype));
    if (v->shape.rank < 0) {
        fputs("[...]", out);
        return;
    }
    fputc('[', out);
    for (int i = 0; i < v->shape.rank; i++) {
        if (i) fputc(',', out);
        if (v->shape.dims[i] >= 0)
            fprintf(out, "%" PRId64, v->shape.dims[i]);
        else if (px_shape_sym(&v->shape, i))
            dot_escape(out, px_shape_sym(&v->shape, i));
        else
            fputc('?', out);
    }
    fputc(']', out);
}

/* The DOT id of whatever a value's edges start from: its producer node, or
 * the ellipse drawn for a value that no node produces. */
static void dot_source(FILE *out, const px_value *v) {
    if (v->producer)
        fprintf(out, "n%d", v->producer->id);
    else
        fprintf(out, "v%d", v->id);
}

static void dot_edge_label(FILE *out, const px_value *v) {
    fputs(" [label=\"", out);
    dot_escape(out, v->name);
    fputs("\\n", out);
    dot_type(out, v);
    fputs("\"];\n", out);
}

const char *px_node_inserted_by(const px_node *n) {
    if (!n->domain || strcmp(n->domain, PX_DOMAIN_PARALLAX) != 0) return NULL;
    switch (n->op) {
    case PX_OP_TPSlice:
    case PX_OP_TPSliceGrad:
    case PX_OP_TPAllReduce:
    case PX_OP_TPCopy: return "tensor_parallel";
    case PX_OP_PPTransfer:
    case PX_OP_PPBroadcast: return "pipeline_parallel";
    default: return "parallax";
    }
}

int px_print_dot(FILE *out, const px_graph *g, px_diag *d) {
    fputs("digraph \"", out);
    dot_escape(out, g->name ? g->name : "graph");
    fputs("\" {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n"
          "  edge [fontname=\"Helvetica\", fontsize=8];\n",
          out);

    /* Values without a producer: graph inputs, initializers, constants and
     * values captured from an enclosing graph. */
    for (int i = 0; i < g->n_values; i++) {
        const px_value *v = g->values[i];
        if (v->producer) continue;
        if (v->kind == PX_VALUE_INTERMEDIATE && v->n_uses == 0 && !v->is_output) continue;
        const char *style = v->kind == PX_VALUE_INPUT ? ", style=filled, fillcolor=\"#d0e8ff\""
                            : v->kind == PX_VALUE_INITIALIZER
                                ? ", style=filled, fillcolor=\"#fff2c0\""
                                : "";
        fprintf(out, "  v%d [shape=ellipse%s, label=\"", v->id, style);
        dot_escape(out, v->name);
        fputs("\\n", out);
        dot_type(out, v);
        fputs("\"];\n", out);
    }

    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        if (n->dead) continue;
        const char *by = px_node_inserted_by(n);
        const char *fill =
            !by                                ? ""
            : !strcmp(by, "tensor_parallel")   ? ", style=filled, fillcolor=\"#ffd0d0\""
            : !strcmp(by, "pipeline_parallel") ? ", style=filled, fillcolor=\"#d0ffd8\""
                                               : ", style=filled, fillcolor=\"#e4e4e4\"";
        fprintf(out, "  n%d [shape=box%s, label=\"", n->id, fill);
        if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) {
            dot_escape(out, n->domain);
            fputc('.', out);
        }
        dot_escape(out, n->op_type ? n->op_type : px_op_name(n->op));
        if (n->name && n->name[0]) {
            fputs("\\n", out);
            dot_escape(out, n->name);
        }
        fputs("\"];\n", out);
    }

    /* One edge per use, so a value read twice by one node shows twice. */
    for (int i = 0; i < g->n_nodes; i++) {
        const px_node *n = g->nodes[i];
        if (n->dead) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            const px_value *v = n->inputs[k];
            if (!v) continue;
            fputs("  ", out);
            dot_source(out, v);
            fprintf(out, " -> n%d", n->id);
            dot_edge_label(out, v);
        }
    }

    for (int i = 0; i < g->n_outputs; i++) {
        const px_value *v = g->outputs[i];
        fprintf(out, "  o%d [shape=doubleoctagon, label=\"", i);
        dot_escape(out, v->name);
        fputs("\"];\n  ", out);
        dot_source(out, v);
        fprintf(out, " -> o%d", i);
        dot_edge_label(out, v);
    }
    fputs("}\n", out);

    if (fflush(out) != 0 || ferror(out))
        return px_error(d, "could not write the DOT graph of '%s': %s", g->name ? g->name : "",
                        strerror(errno));
    return 0;
}
