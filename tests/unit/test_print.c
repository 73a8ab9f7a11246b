/* Escaping in the printers: odd names (quotes, backslashes, newlines,
 * control characters, invalid UTF-8) must come out as one well-formed token
 * in text, a valid JSON string, and a valid DOT label. */
#include "graph.h"
#include "print.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct capture {
    char *buf;
    size_t len;
    FILE *f;
} capture;

static void cap_open(capture *c) {
    c->buf = NULL;
    c->len = 0;
    c->f = open_memstream(&c->buf, &c->len);
    cr_assert_not_null(c->f);
}

/* Closes the stream; the caller frees c->buf. */
static const char *cap_close(capture *c) {
    fclose(c->f);
    return c->buf;
}

static char *json_of(const char *s) {
    capture c;
    cap_open(&c);
    px_print_json_string(c.f, s);
    cap_close(&c);
    return c.buf;
}

static char *text_name_of(const char *s) {
    capture c;
    cap_open(&c);
    px_print_text_name(c.f, s);
    cap_close(&c);
    return c.buf;
}

Test(json_string, plain_and_null) {
    char *s = json_of("weight_1");
    cr_assert_str_eq(s, "\"weight_1\"");
    free(s);
    s = json_of(NULL);
    cr_assert_str_eq(s, "null");
    free(s);
    s = json_of("");
    cr_assert_str_eq(s, "\"\"");
    free(s);
}

Test(json_string, quotes_backslashes_and_controls) {
    char *s = json_of("a\"b\\c\nd\te\rf\bg\fh\x01i\x1fj");
    cr_assert_str_eq(s, "\"a\\\"b\\\\c\\nd\\te\\rf\\bg\\fh\\u0001i\\u001fj\"");
    free(s);
}

Test(json_string, utf8_kept_invalid_replaced) {
    /* é (2 bytes), € (3 bytes), 😀 (4 bytes) pass through; a lone
     * continuation byte, 0xFF, an overlong '/' and a truncated sequence are
     * each replaced by U+FFFD. */
    char *s = json_of("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80|\x80|\xFF|\xC0\xAF|\xE2\x82");
    cr_assert_str_eq(s, "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80|\\ufffd|\\ufffd|"
                        "\\ufffd\\ufffd|\\ufffd\\ufffd\"");
    free(s);
    /* An encoded surrogate (U+D800) is not valid UTF-8 either. */
    s = json_of("\xED\xA0\x80");
    cr_assert_str_eq(s, "\"\\ufffd\\ufffd\\ufffd\"");
    free(s);
}

Test(utf8, sequence_lengths) {
    cr_assert_eq(px_utf8_seq_len((const unsigned char *)"a"), 1);
    cr_assert_eq(px_utf8_seq_len((const unsigned char *)"\xC3\xA9"), 2);
    cr_assert_eq(px_utf8_seq_len((const unsigned char *)"\xE2\x82\xAC"), 3);
    cr_assert_eq(px_utf8_seq_len((const unsigned char *)"\xF4\x8F\xBF\xBF"), 4); /* U+10FFFF */
    cr_assert_eq(px_utf8_seq_len((const unsigned char *)"\xF4\x90\x80\x80"), 0); /* > U+10FFFF */
    cr_assert_eq(px_utf8_seq_len((const unsigned char *)"\xE0\x80\x80"), 0);     /* overlong */
    cr_assert_eq(px_utf8_seq_len((const unsigned char *)"\xC3"), 0);             /* truncated */
}

Test(json_shape, known_symbolic_unknown) {
    px_shape s = px_shape_unknown();
    capture c;
    cap_open(&c);
    px_print_json_shape(c.f, &s);
    fputc(' ', c.f);
    s = px_shape_scalar();
    px_print_json_shape(c.f, &s);
    fputc(' ', c.f);
    int64_t dims[3] = {-1, 3, -1};
    s = px_shape_make(3, dims);
    px_shape_set_sym(&s, 0, "batch\"x");
    px_print_json_shape(c.f, &s);
    cr_assert_str_eq(cap_close(&c), "null [] [\"batch\\\"x\", 3, null]");
    free(c.buf);
}

Test(text_name, plain_names_stay_bare) {
    char *s = text_name_of("/encoder/layer.0/MatMul:0");
    cr_assert_str_eq(s, "%/encoder/layer.0/MatMul:0");
    free(s);
    s = text_name_of("\xC3\xA9t\xC3\xA9");
    cr_assert_str_eq(s, "%\xC3\xA9t\xC3\xA9");
    free(s);
}

Test(text_name, odd_names_are_quoted) {
    char *s = text_name_of("a b\"c\\d\ne\x01\x7f\xFF");
    cr_assert_str_eq(s, "%\"a b\\\"c\\\\d\\ne\\x01\\x7f\\xff\"");
    free(s);
    s = text_name_of("");
    cr_assert_str_eq(s, "%\"\"");
    free(s);
    /* A name that would read as two values or an assignment. */
    s = text_name_of("x, %y = z");
    cr_assert_str_eq(s, "%\"x, %y = z\"");
    free(s);
}

/* in"put\x  and  c<0x01>  --Add "node\n"1""-->  a<newline>b  (a graph output) */
static px_graph *odd_graph(void) {
    px_diag d;
    px_diag_init(&d);
    px_graph *g = px_graph_new("odd \"graph\"");
    cr_assert_not_null(g);
    int64_t dims[2] = {-1, 2};
    px_shape shape = px_shape_make(2, dims);
    px_shape_set_sym(&shape, 0, "batch");
    px_value *x = px_graph_add_value(g, "in\"put\\x", PX_F32, &shape, &d);
    px_value *y = px_graph_add_value(g, "c\x01", PX_F32, &shape, &d);
    px_value *z = px_graph_add_value(g, "a\nb", PX_F32, &shape, &d);
    cr_assert(x && y && z, "%s", d.text);
    px_graph_add_input(g, x);
    px_graph_add_input(g, y);
    px_value *ins[2] = {x, y};
    px_node *n = px_graph_add_node(g, "Add", "", "node\n\"1\"", 2, ins, 1, &z);
    cr_assert_not_null(n);
    px_graph_add_output(g, z);
    return g;
}

Test(text_listing, odd_names_one_line_per_node) {
    px_graph *g = odd_graph();
    px_diag d;
    px_diag_init(&d);
    capture c;
    cap_open(&c);
    cr_assert_eq(px_print_text(c.f, g, &d), 0, "%s", d.text);
    const char *text = cap_close(&c);
    cr_assert_not_null(strstr(text, "  %\"a\\nb\" = Add(%\"in\\\"put\\\\x\", %\"c\\x01\")  # "
                                    "\"node\\n\\\"1\\\"\" -> float[batch,2]\n"),
                       "listing was:\n%s", text);
    cr_assert_not_null(strstr(text, "  %\"in\\\"put\\\\x\": float[batch,2]\n"), "%s", text);
    /* Every line is a header, a declaration or a node: no name broke a line. */
    int lines = 0;
    for (const char *p = text; *p; p++) lines += *p == '\n';
    /* graph, inputs + 2, initializers, outputs + 1, nodes + 1 */
    cr_assert_eq(lines, 9, "listing was:\n%s", text);
    free(c.buf);
    px_graph_free(g);
}

Test(text_listing, attributes_and_omitted_inputs) {
    px_diag d;
    px_diag_init(&d);
    px_graph *g = px_graph_new("attrs");
    int64_t dims[1] = {4};
    px_shape shape = px_shape_make(1, dims);
    px_value *x = px_graph_add_value(g, "x", PX_F32, &shape, &d);
    px_value *y = px_graph_add_value(g, "y", PX_F32, &shape, &d);
    cr_assert(x && y, "%s", d.text);
    px_graph_add_input(g, x);
    px_value *ins[3] = {x, NULL, NULL};
    px_node *n = px_graph_add_node(g, "Clip", "", "", 3, ins, 1, &y);
    cr_assert_not_null(n);
    px_node_set_attr_float(n, "alpha", 0.1f);
    px_node_set_attr_ints(n, "perm", 3, (const int64_t[]){1, 0, -2});
    px_node_set_attr_string(n, "mode", "a\"b");
    px_graph_add_output(g, y);
    capture c;
    cap_open(&c);
    cr_assert_eq(px_print_text(c.f, g, &d), 0, "%s", d.text);
    const char *text = cap_close(&c);
    cr_assert_not_null(
        strstr(text, "  %y = Clip[alpha=0.1, perm=[1, 0, -2], mode=\"a\\\"b\"](%x, none, none)"
                     "  # -> float[4]\n"),
        "listing was:\n%s", text);
    free(c.buf);
    px_graph_free(g);
}

Test(dot, odd_names_escaped_in_labels) {
    px_graph *g = odd_graph();
    px_diag d;
    px_diag_init(&d);
    capture c;
    cap_open(&c);
    cr_assert_eq(px_print_dot(c.f, g, &d), 0, "%s", d.text);
    const char *dot = cap_close(&c);
    cr_assert_not_null(strstr(dot, "digraph \"odd \\\"graph\\\"\" {"), "%s", dot);
    cr_assert_not_null(strstr(dot, "label=\"Add\\nnode\\n\\\"1\\\"\""), "%s", dot);
    cr_assert_not_null(strstr(dot, "label=\"in\\\"put\\\\x\\nfloat[batch,2]\""), "%s", dot);
    cr_assert_not_null(strstr(dot, "label=\"c\\\\x01\\nfloat[batch,2]\""), "%s", dot);
    /* No raw control characters other than line ends anywhere. */
    for (const char *p = dot; *p; p++)
        cr_assert(*p == '\n' || (unsigned char)*p >= 0x20, "raw control byte in DOT output");
    /* Quotes balance on every line (escaped ones excluded). */
    int in_string = 0;
    for (const char *p = dot; *p; p++) {
        if (*p == '\\' && in_string && p[1]) {
            p++;
            continue;
        }
        if (*p == '"') in_string = !in_string;
        if (*p == '\n') cr_assert(!in_string, "a DOT string spans lines");
    }
    free(c.buf);
    px_graph_free(g);
}
