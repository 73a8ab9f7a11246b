/* Printers for the graph IR: a readable text listing, Graphviz DOT, and the
 * string/shape escaping that the JSON writer of the driver builds on.
 *
 * Printers write to a caller-supplied stream and never print anything else;
 * they return 0, or -1 with an error in d when the stream reports a write
 * error. Names in a model are arbitrary strings (quotes, newlines, invalid
 * UTF-8...), so every printer escapes them for its own format. */
#ifndef PX_PRINT_H
#define PX_PRINT_H

#include "graph.h"

#include <stdio.h>

/* Text listing: header, inputs (dtype/shape), initializers and constants
 * (dtype/shape/bytes), outputs, then one line per node:
 *   %out1, %out2 = Op[attr=value, ...](%in1, none, %in3)  # node_name -> float[2,3], int64[]
 * Omitted optional inputs/outputs print as `none`. */
int px_print_text(FILE *out, const px_graph *g, px_diag *d);

/* Graphviz: nodes are boxes labelled "op\nname", graph inputs, initializers
 * and constants are ellipses, graph outputs are double octagons; every use of
 * a value is an edge labelled "name\ndtype[shape]". */
int px_print_dot(FILE *out, const px_graph *g, px_diag *d);

/* Which rewrite put node n into the graph: "tensor_parallel" (the ops of
 * --tp), "pipeline_parallel" (the transfers, gradient owners and broadcasts
 * of --pp), "parallax" (another op of the ai.parallax domain: autodiff, the
 * optimizer, communication), or NULL (an op of the model). The DOT and JSON
 * outputs mark inserted nodes with it. */
const char *px_node_inserted_by(const px_node *n);

/* A value name as the text listing shows it: `%name` when the name is made of
 * letters, digits, non-ASCII UTF-8 and `_ . / : -` only, else `%"..."` with
 * C-style escapes (\" \\ \n \t \xNN) so one value is always one token. */
void px_print_text_name(FILE *out, const char *name);

/* The same quoting without the `%`: for node names, ops and attribute names. */
void px_print_text_token(FILE *out, const char *s);

/* A JSON string literal (with the quotes): escapes `"`, `\` and control
 * characters, and replaces bytes that are not valid UTF-8 with U+FFFD so the
 * output is always valid JSON. NULL prints as `null`. */
void px_print_json_string(FILE *out, const char *s);

/* A shape as a JSON value: null when the rank is unknown, else an array whose
 * entries are integers (known dims), strings (symbolic dims, by name) or null
 * (unknown dims). */
void px_print_json_shape(FILE *out, const px_shape *s);

/* Length of the valid UTF-8 sequence starting at s (1..4), or 0 when s does
 * not start one (stray continuation byte, overlong form, surrogate, > U+10FFFF,
 * truncated). s must be NUL-terminated. */
int px_utf8_seq_len(const unsigned char *s);

#endif
