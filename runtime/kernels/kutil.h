/* Helpers shared by the runtime kernels: dtype codes and sizes, float16 /
 * bfloat16 conversion, generic element access (the slow path for dtypes a
 * kernel has no typed loop for), and a numpy-broadcasting iterator.
 *
 * Everything is static inline so each kernel file gets its own copy and the
 * runtime stays header-only here. Kernels include it as "kutil.h"; it needs
 * only px_kernel.h. */
#ifndef PX_KUTIL_H
#define PX_KUTIL_H

#include "px_kernel.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* ONNX TensorProto.DataType codes as they appear in kernel descriptors. */
enum pxk_dtype {
    PXK_F32 = 1,
    PXK_U8 = 2,
    PXK_I8 = 3,
    PXK_U16 = 4,
    PXK_I16 = 5,
    PXK_I32 = 6,
    PXK_I64 = 7,
    PXK_STRING = 8,
    PXK_BOOL = 9,
    PXK_F16 = 10,
    PXK_F64 = 11,
    PXK_U32 = 12,
    PXK_U64 = 13,
    PXK_BF16 = 16,
    PXK_DTYPE_COUNT = 17
};

/* X-macro lists of the integer dtypes: X(code, C type, arg). bool is kept
 * apart (it is stored as one byte, 0 or 1). */
#define PXK_INT_TYPES(X, arg)                                                                      \
    X(PXK_I8, int8_t, arg)                                                                         \
    X(PXK_I16, int16_t, arg)                                                                       \
    X(PXK_I32, int32_t, arg)                                                                       \
    X(PXK_I64, int64_t, arg)                                                                       \
    X(PXK_U8, uint8_t, arg)                                                                        \
    X(PXK_U16, uint16_t, arg)                                                                      \
    X(PXK_U32, uint32_t, arg)                                                                      \
    X(PXK_U64, uint64_t, arg)

static inline int pxk_dtype_size(int dt) {
    switch (dt) {
    case PXK_U8:
    case PXK_I8:
    case PXK_BOOL: return 1;
    case PXK_U16:
    case PXK_I16:
    case PXK_F16:
    case PXK_BF16: return 2;
    case PXK_F32:
    case PXK_I32:
    case PXK_U32: return 4;
    case PXK_F64:
    case PXK_I64:
    case PXK_U64: return 8;
    default: return 0;
    }
}

static inline int pxk_is_float(int dt) {
    return dt == PXK_F32 || dt == PXK_F64 || dt == PXK_F16 || dt == PXK_BF16;
}

static inline int pxk_is_unsigned(int dt) {
    return dt == PXK_U8 || dt == PXK_U16 || dt == PXK_U32 || dt == PXK_U64 || dt == PXK_BOOL;
}

/* ---- float16 / bfloat16 (stored as uint16 bits) ---- */

static inline float pxk_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0x1f)
        bits = sign | 0x7f800000u | (man << 13); /* inf / nan */
    else if (exp != 0)
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    else if (man == 0)
        bits = sign;
    else { /* subnormal: normalise */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400u));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Round to nearest, ties to even (what numpy's astype(float16) does). */
static inline uint16_t pxk_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) /* inf or nan (keep nan quiet and non-zero) */
        return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
    if (absx < 0x38800000u) {                /* below the smallest normal half: subnormal or zero */
        if (absx < 0x33000000u) return sign; /* < half of the smallest subnormal */
        uint32_t e = absx >> 23, man = (absx & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* 14..24 */
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = ((absx >> 13) - (112u << 10)), rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

static inline float pxk_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t pxk_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet nan */
    x += 0x7fffu + ((x >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(x >> 16);
}

/* ---- generic element access (slow path: a switch per element) ----
 * Kept out of line: inlined into loops, the compiler would unswitch every
 * loop over every dtype pair, multiplying code size and compile time. */
#define PXK_SLOW static __attribute__((noinline, unused))

PXK_SLOW double pxk_get_f64(const void *p, int dt, int64_t i) {
    switch (dt) {
    case PXK_F32: return ((const float *)p)[i];
    case PXK_F64: return ((const double *)p)[i];
    case PXK_F16: return pxk_f16_to_f32(((const uint16_t *)p)[i]);
    case PXK_BF16: return pxk_bf16_to_f32(((const uint16_t *)p)[i]);
    case PXK_I8: return ((const int8_t *)p)[i];
    case PXK_I16: return ((const int16_t *)p)[i];
    case PXK_I32: return ((const int32_t *)p)[i];
    case PXK_I64: return (double)((const int64_t *)p)[i];
    case PXK_U8:
    case PXK_BOOL: return ((const uint8_t *)p)[i];
    case PXK_U16: return ((const uint16_t *)p)[i];
    case PXK_U32: return ((const uint32_t *)p)[i];
    case PXK_U64: return (double)((const uint64_t *)p)[i];
    default: return 0;
    }
}

/* Integers exactly; floats truncated toward zero (NaN and out-of-range
 * values become 0 rather than undefined behaviour). uint64 above INT64_MAX
 * wraps to negative: callers that care about it use typed loops. */
PXK_SLOW int64_t pxk_get_i64(const void *p, int dt, int64_t i) {
    switch (dt) {
    case PXK_I8: return ((const int8_t *)p)[i];
    case PXK_I16: return ((const int16_t *)p)[i];
    case PXK_I32: return ((const int32_t *)p)[i];
    case PXK_I64: return ((const int64_t *)p)[i];
    case PXK_U8:
    case PXK_BOOL: return ((const uint8_t *)p)[i];
    case PXK_U16: return ((const uint16_t *)p)[i];
    case PXK_U32: return ((const uint32_t *)p)[i];
    case PXK_U64: return (int64_t)((const uint64_t *)p)[i];
    default: {
        double v = pxk_get_f64(p, dt, i);
        return (v > -9.2e18 && v < 9.2e18) ? (int64_t)v : 0;
    }
    }
}

PXK_SLOW void pxk_set_f64(void *p, int dt, int64_t i, double v) {
    switch (dt) {
    case PXK_F32: ((float *)p)[i] = (float)v; break;
    case PXK_F64: ((double *)p)[i] = v; break;
    case PXK_F16: ((uint16_t *)p)[i] = pxk_f32_to_f16((float)v); break;
    case PXK_BF16: ((uint16_t *)p)[i] = pxk_f32_to_bf16((float)v); break;
    case PXK_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: {
        /* integer targets: truncate toward zero, then wrap to the width */
        int64_t iv = (v > -9.2e18 && v < 9.2e18) ? (int64_t)v : 0;
        switch (dt) {
        case PXK_I8: ((int8_t *)p)[i] = (int8_t)iv; break;
        case PXK_I16: ((int16_t *)p)[i] = (int16_t)iv; break;
        case PXK_I32: ((int32_t *)p)[i] = (int32_t)iv; break;
        case PXK_I64: ((int64_t *)p)[i] = iv; break;
        case PXK_U8: ((uint8_t *)p)[i] = (uint8_t)iv; break;
        case PXK_U16: ((uint16_t *)p)[i] = (uint16_t)iv; break;
        case PXK_U32: ((uint32_t *)p)[i] = (uint32_t)iv; break;
        case PXK_U64: ((uint64_t *)p)[i] = v >= 9.2e18 ? (uint64_t)v : (uint64_t)iv; break;
        default: break;
        }
    }
    }
}

PXK_SLOW void pxk_set_i64(void *p, int dt, int64_t i, int64_t v) {
    switch (dt) {
    case PXK_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    case PXK_I16: ((int16_t *)p)[i] = (int16_t)v; break;
    case PXK_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case PXK_I64: ((int64_t *)p)[i] = v; break;
    case PXK_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case PXK_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case PXK_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case PXK_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case PXK_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    default: pxk_set_f64(p, dt, i, (double)v); break;
    }
}

/* Copies n elements of a float dtype (f16, bf16, f32, f64) to / from float. */
static inline void pxk_to_f32(const void *src, int dt, int64_t off, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = (float)pxk_get_f64(src, dt, off + i);
}

static inline void pxk_from_f32(const float *src, void *dst, int dt, int64_t off, int64_t n) {
    for (int64_t i = 0; i < n; i++) pxk_set_f64(dst, dt, off + i, src[i]);
}

/* ---- numpy broadcasting iterator ----
 *
 * Walks an iteration shape (usually the output's) row by row, where a row is
 * the innermost dimension after coalescing, and keeps for each operand the
 * element offset of the row's first element. Operand shapes are
 * right-aligned against the iteration shape; each of their dims equals the
 * iteration dim or is 1 (stride 0: broadcast). Operands are contiguous
 * row-major, so along the innermost dim an operand's stride is 0 or 1.
 *
 * Dims of size 1 are dropped and adjacent dims merged when every operand
 * walks them as one (its strides agree), so a same-shape operation is a
 * single row and [N,C,H,W] + [C,1,1] becomes rows of H*W.
 *
 *     pxk_bcast b; pxk_bcast_init(&b, out.rank, out.dims, 2, ops);
 *     pxk_bcast_pos pos = {0};
 *     for (int64_t r = 0; r < b.rows; r++, pxk_bcast_next(&b, &pos))
 *         row(a + pos.off[0], b.inner_stride[0], ..., b.inner);
 */
#define PXK_BCAST_MAX_OPS 4

typedef struct pxk_bcast {
    int rank; /* coalesced rank, >= 1 */
    int n_ops;
    int64_t dims[PX_K_MAX_RANK];
    int64_t strides[PXK_BCAST_MAX_OPS][PX_K_MAX_RANK]; /* elements; 0 where broadcast */
    int64_t inner;                                     /* dims[rank-1] */
    int64_t inner_stride[PXK_BCAST_MAX_OPS];           /* strides[k][rank-1]: 0 or 1 */
    int64_t rows;                                      /* product of the outer dims; 0 if empty */
} pxk_bcast;

typedef struct pxk_bcast_pos {
    int64_t idx[PX_K_MAX_RANK];
    int64_t off[PXK_BCAST_MAX_OPS];
} pxk_bcast_pos;

/* rank/dims: the iteration shape; ops[k]: operand k's shape (rank <= rank). */
static inline void pxk_bcast_init(pxk_bcast *b, int rank, const int64_t *dims, int n_ops,
                                  const px_kt *ops) {
    int64_t st[PXK_BCAST_MAX_OPS][PX_K_MAX_RANK];
    int64_t empty = 0;
    b->n_ops = n_ops;
    for (int k = 0; k < n_ops; k++) {
        int64_t s = 1;
        int shift = rank - ops[k].rank;
        for (int d = rank - 1; d >= 0; d--) {
            int od = d - shift;
            int64_t od_dim = od >= 0 ? ops[k].dims[od] : 1;
            st[k][d] = (od_dim == 1) ? 0 : s;
            s *= od_dim;
        }
    }
    /* drop size-1 dims, merge dims every operand walks contiguously */
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 0) empty = 1;
        if (dims[d] == 1) continue;
        if (r > 0) {
            int mergeable = 1;
            for (int k = 0; k < n_ops; k++)
                if (b->strides[k][r - 1] != st[k][d] * dims[d]) mergeable = 0;
            if (mergeable) {
                b->dims[r - 1] *= dims[d];
                for (int k = 0; k < n_ops; k++) b->strides[k][r - 1] = st[k][d];
                continue;
            }
        }
        b->dims[r] = dims[d];
        for (int k = 0; k < n_ops; k++) b->strides[k][r] = st[k][d];
        r++;
    }
    if (r == 0) {
        b->dims[0] = 1;
        for (int k = 0; k < n_ops; k++) b->strides[k][0] = 1;
        r = 1;
    }
    b->rank = r;
    b->inner = b->dims[r - 1];
    for (int k = 0; k < n_ops; k++) b->inner_stride[k] = b->strides[k][r - 1];
    b->rows = 1;
    for (int d = 0; d < r - 1; d++) b->rows *= b->dims[d];
    if (empty) b->rows = 0;
}

/* Advances pos to the next row (no division: an odometer over the outer dims). */
static inline void pxk_bcast_next(const pxk_bcast *b, pxk_bcast_pos *pos) {
    for (int d = b->rank - 2; d >= 0; d--) {
        if (++pos->idx[d] < b->dims[d]) {
            for (int k = 0; k < b->n_ops; k++) pos->off[k] += b->strides[k][d];
            return;
        }
        pos->idx[d] = 0;
        for (int k = 0; k < b->n_ops; k++) pos->off[k] -= b->strides[k][d] * (b->dims[d] - 1);
    }
}

/* Sets pos to row r (what r calls of pxk_bcast_next from {0} give): where a
 * range of rows handed to one thread starts. */
static inline void pxk_bcast_seek(const pxk_bcast *b, pxk_bcast_pos *pos, int64_t r) {
    memset(pos, 0, sizeof *pos);
    for (int d = b->rank - 2; d >= 0 && r > 0; d--) {
        pos->idx[d] = r % b->dims[d];
        r /= b->dims[d];
        for (int k = 0; k < b->n_ops; k++) pos->off[k] += pos->idx[d] * b->strides[k][d];
    }
}

/* A descriptor with the same dtype and the given shape. */
static inline px_kt pxk_kt_make(int dtype, int rank, const int64_t *dims) {
    px_kt t;
    t.dtype = dtype;
    t.rank = rank;
    t.numel = 1;
    for (int i = 0; i < rank; i++) {
        t.dims[i] = dims[i];
        t.numel *= dims[i];
    }
    return t;
}

#endif
