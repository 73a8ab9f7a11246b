/* PX_VEC_CLONES, on a kernel whose float loops dominate: an AVX2 copy of
 * the function besides the baseline (x86-64 SSE2) one, picked at load time
 * for the CPU it runs on. The runtime library is built for any x86-64, so
 * without it the float loops vectorize 4 wide only. Same arithmetic lane by
 * lane (no FMA contraction, the same partial sums): both copies give the
 * same bits. */
#ifndef PX_VEC_CLONES_H
#define PX_VEC_CLONES_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PX_VEC_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define PX_VEC_CLONES
#endif

#endif
