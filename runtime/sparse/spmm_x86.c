/* AVX-512 and AVX2 inner loops of the masked products (spmm_isa.h). The
 * runtime is built for any x86-64, so these functions carry their own
 * target attributes and spmm.c calls them only on a CPU that has the
 * instructions. The arithmetic is spmm_isa.h's, lane by lane, so they give
 * the bits of the portable loops.
 *
 * The AVX2 path holds each 16-float vector as two 8-float halves (lanes
 * 0-7, 8-15): V(k) below is vector k of a row, for k < q. */
#include "spmm_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))

/* One body per instruction set, written once: VEC is the 16-float vector
 * type (two halves on AVX2), and the macros load, store, multiply-add and
 * reduce it. */

/* ---- AVX-512 ---- */
#define TARGET __attribute__((target("avx512f")))
typedef struct {
    __m512 v;
} vec512;
INLINE TARGET vec512 ld512(const float *p) {
    return (vec512){_mm512_load_ps(p)};
}
INLINE TARGET void st512(float *p, vec512 a) {
    _mm512_store_ps(p, a.v);
}
INLINE TARGET vec512 zero512(void) {
    return (vec512){_mm512_setzero_ps()};
}
INLINE TARGET vec512 bcast512(float w) {
    return (vec512){_mm512_set1_ps(w)};
}
INLINE TARGET vec512 fma512(vec512 a, vec512 b, vec512 c) {
    return (vec512){_mm512_fmadd_ps(a.v, b.v, c.v)};
}
INLINE TARGET vec512 mul512(vec512 a, vec512 b) {
    return (vec512){_mm512_mul_ps(a.v, b.v)};
}
/* The tree (l, l+8), (l, l+4), (l, l+2), (l, l+1) of spmm_isa.h. */
INLINE TARGET float reduce512(vec512 t) {
    __m256 u = _mm256_add_ps(_mm512_castps512_ps256(t.v),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(t.v), 1)));
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
    __m128 x = _mm_add_ps(v, _mm_movehl_ps(v, v));
    return _mm_cvtss_f32(_mm_add_ss(x, _mm_shuffle_ps(x, x, 1)));
}
#define SFX 512
#define VEC vec512
#include "spmm_x86_body.inc"
#undef SFX
#undef VEC
#undef TARGET

/* ---- AVX2 ---- */
#define TARGET __attribute__((target("avx2,fma")))
typedef struct {
    __m256 lo, hi;
} vec256;
INLINE TARGET vec256 ld256(const float *p) {
    return (vec256){_mm256_load_ps(p), _mm256_load_ps(p + 8)};
}
INLINE TARGET void st256(float *p, vec256 a) {
    _mm256_store_ps(p, a.lo);
    _mm256_store_ps(p + 8, a.hi);
}
INLINE TARGET vec256 zero256(void) {
    return (vec256){_mm256_setzero_ps(), _mm256_setzero_ps()};
}
INLINE TARGET vec256 bcast256(float w) {
    return (vec256){_mm256_set1_ps(w), _mm256_set1_ps(w)};
}
INLINE TARGET vec256 fma256(vec256 a, vec256 b, vec256 c) {
    return (vec256){_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
INLINE TARGET vec256 mul256(vec256 a, vec256 b) {
    return (vec256){_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)};
}
INLINE TARGET float reduce256(vec256 t) {
    __m256 u = _mm256_add_ps(t.lo, t.hi);
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
    __m128 x = _mm_add_ps(v, _mm_movehl_ps(v, v));
    return _mm_cvtss_f32(_mm_add_ss(x, _mm_shuffle_ps(x, x, 1)));
}
#define SFX 256
#define VEC vec256
#include "spmm_x86_body.inc"
#undef SFX
#undef VEC
#undef TARGET

/* The 8 x 8 transposition of spmm_isa.h: unpack pairs, then 64-bit
 * pairs, then 128-bit halves (a copy: no arithmetic, so no bits change). */
static __attribute__((target("avx2"))) void tile8_256(const float *src, int64_t src_stride,
                                                      float *dst, int64_t dst_stride) {
    __m256 r[8], t[8];
    for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_ps(src + k * src_stride);
    for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 8; k += 4)
        for (int h = 0; h < 2; h++) {
            __m256d a = _mm256_castps_pd(t[k + h]), b = _mm256_castps_pd(t[k + h + 2]);
            r[k + 2 * h] = _mm256_castpd_ps(_mm256_unpacklo_pd(a, b));
            r[k + 2 * h + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(a, b));
        }
    /* r[k], k < 4: column k of rows 0-3 in the low 128 bits, column k + 4
     * in the high; r[k + 4]: the same of rows 4-7 */
    for (int k = 0; k < 4; k++) {
        _mm256_storeu_ps(dst + k * dst_stride, _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
        _mm256_storeu_ps(dst + (k + 4) * dst_stride, _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
    }
}

const px_spm_isa_ops px_spm_ops_avx512 = {"avx512", mul_512, scat_512, dot_512, tile8_256};
const px_spm_isa_ops px_spm_ops_avx2 = {"avx2", mul_256, scat_256, dot_256, tile8_256};

#else

const px_spm_isa_ops px_spm_ops_avx512 = {"avx512", 0, 0, 0, 0};
const px_spm_isa_ops px_spm_ops_avx2 = {"avx2", 0, 0, 0, 0};

#endif
