/* The helpers the nn_*.c kernels share (see px_kernel.h for the kernel ABI):
 * element conversion, scratch. */
#include "nn_internal.h"

#include <stdlib.h>
#include <string.h>

float px_nn_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13); /* inf / NaN */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else { /* subnormal: normalize */
        exp = 113;
        while (!(mant & 0x400u)) {
            mant <<= 1;
            exp--;
        }
        bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t px_nn_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u, absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) /* inf or NaN (keep NaN quiet and non-zero) */
        return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
    if (absx < 0x38800000u) { /* f16 subnormal or zero: round to nearest even */
        if (absx < 0x33000000u) return (uint16_t)sign;
        uint32_t e = absx >> 23, m = (absx & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e, half = m >> shift, rem = m & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t r = absx + 0xfffu + ((absx >> 13) & 1u); /* round to nearest even */
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

float px_nn_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t px_nn_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

double px_nn_load(int dtype, const void *p, int64_t i) {
    switch (dtype) {
    case PX_NN_F32: return ((const float *)p)[i];
    case PX_NN_F64: return ((const double *)p)[i];
    case PX_NN_F16: return px_nn_f16_to_f32(((const uint16_t *)p)[i]);
    case PX_NN_BF16: return px_nn_bf16_to_f32(((const uint16_t *)p)[i]);
    default: px_rt_fail("nn kernel: dtype %d is not a floating-point type", dtype);
    }
}

void px_nn_store(int dtype, void *p, int64_t i, double v) {
    switch (dtype) {
    case PX_NN_F32: ((float *)p)[i] = (float)v; return;
    case PX_NN_F64: ((double *)p)[i] = v; return;
    case PX_NN_F16: ((uint16_t *)p)[i] = px_nn_f32_to_f16((float)v); return;
    case PX_NN_BF16: ((uint16_t *)p)[i] = px_nn_f32_to_bf16((float)v); return;
    default: px_rt_fail("nn kernel: dtype %d is not a floating-point type", dtype);
    }
}

int64_t px_nn_load_index(int dtype, const void *p, int64_t i) {
    switch (dtype) {
    case PX_NN_I32: return ((const int32_t *)p)[i];
    case PX_NN_I64: return ((const int64_t *)p)[i];
    default: px_rt_fail("nn kernel: dtype %d is not an index type (int32/int64)", dtype);
    }
}

void px_nn_half_to_f32(int dtype, const uint16_t *src, float *dst, int64_t n) {
    if (dtype == PX_NN_BF16)
        for (int64_t i = 0; i < n; i++) dst[i] = px_nn_bf16_to_f32(src[i]);
    else
        for (int64_t i = 0; i < n; i++) dst[i] = px_nn_f16_to_f32(src[i]);
}

void px_nn_f32_to_half(int dtype, const float *src, uint16_t *dst, int64_t n) {
    if (dtype == PX_NN_BF16)
        for (int64_t i = 0; i < n; i++) dst[i] = px_nn_f32_to_bf16(src[i]);
    else
        for (int64_t i = 0; i < n; i++) dst[i] = px_nn_f32_to_f16(src[i]);
}

static _Thread_local struct {
    void *p;
    size_t cap;
} scratch[PX_NN_SCRATCH_SLOTS];

void *px_nn_scratch(int slot, size_t bytes) {
    if (bytes == 0) bytes = 1;
    if (scratch[slot].cap < bytes) {
        free(scratch[slot].p);
        /* 64-byte aligned so BLAS and vector loops get aligned rows */
        size_t cap = (bytes + 63) & ~(size_t)63;
        scratch[slot].p = aligned_alloc(64, cap);
        if (!scratch[slot].p) px_rt_fail("out of memory: nn kernel scratch of %zu bytes", bytes);
        scratch[slot].cap = cap;
    }
    return scratch[slot].p;
}
