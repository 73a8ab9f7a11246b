/* Products with a masked weight, computed over its live entries only.
 *
 * The weight is logically Wl[out, in] (Y = X · Wl^T), stored in the model
 * as [out, in] (Gemm transB=1, nn.Linear) or [in, out] (MatMul). Its live
 * entries are held packed: `vals[nnz]` in the traversal order below, the
 * order of the compact gradient and of the optimizer state as well. The
 * traversal lists them by panels of PX_SPM_PANEL inputs, then by output
 * row, inputs ascending: a panel of the dense operand stays in L1 while
 * every row reads it, and the packed values stream in order.
 *
 * The dense operands travel transposed and chunked: [chunks][cols][cw],
 * cw = min(64, M rounded up to 16) of the M batch rows per chunk, zero
 * padded, so that one live entry multiplies a contiguous vector of batch
 * rows (one to four 16-float vectors).
 *
 * Every output element is one chain of fused multiply-adds in a fixed
 * order: Y by panel then input; dX by output; the weight gradient a 16-lane
 * partial sum per chunk, reduced by a fixed tree, chunks added in order.
 * The AVX-512, AVX2 and portable paths and every thread count give the
 * same bits. */
#ifndef PX_SPMM_H
#define PX_SPMM_H

#include "px_program.h"

#include <stdint.h>

enum { PX_SPM_LANES = 16, PX_SPM_MAX_CW = 64, PX_SPM_PANEL = PX_MASKED_PANEL };

typedef struct px_spm {
    int64_t out, in;  /* logical shape of the weight */
    int w_in_major;   /* stored [in, out] */
    int64_t n_panels; /* ceil(in / PX_SPM_PANEL) */
    int64_t nnz;
    int32_t *ptr; /* entries of (panel p, output o): [ptr[p*out + o], ptr[p*out + o + 1]) */
    int32_t *idx; /* input of each entry */
} px_spm;

/* Builds the traversal of the live entries pos[0..nnz) (ascending flat
 * positions in the stored weight). Returns 0, or -1 when out of memory or
 * beyond 32-bit indices. */
int px_spm_build(px_spm *s, const int64_t *pos, int64_t nnz, int64_t out, int64_t in,
                 int w_in_major);
void px_spm_free(px_spm *s);
/* The flat position in the stored weight of every entry, traversal order. */
void px_spm_positions(const px_spm *s, int64_t *pos);
/* vals[e] = w[position of e]; and back: w[position of e] = vals[e] (the
 * other elements of w are left alone). */
void px_spm_pack(const px_spm *s, const float *w, float *vals);
void px_spm_unpack(const px_spm *s, const float *vals, float *w);

/* Y[m, out] = X[m, in] · Wl^T */
void px_spm_forward(const px_spm *s, const float *vals, const float *x, int64_t m, float *y);
/* dX[m, in] = dY[m, out] · Wl */
void px_spm_grad_input(const px_spm *s, const float *vals, const float *dy, int64_t m, float *dx);
/* g[e] = sum over m of dY[m, o_e] * X[m, i_e]: the weight gradient at the
 * live entries, traversal order. */
void px_spm_grad_weight(const px_spm *s, const float *x, const float *dy, int64_t m, float *g);

/* The instruction set the products use: "avx512", "avx2" or "portable"
 * (the best the CPU has; PX_SPARSE_ISA=portable|avx2 picks a lower one,
 * for benchmarks). */
const char *px_spm_isa(void);
/* Uses the named path from now on; -1 (nothing changed) when this build or
 * CPU does not have it. */
int px_spm_use_isa(const char *name);

#endif
