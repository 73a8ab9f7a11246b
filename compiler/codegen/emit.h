/* LLVM emission and linking of a planned graph into a native program. */
#ifndef PX_EMIT_H
#define PX_EMIT_H

#include "memplan.h"
#include "out_paths.h"

typedef struct px_codegen_opts {
    int opt_level;          /* 0..3; default 2 */
    const char *model_path; /* recorded in the program for messages */
    const char *emit_llvm;  /* if set: also write the optimized module as text here */
    int no_fusion;          /* 1: every node calls its runtime kernel (for testing) */
    /* Training programs (NULL for inference): the plan and configuration of
     * passes/train.h, and the model to save trained weights into. */
    const struct px_train_plan *train;
    const struct px_train_config *train_cfg;
    const void *onnx_base;
    size_t onnx_base_bytes;
    /* The model the program reads its weights from at start: its absolute
     * path and its initializers and nodes (runtime/program/weights_source.h).
     * NULL: every constant is embedded in the program. */
    const char *weights_path;
    const struct px_wsrc *weights_src;
    /* Training programs: the compiler's JSON record (px_program_desc.compile_info)
     * and the eval-mode model for --save-infer; NULL: none. */
    const char *compile_info;
    const void *infer_base;
    size_t infer_base_bytes;
} px_codegen_opts;

/* Emits an object file for the host defining px_program (runtime/px_program.h). */
int px_emit_object(const px_graph *g, const px_plan *plan, const px_memplan *mp,
                   const px_codegen_opts *o, const char *obj_path, px_diag *d);

/* Links obj_path with the runtime library into an executable. The runtime is
 * found relative to the running parallaxc (build tree or install tree). */
int px_link_program(const char *obj_path, const char *out_path, px_diag *d);
/* Adds the runtime libraries a program is linked with to l: inputs of a
 * compile that no output may replace (common/out_paths.h). */
int px_runtime_input_files(px_path_list *l, px_diag *d);

/* What the buffer plan of a folded graph needs, for `inspect`. */
typedef struct px_memory_report {
    int64_t arena_bytes;     /* planned peak of runtime buffers (inputs, intermediates, outputs) */
    int64_t unplanned_bytes; /* the same buffers without reuse */
    int64_t constant_bytes;  /* initializers and constants (most weights are loaded at start) */
    int n_stages;            /* --pp: the stages; 0: none */
    int64_t *stage_arena_bytes; /* [n_stages]: the arena of stage s's ranks (memplan.h) */
} px_memory_report;

/* Lowers, fuses and plans g as compile would; -1 with an error if g cannot be
 * compiled (an op the code generator does not support, a non-static shape).
 * px_memory_report_free frees what it holds. */
int px_memory_plan_report(const px_graph *g, px_memory_report *r, px_diag *d);
void px_memory_report_free(px_memory_report *r);
/* The arena of the ranks of stage `stage` (-1, or no stages: arena_bytes). */
int64_t px_memory_report_arena(const px_memory_report *r, int stage);

/* Whole back end: plan, buffer plan, object, link. g must be folded. */
int px_compile_graph(const px_graph *g, const px_codegen_opts *o, const char *out_path, px_diag *d);

#endif
