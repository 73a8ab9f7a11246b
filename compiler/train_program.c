#include "train_program.h"

#include "onnx_io.h"

px_graph *px_train_program(const char *model, const px_bindings *b, px_train_config *cfg,
                           int parallel, px_model_meta *meta, px_train_plan *plan, px_diag *d) {
    px_import_opts io = {.allow_unsupported = 0};
    px_graph *g = px_onnx_load_file(model, &io, d);
    if (!g) return NULL;
    cfg->spec.meta = meta;
    if (px_model_meta_read(g, meta, d) || px_pass_apply_ties(g, meta, d) ||
        px_pipeline_train(g, b, cfg, parallel, plan, d) != 0) {
        px_graph_free(g);
        return NULL;
    }
    return g;
}
