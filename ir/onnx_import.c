/* ONNX import entry points: reading the file, parsing the ModelProto,
 * rejecting unsupported operators up front, model-level metadata. The graph
 * itself is built by onnx_import_graph.c. */
#include "control_flow.h"
#include "onnx_import_internal.h"
#include "file_read.h"
#include "opset_check.h"
#include "pb_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *nonempty(const char *s) {
    return s && *s ? s : NULL;
}

/* Names whose declared type (input, output, value_info) is not a tensor:
 * sequences, maps, optionals, sparse tensors. */
typedef struct name_list {
    const char **names;
    size_t n;
} name_list;

static int declares_non_tensor(const Onnx__ValueInfoProto *vi) {
    return vi->type && vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
           vi->type->value_case != ONNX__TYPE_PROTO__VALUE__NOT_SET;
}

static name_list collect_non_tensors(const Onnx__GraphProto *gp) {
    name_list l = {NULL, 0};
    size_t cap = gp->n_input + gp->n_output + gp->n_value_info;
    l.names = calloc(cap ? cap : 1, sizeof *l.names);
    if (!l.names) abort();
    const Onnx__ValueInfoProto *const *lists[3] = {
        (const Onnx__ValueInfoProto *const *)gp->input,
        (const Onnx__ValueInfoProto *const *)gp->output,
        (const Onnx__ValueInfoProto *const *)gp->value_info};
    size_t counts[3] = {gp->n_input, gp->n_output, gp->n_value_info};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < counts[k]; i++)
            if (declares_non_tensor(lists[k][i]) && lists[k][i]->name)
                l.names[l.n++] = lists[k][i]->name;
    return l;
}

static const char *find_name(const name_list *l, const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->names[i], name) == 0) return l->names[i];
    return NULL;
}

/* Why np cannot be compiled, or NULL if it can. buf holds the reason. */
static const char *unsupported_reason(const Onnx__NodeProto *np, const name_list *non_tensor,
                                      char *buf, size_t cap) {
    if (!nonempty(np->op_type)) return NULL; /* reported as malformed by the graph import */
    /* If / Loop: imported with their bodies, then rewritten or refused by name. */
    if (px_is_control_flow_op(np->op_type, np->domain)) return NULL;
    if (px_op_lookup(np->op_type, np->domain ? np->domain : "") == PX_OP_UNKNOWN)
        return "not in the op table";
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *a = np->attribute[i];
        if (a->g || a->n_graphs > 0 || a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ||
            a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS) {
            snprintf(buf, cap, "has subgraph attribute '%s'", a->name ? a->name : "");
            return buf;
        }
    }
    for (size_t i = 0; i < np->n_input + np->n_output; i++) {
        const char *v = i < np->n_input ? np->input[i] : np->output[i - np->n_input];
        if (find_name(non_tensor, v)) {
            snprintf(buf, cap, "uses '%s', which is not a tensor (sequence, map or optional)", v);
            return buf;
        }
    }
    return NULL;
}

/* One error for all unsupported nodes, so a user sees the whole list at once. */
static int check_supported(px_import_ctx *c, const Onnx__GraphProto *gp) {
    char buf[512];
    name_list non_tensor = collect_non_tensors(gp);
    int count = 0;
    for (size_t i = 0; i < gp->n_node; i++)
        if (unsupported_reason(gp->node[i], &non_tensor, buf, sizeof buf)) count++;
    if (count) {
        px_error(c->d, "unsupported operators in %s: %d node%s", c->model_name, count,
                 count == 1 ? "" : "s");
        for (size_t i = 0; i < gp->n_node; i++) {
            const Onnx__NodeProto *np = gp->node[i];
            const char *why = unsupported_reason(np, &non_tensor, buf, sizeof buf);
            if (why)
                px_note(c->d, "node '%s' (%s::%s): %s", np->name ? np->name : "",
                        nonempty(np->domain) ? np->domain : "ai.onnx", np->op_type, why);
        }
    }
    free(non_tensor.names);
    return count ? -1 : 0;
}

static int import_model_fields(px_import_ctx *c, px_graph *g, const Onnx__ModelProto *m) {
    g->ir_version = m->has_ir_version ? m->ir_version : 0;
    g->producer_name = pxi_strdup(nonempty(m->producer_name));
    g->producer_version = pxi_strdup(nonempty(m->producer_version));
    g->model_domain = pxi_strdup(nonempty(m->domain));
    g->model_doc = pxi_strdup(nonempty(m->doc_string));
    g->model_version = m->has_model_version ? m->model_version : 0;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        const char *domain = o->domain ? o->domain : "";
        if (!o->has_version || o->version < 1)
            return px_error(c->d, "%s: opset_import for domain '%s' has invalid version %lld",
                            c->model_name, *domain ? domain : "ai.onnx",
                            (long long)(o->has_version ? o->version : 0));
        px_graph_set_opset(g, domain, o->version);
    }
    /* Models before IR version 3 carried no opset_import and meant opset 1. */
    if (m->n_opset_import == 0) px_graph_set_opset(g, "", 1);
    if (m->n_metadata_props) {
        g->meta = calloc(m->n_metadata_props, sizeof *g->meta);
        if (!g->meta) abort();
        for (size_t i = 0; i < m->n_metadata_props; i++) {
            const Onnx__StringStringEntryProto *e = m->metadata_props[i];
            g->meta[g->n_meta].key = pxi_strdup(e->key ? e->key : "");
            g->meta[g->n_meta].value = pxi_strdup(e->value ? e->value : "");
            g->n_meta++;
        }
    }
    return 0;
}

static px_graph *load_model(const void *buf, size_t len, const char *base_dir,
                            const char *model_name, const px_import_opts *opts, px_diag *d) {
    px_import_ctx c = {model_name, base_dir, opts ? opts->allow_unsupported : 0, d};
    px_graph *g = NULL;
    if (len == 0) {
        px_error(d, "%s is empty: not an ONNX model", model_name);
        return NULL;
    }
    px_pb_scan_result scan;
    if (px_pb_scan(&onnx__model_proto__descriptor, buf, len, PX_PB_MAX_DEPTH, &scan)) {
        if (scan.problem == PX_PB_TOO_DEEP)
            px_error(d,
                     "%s nests messages more than %d levels deep (types or subgraphs): refused "
                     "before parsing",
                     model_name, PX_PB_MAX_DEPTH);
        else
            px_error(d, "%s: a %s.%s string contains a NUL byte: not a valid ONNX model",
                     model_name, scan.message, scan.field);
        return NULL;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    if (!m) {
        px_error(d,
                 "%s is not a valid ONNX model: its %zu bytes do not parse as a ModelProto "
                 "(truncated or not ONNX)",
                 model_name, len);
        return NULL;
    }
    if (!m->graph) {
        px_error(d, "%s has no graph: not an ONNX model, or an empty one", model_name);
        goto cleanup;
    }
    if (!c.allow_unsupported && check_supported(&c, m->graph)) goto cleanup;
    g = pxi_import_graph(&c, m->graph, NULL);
    if (g && (import_model_fields(&c, g, m) || px_check_opsets(g, model_name, d) ||
              px_lower_control_flow(
                  g, PX_CF_DEFER_IF | (c.allow_unsupported ? PX_CF_ALLOW_UNSUPPORTED : 0), d) < 0)) {
        px_graph_free(g);
        g = NULL;
    }
cleanup:
    onnx__model_proto__free_unpacked(m, NULL);
    return g;
}

px_graph *px_onnx_load_buffer(const void *buf, size_t len, const char *base_dir,
                              const px_import_opts *opts, px_diag *d) {
    return load_model(buf, len, base_dir, "<buffer>", opts, d);
}

px_graph *px_onnx_load_file(const char *path, const px_import_opts *opts, px_diag *d) {
    size_t len = 0;
    /* protobuf-c needs the message in memory (and the message itself stays
     * under 2 GiB: big weights live in external data). */
    unsigned char *buf = px_read_regular_file(path, "model", &len, d);
    if (!buf) return NULL;
    /* External data resolves against the model's folder. */
    char *dir = pxi_strdup(path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == dir)
        slash[1] = '\0'; /* "/model.onnx" */
    else
        *slash = '\0';
    px_graph *g = load_model(buf, len, dir, path, opts, d);
    free(dir);
    free(buf);
    return g;
}
