/* `parallaxc compile`: load, fold, generate native code, link. */
#include "compile_cmd.h"

#include "emit.h"
#include "onnx_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int px_compile_command(const px_cli *cli, px_diag *d) {
    if (!cli->infer)
        return px_error(d, "training programs are not available yet (issue #4): "
                           "compile with --infer for an inference program");
    px_import_opts io = {0};
    px_graph *g = px_onnx_load_file(cli->model, &io, d);
    if (!g) return -1;
    int rc = -1;
    if (px_pipeline_fold(g, &cli->bindings, d)) goto cleanup;
    px_codegen_opts o = {.opt_level = 2, .model_path = cli->model};
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
    px_graph_free(g);
    return rc;
}
