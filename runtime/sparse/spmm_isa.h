/* The inner loops of the masked products (spmm.c), one set per instruction
 * set. Each works on one chunk of batch rows (cw = 16*q floats per row of
 * the transposed operands) and one panel p of the traversal s, over the
 * outputs [r0, r1); first: the chunk's first contribution.
 *   mul:  ct[o] = (first ? 0 : ct[o]) + sum over the entries (o, i) of
 *         vals[e] * bt[i], one fused multiply-add per entry and lane;
 *   scat: for every output o of the panel and entry (o, i):
 *         ct[i] = fma(vals[e], at[o], ct[i]) (the caller zeroes the panel's
 *         rows of ct before the chunk's first panel pass);
 *   dot:  for each entry (o, i): the 16 lanes t = at[o][0..16) * bt[i][0..16)
 *         then fma over the next 16-float vectors, reduced by the tree
 *         (l, l+8), (l, l+4), (l, l+2), (l, l+1); g[e] = that sum (first)
 *         or g[e] + that sum. */
#ifndef PX_SPMM_ISA_H
#define PX_SPMM_ISA_H

#include "spmm.h"

typedef void (*px_spm_mul_fn)(const px_spm *s, const float *vals, const float *bt, float *ct, int q,
                              int64_t p, int64_t r0, int64_t r1, int first);
typedef void (*px_spm_scat_fn)(const px_spm *s, const float *vals, const float *at, float *ct,
                               int q, int64_t p);
typedef void (*px_spm_dot_fn)(const px_spm *s, const float *at, const float *bt, float *g, int q,
                              int64_t p, int64_t r0, int64_t r1, int first);

/* dst[c * dst_stride + r] = src[r * src_stride + c] for r, c < 8: the
 * operands' transposition (spmm.c) by 8 x 8 tiles. */
typedef void (*px_spm_tile_fn)(const float *src, int64_t src_stride, float *dst,
                               int64_t dst_stride);

typedef struct px_spm_isa_ops {
    const char *name;
    px_spm_mul_fn mul;
    px_spm_scat_fn scat;
    px_spm_dot_fn dot;
    px_spm_tile_fn tile8;
} px_spm_isa_ops;

/* The x86 paths (spmm_x86.c); NULL members where the compiler cannot
 * build them. The caller checks the CPU. */
extern const px_spm_isa_ops px_spm_ops_avx512, px_spm_ops_avx2;

#endif
