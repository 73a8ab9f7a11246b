#include "train_program.h"

#include "onnx_io.h"

static px_graph *train_program(const char *model, const px_bindings *b, px_train_config *cfg,
                               px_model_meta *meta, px_train_plan *plan, px_diag *d) {
    px_import_opts io = {.allow_unsupported = 0};
    px_graph *g = px_onnx_load_file(model, &io, d);
    if (!g) return NULL;
    cfg->spec.meta = meta;
    if (px_model_meta_read(g, meta, d) || px_pass_apply_ties(g, meta, d) ||
        px_pipeline_train(g, b, cfg, 1, plan, d) != 0) {
        px_graph_free(g);
        return NULL;
    }
    return g;
}

int px_train_program_or_why(const char *model, const px_bindings *b, px_train_config *cfg,
                            px_built_program *out, char *why, size_t cap) {
    px_diag *d = px_diag_scratch(why, cap);
    if (!d) return -1;
    out->graph = train_program(model, b, cfg, &out->meta, &out->plan, d);
    px_diag_scratch_end(d, !out->graph, why, cap);
    return out->graph ? 0 : -1;
}

void px_built_program_free(px_built_program *p) {
    px_train_plan_free(&p->plan);
    px_model_meta_free(&p->meta);
    px_graph_free(p->graph);
    p->graph = NULL;
}
