/* The format floats travel in (--wire, docs/relaxed_sync.md): float32, or
 * 16 bits (bfloat16 or IEEE half), rounded to nearest, ties to even.
 *
 * Only the transfers change: a sender packs the floats into 16 bits right
 * before the send, a receiver unpacks them right after the receive, and
 * every sum, optimizer state and master weight stays float32. A 16-bit
 * receive lands in the upper half of its float32 destination and is
 * widened in place (ascending: the float written at i covers bytes that
 * hold elements already read), so a receive needs no buffer of its own.
 *
 * NaN stays NaN and infinities stay infinite; a float32 beyond the half
 * format's range (65504) becomes an infinity, as the conversion of every
 * IEEE implementation does (bfloat16 has float32's range). */
#include "transport.h"

#include <string.h>

/* The run's format: set at setup, before any thread reads it. */
static int format = PX_WIRE_FP32;

void comm_wire_set(int w) {
    if (w < 0 || w >= PX_WIRE_COUNT) px_rt_fail("internal error: wire format %d", w);
    format = w;
}

int comm_wire_format(void) {
    return format;
}

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t to_bf16(float f) {
    uint32_t u = bits_of(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h) {
    return float_of((uint32_t)h << 16);
}

/* float32 -> IEEE half, to nearest even. Normal results: rebias the
 * exponent and round the 13 dropped mantissa bits by adding 0xfff plus the
 * kept mantissa's lowest bit (a carry into the exponent is the correct
 * rounding up, to infinity at the top). Subnormal results are m * 2^-24:
 * x * 2^24 is exact, and adding 2^23 (whose unit in the last place is 1)
 * lets the float adder round it to the integer m, which lands in the low
 * mantissa bits. */
static uint16_t to_fp16(float f) {
    uint32_t u = bits_of(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    u &= 0x7fffffffu;
    uint16_t h;
    if (u >= (uint32_t)(127 + 16) << 23) { /* >= 65536, inf, NaN */
        h = u > 0x7f800000u ? 0x7e00 : 0x7c00;
    } else if (u < (uint32_t)(127 - 14) << 23) {           /* below half's normals */
        const uint32_t magic = (uint32_t)(127 + 23) << 23; /* 2^23 */
        float x = float_of(u) * 16777216.0f + float_of(magic);
        h = (uint16_t)(bits_of(x) - magic);
    } else {
        uint32_t odd = (u >> 13) & 1u;
        u += ((uint32_t)(15 - 127) << 23) + 0xfffu + odd;
        h = (uint16_t)(u >> 13);
    }
    return (uint16_t)(h | sign);
}

static float from_fp16(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return float_of(sign | 0x7f800000u | (mant << 13)); /* inf, NaN */
    if (exp == 0) { /* zero or subnormal: mant * 2^-24, exact in float32 */
        float v = (float)mant * (1.0f / 16777216.0f);
        return float_of(sign | bits_of(v));
    }
    return float_of(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

void comm_wire_round(int w, float *x, int64_t n) {
    if (w == PX_WIRE_BF16)
        for (int64_t i = 0; i < n; i++) x[i] = from_bf16(to_bf16(x[i]));
    else if (w == PX_WIRE_FP16)
        for (int64_t i = 0; i < n; i++) x[i] = from_fp16(to_fp16(x[i]));
}

const void *comm_wire_pack(int w, const float *src, int64_t n, void *stage) {
    if (w == PX_WIRE_FP32) return src;
    uint16_t *h = stage;
    if (w == PX_WIRE_BF16)
        for (int64_t i = 0; i < n; i++) h[i] = to_bf16(src[i]);
    else
        for (int64_t i = 0; i < n; i++) h[i] = to_fp16(src[i]);
    return stage;
}

void comm_wire_pack_into(int w, void *dst, const float *src, int64_t n) {
    if (w == PX_WIRE_FP32)
        memmove(dst, src, sizeof(float) * (size_t)n);
    else
        comm_wire_pack(w, src, n, dst);
}

void comm_wire_unpack(int w, const void *src, float *dst, int64_t n) {
    const uint16_t *h = src;
    if (w == PX_WIRE_FP32)
        memmove(dst, src, sizeof(float) * (size_t)n);
    else if (w == PX_WIRE_BF16)
        for (int64_t i = 0; i < n; i++) dst[i] = from_bf16(h[i]);
    else
        for (int64_t i = 0; i < n; i++) dst[i] = from_fp16(h[i]);
}

static void *landing(int w, float *dst, int64_t n) {
    return w == PX_WIRE_FP32 ? (void *)dst : (void *)((uint16_t *)dst + n);
}

void comm_isend_wire(int w, const void *packed, int64_t n, int peer, int tag, MPI_Comm c, int kind,
                     MPI_Request *req) {
    comm_isend(packed, n, w == PX_WIRE_FP32 ? MPI_FLOAT : MPI_UINT16_T, px_wire_format_bytes(w),
               peer, tag, c, kind, req);
}

void comm_irecv_wire(int w, float *dst, int64_t n, int peer, int tag, MPI_Comm c, int kind,
                     MPI_Request *req) {
    comm_irecv(landing(w, dst, n), n, w == PX_WIRE_FP32 ? MPI_FLOAT : MPI_UINT16_T,
               px_wire_format_bytes(w), peer, tag, c, kind, req);
}

void comm_wire_arrived(int w, float *dst, int64_t n) {
    comm_wire_widen(w, dst, n, n);
}

void comm_wire_widen(int w, float *dst, int64_t posted, int64_t n) {
    if (w == PX_WIRE_FP32) return;
    /* ascending: element i is read (bytes 2 posted + 2i, posted >= n)
     * before the float at i (bytes 4i) can reach it */
    const uint16_t *h = (const uint16_t *)dst + posted;
    if (w == PX_WIRE_BF16)
        for (int64_t i = 0; i < n; i++) dst[i] = from_bf16(h[i]);
    else
        for (int64_t i = 0; i < n; i++) dst[i] = from_fp16(h[i]);
}
