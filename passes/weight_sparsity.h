/* Masked weights (--sparsity): dense MatMul/Gemm weights trained with a
 * fixed number of live entries, the rest exactly zero.
 *
 *   px_plan_weight_sparsity  after the variable plan: which weights, their
 *                            logical shape [out, in] and orientation, live
 *                            entries (nnz), the FLOPs of their products,
 *                            and whether the sparse kernels or the dense
 *                            GEMM compute them (the measured crossover);
 *                            every bad flag is an error naming the flag and
 *                            the weight
 *
 * The plan travels in the px_train_plan (px_train_var.masked) to the graph
 * rewrite, the optimizer and comm passes, the cost model, inspect and the
 * program descriptor (px_masked_desc). */
#ifndef PX_WEIGHT_SPARSITY_H
#define PX_WEIGHT_SPARSITY_H

#include "graph.h"
#include "px_enums.h"

#include <stddef.h>
#include <stdint.h>

/* Which kernels compute the masked products (--sparse-kernels). */
typedef enum px_sparse_kernels {
    PX_SPARSE_KERNELS_AUTO = 0, /* by the measured crossover */
    PX_SPARSE_KERNELS_SPARSE,   /* always the sparse kernels */
    PX_SPARSE_KERNELS_DENSE,    /* always the dense GEMM (masked gradient and update only) */
} px_sparse_kernels;

typedef struct px_sparsity_target {
    char *name;      /* an initializer */
    double sparsity; /* in [0, 1) */
} px_sparsity_target;

typedef struct px_sparsity_config {
    int n_targets; /* --sparsity NAME=F (later ones override earlier ones) */
    px_sparsity_target *targets;
    int has_auto; /* --sparsity auto:F: every eligible weight */
    double auto_sparsity;
    px_sparsity_pattern pattern; /* --sparsity-pattern */
    int64_t pa, pb;              /* block a x b, or n:m */
    px_sparsity_init init;       /* --sparsity-init */
    uint64_t seed;               /* --sparsity-seed */
    px_sparse_kernels kernels;   /* --sparse-kernels */
} px_sparsity_config;

/* 1 when cfg asks for any masked weight. */
int px_sparsity_requested(const px_sparsity_config *cfg);

typedef struct px_masked_plan {
    int var;                           /* index into the plan's variables */
    int64_t out, in;                   /* logical shape: Y = X · Wl^T */
    int w_in_major;                    /* stored [in, out] (MatMul, Gemm transB=0) */
    double sparsity;                   /* asked for (ERK: this weight's share) */
    int64_t nnz;                       /* live entries */
    int64_t rows;                      /* batch rows of its products, summed over its uses */
    int64_t flops_dense, flops_sparse; /* per step: forward, input and weight gradients */
    int dense_path;                    /* 1: the dense GEMM computes its products */
    const char *path_reason;
    /* the configuration's, for the descriptor and the listings */
    px_sparsity_pattern pattern;
    int64_t pa, pb;
    px_sparsity_init init;
    uint64_t seed;
} px_masked_plan;

struct px_train_plan;
struct px_sparsity_config;

/* Plans the masked weights of plan's variables for cfg: fills plan->masked
 * and each masked variable's tv->masked. Returns 0, or -1 with the error
 * in d. Nothing to do when cfg asks for none. */
int px_plan_weight_sparsity(const px_graph *g, const px_sparsity_config *cfg,
                            struct px_train_plan *plan, px_diag *d);

/* The density below which the sparse kernels beat the dense GEMM, as
 * measured by bench/sparse_ffn.py (docs/sparse_training.md). */
double px_sparse_crossover_density(px_sparsity_pattern pattern);

void px_sparsity_config_free(px_sparsity_config *cfg);

/* "unstructured", "block:AxB" or "N:M". */
const char *px_masked_pattern_text(const px_masked_plan *m, char *buf, size_t cap);

#endif
