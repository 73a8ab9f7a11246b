/* The 16-bit wire formats of --wire (runtime/comm/transport/wire_format.c)
 * against NumPy's float16 and PyTorch's bfloat16 conversions (both round
 * to nearest, ties to even). The table was made with /usr/bin/python3:
 *
 *   f = np.float32(v)
 *   half = np.float32(np.float16(f))
 *   bf16 = torch.tensor([float(f)]).to(torch.bfloat16).float().item()
 *
 * for values around every edge: ties, the largest half (65504) and the
 * first value that rounds to infinity (65520), half's smallest normal and
 * subnormal, a tie below the smallest subnormal (to zero), float32
 * subnormals, infinities, -0. Packing then unpacking, and a receive widened
 * in place from the upper half of its buffer, give the same values. */
#include "comm/transport/transport.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* float32 bits: the value, as half, as bfloat16 */
static const uint32_t table[][3] = {
    {0x3f800000, 0x3f800000, 0x3f800000}, /* 1.0 */
    {0xc0200000, 0xc0200000, 0xc0200000}, /* -2.5 */
    {0x477fe000, 0x477fe000, 0x47800000}, /* 65504.0 */
    {0x477feffd, 0x477fe000, 0x47800000}, /* 65519.98828125 */
    {0x477ff000, 0x7f800000, 0x47800000}, /* 65520.0 */
    {0x47c35000, 0x7f800000, 0x47c30000}, /* 100000.0 */
    {0x38800000, 0x38800000, 0x38800000}, /* 2^-14 */
    {0x33800000, 0x33800000, 0x33800000}, /* 2^-24 */
    {0x33000000, 0x00000000, 0x33000000}, /* 2^-25 */
    {0x33400000, 0x33800000, 0x33400000}, /* 1.5 * 2^-25 */
    {0x3dcccccd, 0x3dccc000, 0x3dcd0000}, /* 0.1 */
    {0x40490fdb, 0x40490000, 0x40490000}, /* pi */
    {0x3a83126f, 0x3a832000, 0x3a830000}, /* 0.001 */
    {0xb6eae18b, 0xb6ea0000, 0xb6eb0000}, /* -7e-06 */
    {0x7f800000, 0x7f800000, 0x7f800000}, /* inf */
    {0xff800000, 0xff800000, 0xff800000}, /* -inf */
    {0x3f800001, 0x3f800000, 0x3f800000}, /* 1.0000001 */
    {0x000116c2, 0x00000000, 0x00010000}, /* 1e-40 (a float32 subnormal) */
    {0x80000000, 0x80000000, 0x80000000}, /* -0.0 */
    {0x7f61b1e6, 0x7f800000, 0x7f620000}, /* 3e38 */
    {0x3f808000, 0x3f808000, 0x3f800000}, /* 1.00390625: a bfloat16 tie, to even */
    {0x3f80c000, 0x3f80c000, 0x3f810000}, /* 1.005859375: a tie, up to even */
    {0x3eaaaaab, 0x3eaaa000, 0x3eab0000}, /* 1/3 */
    {0x387fff58, 0x38800000, 0x38800000}, /* just below 2^-14: up to half's normal */
};
enum { N = sizeof table / sizeof table[0] };

static float f_of(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t u_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void check_round(int w, int col) {
    float x[N];
    for (int i = 0; i < N; i++) x[i] = f_of(table[i][0]);
    comm_wire_round(w, x, N);
    for (int i = 0; i < N; i++)
        cr_expect_eq(u_of(x[i]), table[i][col], "%s of 0x%08x: 0x%08x, expected 0x%08x",
                     px_wire_format_name(w), table[i][0], u_of(x[i]), table[i][col]);
}

Test(wire_format, half_rounds_as_numpy) {
    check_round(PX_WIRE_FP16, 1);
}

Test(wire_format, bfloat16_rounds_as_torch) {
    check_round(PX_WIRE_BF16, 2);
}

Test(wire_format, fp32_is_untouched) {
    check_round(PX_WIRE_FP32, 0);
}

Test(wire_format, nan_stays_nan) {
    for (int w = PX_WIRE_BF16; w <= PX_WIRE_FP16; w++) {
        float x[2] = {NAN, -NAN};
        comm_wire_round(w, x, 2);
        cr_expect(isnan(x[0]) && isnan(x[1]), "%s: NaN became %g, %g", px_wire_format_name(w), x[0],
                  x[1]);
    }
}

/* pack/unpack, and a receive landing in the upper half widened in place,
 * equal the rounding, for every format. */
Test(wire_format, pack_unpack_and_widen) {
    for (int w = 0; w < PX_WIRE_COUNT; w++) {
        float src[N], rounded[N], out[N], buf[N];
        uint16_t packed[2 * N];
        for (int i = 0; i < N; i++) src[i] = rounded[i] = f_of(table[i][0]);
        comm_wire_round(w, rounded, N);
        const void *p = comm_wire_pack(w, src, N, packed);
        comm_wire_unpack(w, p, out, N);
        /* the bytes a receive of N floats leaves: at the start (fp32) or
         * in the upper half (16 bits) */
        size_t bytes = (size_t)px_wire_format_bytes(w) * N;
        memset(buf, 0xff, sizeof buf);
        memcpy(w == PX_WIRE_FP32 ? (char *)buf : (char *)buf + 2 * N, p, bytes);
        comm_wire_arrived(w, buf, N);
        for (int i = 0; i < N; i++) {
            cr_expect_eq(u_of(out[i]), u_of(rounded[i]), "%s unpack [%d]", px_wire_format_name(w),
                         i);
            cr_expect_eq(u_of(buf[i]), u_of(rounded[i]), "%s widened [%d]", px_wire_format_name(w),
                         i);
        }
        /* packing in place (stage == src) */
        float inplace[N];
        memcpy(inplace, src, sizeof inplace);
        comm_wire_unpack(w, comm_wire_pack(w, inplace, N, inplace), out, N);
        for (int i = 0; i < N; i++)
            cr_expect_eq(u_of(out[i]), u_of(rounded[i]), "%s in place [%d]", px_wire_format_name(w),
                         i);
    }
}
