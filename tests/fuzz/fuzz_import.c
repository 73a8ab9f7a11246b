/* libFuzzer harness: ONNX bytes through the importer and the whole compile
 * pipeline up to saving ONNX, in process (no code generation or linking):
 * import, export of the imported graph, then binding (batch 2, every other
 * symbolic dim 3), folding, autodiff, the optimizer and the communication
 * passes (the `parallel` stage, plan and all), and export of the result.
 * When training is impossible (no loss), the folded stage is exported
 * instead. Every failure must be a diagnostic, never a crash. */
#include "graph.h"
#include "onnx_io.h"
#include "passes.h"
#include "train.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void save_and_free_buffer(const px_graph *g) {
    px_diag d;
    px_diag_init(&d);
    void *buf = NULL;
    size_t len = 0;
    if (px_onnx_save_buffer(g, &buf, &len, &d) == 0) free(buf);
}

/* Binds every symbolic dim of the inputs: the leading one by batch, the
 * others by name to 3. */
static px_bindings bindings_for(const px_graph *g, px_dim_binding *dims, int cap) {
    px_bindings b = {.batch = 2, .dims = dims};
    for (int i = 0; i < g->n_inputs; i++) {
        const px_value *v = g->inputs[i];
        for (int k = 1; k < v->shape.rank && b.n_dims < cap; k++)
            if (v->shape.dims[k] < 0 && px_shape_sym(&v->shape, k)) {
                int dup = 0;
                for (int j = 0; j < b.n_dims; j++)
                    dup |= strcmp(dims[j].name, px_shape_sym(&v->shape, k)) == 0;
                if (!dup) dims[b.n_dims++] = (px_dim_binding){px_shape_sym(&v->shape, k), 3};
            }
    }
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    px_diag d;
    px_diag_init(&d);
    px_graph *g = px_onnx_load_buffer(data, size, NULL, NULL, &d);
    if (!g) return 0;
    save_and_free_buffer(g);
    px_dim_binding dims[16];
    px_bindings b = bindings_for(g, dims, 16);
    px_train_config cfg = {.optimizer = PX_OPTIM_ADAM,
                           .lr = 1e-3,
                           .beta1 = 0.9,
                           .beta2 = 0.999,
                           .epsilon = 1e-8,
                           .comm = PX_COMM_MODE_HYBRID,
                           .bucket_bytes = 4 << 20};
    px_train_plan plan = {0};
    px_diag_init(&d);
    int rc = px_pipeline_train(g, &b, &cfg, 1, &plan, &d);
    if (rc == 0) save_and_free_buffer(g);
    px_train_plan_free(&plan);
    px_graph_free(g);
    if (rc == 0) return 0;
    /* No loss (or a training error): the folded stage on a fresh import. */
    px_diag_init(&d);
    g = px_onnx_load_buffer(data, size, NULL, NULL, &d);
    if (!g) return 0;
    b = bindings_for(g, dims, 16);
    if (px_pipeline_fold(g, &b, &d) == 0) save_and_free_buffer(g);
    px_graph_free(g);
    return 0;
}
