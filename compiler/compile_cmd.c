/* `parallaxc compile`: load, fold (inference) or build the training step
 * (autodiff, optimizer, communication), generate native code, link. */
#include "compile_cmd.h"

#include "compile_info.h"
#include "emit.h"
#include "file_atomic.h"
#include "graph_clone.h"
#include "graph_release.h"
#include "eval_mode.h"
#include "export_checks.h"
#include "onnx_io.h"
#include "print.h"
#include "print_json.h"
#include "shape_infer.h"
#include "train.h"
#include "weights_source.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The original model without the trained initializers, serialized twice:
 * as it is, what --save completes with the trained values, and in eval mode
 * (as PyTorch's model.eval()), what --save-infer cuts down and completes. */
typedef struct model_bases {
    void *train, *infer;
    size_t train_len, infer_len;
} model_bases;

/* orig: the model as loaded (taken over), or NULL to load it again. */
static int save_bases(const char *model, px_graph *orig, const px_train_plan *tp, model_bases *b,
                      px_diag *d) {
    px_import_opts io = {0};
    if (!orig && !(orig = px_onnx_load_file(model, &io, d))) return -1;
    for (int i = 0; i < tp->n_vars; i++) {
        px_value *v = px_graph_find_value(orig, tp->vars[i].value->name);
        if (v && v->kind == PX_VALUE_INITIALIZER) v->omit_in_export = 1;
    }
    for (int i = 0; i < tp->n_tied; i++) { /* written again from their variables */
        px_value *v = px_graph_find_value(orig, tp->tied[i].copy->name);
        if (v && v->kind == PX_VALUE_INITIALIZER) v->omit_in_export = 1;
    }
    int rc = px_onnx_save_buffer(orig, &b->train, &b->train_len, d);
    /* The served model's outputs may be any value: each gets its type and
     * shape (symbolic batch) in value_info. Where shape inference cannot do
     * that before binding, the values lack them and --save-infer serves the
     * model's own outputs only; training is not held up by it. */
    px_diag *quiet = calloc(1, sizeof *quiet);
    if (!rc && !quiet) rc = px_error(d, "out of memory");
    if (!rc) {
        px_diag_init(quiet);
        rc = px_pass_eval_mode(orig, d);
    }
    if (!rc) (void)px_infer_shapes(orig, quiet);
    if (!rc) rc = px_onnx_save_buffer(orig, &b->infer, &b->infer_len, d);
    free(quiet);
    px_graph_free(orig);
    return rc;
}

/* --emit-graph FILE: the graph compile generates code for. */
static int write_emit_graph(const px_graph *g, const px_cli *cli, const px_train_plan *plan,
                            px_diag *d) {
    const char *path = cli->emit_graph;
    if (cli->emit_format == PX_FORMAT_ONNX) {
        px_export_opts eo = {.external_threshold = 0};
        return px_onnx_save_file(g, path, &eo, d);
    }
    px_atomic_file a;
    char err[4400];
    if (px_atomic_open(&a, path, err, sizeof err)) return px_error(d, "--emit-graph: %s", err);
    FILE *f = a.f;
    int rc = -1;
    switch (cli->emit_format) {
    case PX_FORMAT_TEXT: rc = px_print_text(f, g, d); break;
    case PX_FORMAT_DOT: rc = px_print_dot(f, g, d); break;
    case PX_FORMAT_JSON: {
        px_traffic_prediction pred;
        if (plan) px_predict_traffic(plan, 1, NULL, &pred);
        px_inspect_doc doc = {.model = cli->model,
                              .stage = cli->infer ? "folded" : "parallel",
                              .ranks = 1,
                              .g = g,
                              .plan = plan,
                              .predicted = plan ? &pred : NULL};
        rc = px_print_inspect_json(f, &doc, d);
        break;
    }
    default: rc = px_error(d, "internal error: --emit-graph format");
    }
    if (rc) {
        px_atomic_abort(&a); /* the old file, if any, stays */
        return rc;
    }
    if (px_atomic_commit(&a, err, sizeof err)) return px_error(d, "--emit-graph: %s", err);
    return 0;
}

/* The model the program will read its weights from at start: its absolute
 * path (the program may run from another folder) and its initializers. */
static int open_weights(const char *model, char *abs, px_wsrc *src, px_diag *d) {
    char err[8800];
    if (!realpath(model, abs))
        return px_error(d, "cannot resolve the path of '%s': %s", model, strerror(errno));
    if (px_wsrc_open(src, abs, err, sizeof err)) return px_error(d, "%s", err);
    return 0;
}

/* -o PROGRAM must name a file in a folder that exists and can be written:
 * checked before any work, so the linker never meets a folder there. */
static int check_output_path(const char *path, px_diag *d) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t n = strlen(path);
        while (n > 1 && path[n - 1] == '/') n--;
        return px_error(d, "-o %s is a folder: name the program to write, e.g. -o %.*s/train", path,
                        (int)n, path);
    }
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    if (stat(dir, &st) != 0) return px_error(d, "-o %s: folder '%s' does not exist", path, dir);
    if (!S_ISDIR(st.st_mode)) return px_error(d, "-o %s: '%s' is not a folder", path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return px_error(d, "-o %s: cannot write in folder '%s': %s", path, dir, strerror(errno));
    return 0;
}

int px_warn_trained_set(const px_graph *g, const px_train_spec *spec, int list, px_diag *d) {
    px_diag *w = calloc(1, sizeof *w);
    if (!w) return px_error(d, "out of memory");
    px_diag_init(w);
    px_check_export(g, spec->meta, w);
    px_check_trained_set(g, spec, list, w);
    fputs(w->text, stderr);
    free(w);
    return 0;
}

int px_compile_command(const px_cli *cli, px_diag *d) {
    if (check_output_path(cli->output, d)) return -1;
    px_import_opts io = {0};
    px_graph *g = px_onnx_load_file(cli->model, &io, d);
    if (!g) return -1;
    int rc = -1;
    static char abs[PATH_MAX];
    px_wsrc src = {0};
    int src_open = 0;
    px_train_config cfg;
    px_train_plan plan = {0};
    model_bases bases = {0};
    px_graph *orig = NULL;
    px_model_meta meta = {0};
    char *info = NULL;
    px_codegen_opts o = {.opt_level = 2, .model_path = cli->model};
    if (cli->infer) {
        /* eval mode, and only what the requested outputs need: the labels
         * that only the loss reads are then no input of the program */
        if (cli->n_outputs && px_pass_select_outputs(g, cli->n_outputs, cli->outputs, d))
            goto cleanup;
        if (px_pass_eval_mode(g, d) || px_pipeline_fold(g, &cli->bindings, d)) goto cleanup;
        if (cli->n_outputs) px_pass_drop_unused_inputs(g);
    } else {
        /* The model as loaded, for the bases: a copy costs less than loading
         * it again (models with subgraphs or external data are loaded again). */
        if (px_graph_clonable(g) && !(orig = px_graph_clone(g, d))) goto cleanup;
        /* exports that would train a different model than the PyTorch module */
        if (px_model_meta_read(g, &meta, d)) goto cleanup;
        px_train_config_from_cli(cli, &cfg);
        cfg.spec.meta = &meta;
        if (px_warn_trained_set(g, &cfg.spec, 1, d)) goto cleanup;
        if (px_pass_apply_ties(g, &meta, d)) goto cleanup;
        if (px_pipeline_train(g, &cli->bindings, &cfg, 1, &plan, d)) goto cleanup;
        if (px_require_batch(g, d)) goto cleanup;
        int rc_bases = save_bases(cli->model, orig, &plan, &bases, d);
        orig = NULL;
        if (rc_bases) goto cleanup;
        if (!(info = px_compile_info_json(cli, &cfg, &plan, g, d))) goto cleanup;
        o.compile_info = info;
        o.infer_base = bases.infer;
        o.infer_base_bytes = bases.infer_len;
        o.train = &plan;
        o.train_cfg = &cfg;
        o.onnx_base = bases.train;
        o.onnx_base_bytes = bases.train_len;
    }
    if (cli->emit_graph && write_emit_graph(g, cli, cli->infer ? NULL : &plan, d)) goto cleanup;
    if (open_weights(cli->model, abs, &src, d)) goto cleanup;
    src_open = 1;
    o.weights_path = abs;
    o.weights_src = &src;
    /* PX_NO_FUSION=1 makes every node call its runtime kernel: a debugging aid
     * to tell a fusion bug from a kernel bug. */
    const char *nf = getenv("PX_NO_FUSION");
    o.no_fusion = nf && *nf == '1';
    /* PX_EMIT_LLVM=FILE writes the optimized LLVM module as text (for reading
     * what was generated, e.g. whether a loop vectorized). */
    o.emit_llvm = getenv("PX_EMIT_LLVM");
    if (px_compile_graph(g, &o, cli->output, d)) goto cleanup;
    rc = 0;
cleanup:
    if (src_open) px_wsrc_close(&src);
    free(bases.train);
    free(bases.infer);
    free(info);
    px_train_plan_free(&plan);
    px_model_meta_free(&meta);
    px_graph_free(orig);
    px_graph_release(g);
    return rc;
}
