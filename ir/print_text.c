/* The text listing of a graph, plus the escaping helpers shared by the
 * printers (text tokens, JSON strings and shapes, UTF-8 validation). */
#include "print.h"
#include "text_escape.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Tensors with at most this many elements show their contents inline. */
#define PREVIEW_MAX_ELEMS 8

/* ---- UTF-8 and escaping ---- */

int px_utf8_seq_len(const unsigned char *s) {
    return px_utf8_len((const char *)s); /* common/text_escape.c: one rule */
}

void px_print_json_string(FILE *out, const char *s) {
    px_json_string(out, s);
}

void px_print_json_shape(FILE *out, const px_shape *s) {
    if (s->rank < 0) {
        fputs("null", out);
        return;
    }
    fputc('[', out);
    for (int i = 0; i < s->rank; i++) {
        if (i) fputs(", ", out);
        if (s->dims[i] >= 0)
            fprintf(out, "%" PRId64, s->dims[i]);
        else if (px_shape_sym(s, i))
            px_print_json_string(out, px_shape_sym(s, i));
        else
            fputs("null", out);
    }
    fputc(']', out);
}

static int is_plain_char(unsigned c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '/' || c == ':' || c == '-';
}

/* 1 if s can be printed bare: non-empty, plain ASCII characters or valid
 * multi-byte UTF-8 (non-ASCII names, e.g. Chinese layer names, stay readable). */
static int is_plain_token(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    if (!*p) return 0;
    while (*p) {
        if (*p < 0x80) {
            if (!is_plain_char(*p)) return 0;
            p++;
        } else {
            int n = px_utf8_seq_len(p);
            if (n == 0) return 0;
            p += n;
        }
    }
    return 1;
}

/* A double-quoted C-style literal; valid UTF-8 is kept, anything else is \xNN. */
static void print_quoted(FILE *out, const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    fputc('"', out);
    while (p < end) {
        unsigned c = *p;
        int n = 1;
        switch (c) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\t': fputs("\\t", out); break;
        case '\r': fputs("\\r", out); break;
        default:
            if (c < 0x20 || c == 0x7F) {
                fprintf(out, "\\x%02x", c);
            } else if (c < 0x80) {
                fputc((int)c, out);
            } else if ((n = px_utf8_seq_len(p)) > 0 && p + n <= end) {
                fwrite(p, 1, (size_t)n, out);
            } else {
                n = 1;
                fprintf(out, "\\x%02x", c);
            }
        }
        p += n;
    }
    fputc('"', out);
}

void px_print_text_token(FILE *out, const char *s) {
    if (!s) s = "";
    if (is_plain_token(s))
        fputs(s, out);
    else
        print_quoted(out, s, strlen(s));
}

void px_print_text_name(FILE *out, const char *name) {
    fputc('%', out);
    px_print_text_token(out, name ? name : "");
}

/* ---- values, shapes, tensors ---- */

static void print_shape(FILE *out, const px_shape *s) {
    if (s->rank < 0) {
        fputs("[...]", out); /* rank unknown */
        return;
    }
    fputc('[', out);
    for (int i = 0; i < s->rank; i++) {
        if (i) fputc(',', out);
        if (s->dims[i] >= 0)
            fprintf(out, "%" PRId64, s->dims[i]);
        else if (px_shape_sym(s, i))
            px_print_text_token(out, px_shape_sym(s, i));
        else
            fputc('?', out);
    }
    fputc(']', out);
}

static void print_type(FILE *out, px_dtype t, const px_shape *s) {
    fputs(t == PX_UNDEFINED ? "?" : px_dtype_name(t), out);
    print_shape(out, s);
}

/* Shortest %g form that reads back as the same number (as a float when
 * is_double is 0: "0.1", not "0.100000001"). */
static void print_float(FILE *out, double v, int is_double) {
    char buf[64];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        if (is_double ? back == v : (float)back == (float)v) break;
    }
    fputs(buf, out);
}

static void print_tensor_elems(FILE *out, const px_tensor *t) {
    int64_t n = px_tensor_numel(t);
    fputc('{', out);
    for (int64_t i = 0; i < n; i++) {
        if (i) fputs(", ", out);
        if (t->dtype == PX_STRING) {
            const px_bytes *b = (const px_bytes *)t->data + i;
            print_quoted(out, b->data ? b->data : "", b->len);
        } else if (px_dtype_is_float(t->dtype)) {
            print_float(out, px_tensor_get_f64(t, i), t->dtype == PX_F64);
        } else if (t->dtype == PX_U64) {
            fprintf(out, "%" PRIu64, (uint64_t)px_tensor_get_i64(t, i));
        } else if (t->dtype == PX_C64 || t->dtype == PX_C128) {
            fputc('?', out); /* complex: no scalar accessor */
        } else {
            fprintf(out, "%" PRId64, px_tensor_get_i64(t, i));
        }
    }
    fputc('}', out);
}

/* dtype[shape], followed by the elements when there are only a few. */
static void print_tensor(FILE *out, const px_tensor *t) {
    print_type(out, t->dtype, &t->shape);
    int64_t n = px_tensor_numel(t);
    if (t->data && n >= 0 && n <= PREVIEW_MAX_ELEMS) print_tensor_elems(out, t);
}

static int64_t value_bytes(const px_value *v) {
    if (v->data) return (int64_t)v->data->nbytes;
    int64_t n = px_shape_numel(&v->shape), bytes;
    if (n < 0 || px_mul_checked(n, (int64_t)px_dtype_size(v->dtype), &bytes) != 0) return -1;
    return bytes;
}

static void print_value_decl(FILE *out, const px_value *v, int with_bytes) {
    fputs("  ", out);
    px_print_text_name(out, v->name);
    fputs(": ", out);
    print_type(out, v->dtype, &v->shape);
    if (with_bytes) {
        int64_t bytes = value_bytes(v);
        if (bytes >= 0)
            fprintf(out, "  %" PRId64 " bytes", bytes);
        else
            fputs("  ? bytes", out);
        int64_t n = v->data ? px_tensor_numel(v->data) : -1;
        if (v->data && n >= 0 && n <= PREVIEW_MAX_ELEMS) {
            fputs(" = ", out);
            print_tensor_elems(out, v->data);
        }
    }
    fputc('\n', out);
}

/* ---- attributes and nodes ---- */

static void print_attr_value(FILE *out, const px_attr *a) {
    if (a->ref_attr_name) {
        fputc('@', out);
        px_print_text_token(out, a->ref_attr_name);
        return;
    }
    switch (a->kind) {
    case PX_ATTR_FLOAT: print_float(out, a->f, 0); break;
    case PX_ATTR_INT: fprintf(out, "%" PRId64, a->i); break;
    case PX_ATTR_STRING: print_quoted(out, a->s.data ? a->s.data : "", a->s.len); break;
    case PX_ATTR_TENSOR:
    case PX_ATTR_SPARSE_TENSOR:
        if (a->t)
            print_tensor(out, a->t);
        else
            fputs("<tensor>", out);
        break;
    case PX_ATTR_GRAPH:
        fputs("<graph ", out);
        px_print_text_token(out, a->g && a->g->name ? a->g->name : "");
        fputc('>', out);
        break;
    case PX_ATTR_TYPE_PROTO:
        if (a->tp_shape) print_type(out, a->tp_dtype, a->tp_shape);
        break;
    case PX_ATTR_FLOATS:
    case PX_ATTR_INTS:
    case PX_ATTR_STRINGS:
    case PX_ATTR_TENSORS:
    case PX_ATTR_SPARSE_TENSORS:
    case PX_ATTR_GRAPHS:
    case PX_ATTR_TYPE_PROTOS:
        fputc('[', out);
        for (int i = 0; i < a->n; i++) {
            if (i) fputs(", ", out);
            if (a->kind == PX_ATTR_FLOATS)
                print_float(out, a->floats[i], 0);
            else if (a->kind == PX_ATTR_INTS)
                fprintf(out, "%" PRId64, a->ints[i]);
            else if (a->kind == PX_ATTR_STRINGS)
                print_quoted(out, a->strings[i].data ? a->strings[i].data : "", a->strings[i].len);
            else if (a->kind == PX_ATTR_GRAPHS)
                fputs("<graph>", out);
            else if (a->kind == PX_ATTR_TYPE_PROTOS)
                print_type(out, a->tp_dtypes[i], &a->tp_shapes[i]);
            else if (a->tensors && a->tensors[i])
                print_tensor(out, a->tensors[i]);
            else
                fputs("<tensor>", out);
        }
        fputc(']', out);
        break;
    default: fputs("<undefined>", out); break;
    }
}

static void print_value_list(FILE *out, px_value *const *vals, int n) {
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", out);
        if (vals[i])
            px_print_text_name(out, vals[i]->name);
        else
            fputs("none", out);
    }
}

static void print_node(FILE *out, const px_node *n) {
    fputs("  ", out);
    print_value_list(out, n->outputs, n->n_outputs);
    fputs(n->n_outputs ? " = " : "= ", out);
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) {
        px_print_text_token(out, n->domain);
        fputc('.', out);
    }
    px_print_text_token(out, n->op_type ? n->op_type : px_op_name(n->op));
    if (n->n_attrs) {
        fputc('[', out);
        for (int i = 0; i < n->n_attrs; i++) {
            if (i) fputs(", ", out);
            px_print_text_token(out, n->attrs[i].name ? n->attrs[i].name : "");
            fputc('=', out);
            print_attr_value(out, &n->attrs[i]);
        }
        fputc(']', out);
    }
    fputc('(', out);
    print_value_list(out, n->inputs, n->n_inputs);
    fputs(")  #", out);
    if (n->name && n->name[0]) {
        fputc(' ', out);
        px_print_text_token(out, n->name);
    }
    fputs(" ->", out);
    for (int i = 0; i < n->n_outputs; i++) {
        fputs(i ? ", " : " ", out);
        if (n->outputs[i])
            print_type(out, n->outputs[i]->dtype, &n->outputs[i]->shape);
        else
            fputs("none", out);
    }
    fputc('\n', out);
}

int px_print_text(FILE *out, const px_graph *g, px_diag *d) {
    fputs("graph ", out);
    px_print_text_token(out, g->name ? g->name : "");
    for (int i = 0; i < g->n_opsets; i++) {
        fputs(i ? ", " : "  # opset ", out);
        px_print_text_token(out, g->opsets[i].domain && g->opsets[i].domain[0] ? g->opsets[i].domain
                                                                               : "ai.onnx");
        fprintf(out, " %" PRId64, g->opsets[i].version);
    }
    fputc('\n', out);

    fprintf(out, "inputs (%d):\n", g->n_inputs);
    for (int i = 0; i < g->n_inputs; i++) print_value_decl(out, g->inputs[i], 0);

    fprintf(out, "initializers (%d):\n", g->n_inits);
    for (int i = 0; i < g->n_inits; i++) print_value_decl(out, g->inits[i], 1);

    /* Constants not produced by a node (e.g. made by folding) are listed like
     * initializers; Constant nodes show up among the nodes instead. */
    int n_consts = 0;
    for (int i = 0; i < g->n_values; i++) {
        const px_value *v = g->values[i];
        if (v->kind == PX_VALUE_CONSTANT && !v->producer) n_consts++;
    }
    if (n_consts) {
        fprintf(out, "constants (%d):\n", n_consts);
        for (int i = 0; i < g->n_values; i++) {
            const px_value *v = g->values[i];
            if (v->kind == PX_VALUE_CONSTANT && !v->producer) print_value_decl(out, v, 1);
        }
    }

    fprintf(out, "outputs (%d):\n", g->n_outputs);
    for (int i = 0; i < g->n_outputs; i++) print_value_decl(out, g->outputs[i], 0);

    int n_live = 0;
    for (int i = 0; i < g->n_nodes; i++) n_live += !g->nodes[i]->dead;
    fprintf(out, "nodes (%d):\n", n_live);
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i]->dead) print_node(out, g->nodes[i]);

    if (fflush(out) != 0 || ferror(out))
        return px_error(d, "could not write the text listing of graph '%s': %s",
                        g->name ? g->name : "", strerror(errno));
    return 0;
}
