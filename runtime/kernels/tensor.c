/* The data-movement helpers the tensor_*.c kernels share (see px_kernel.h
 * for the kernel ABI). */
#include "tensor_internal.h"

#include <string.h>

int pxt_esize(int dtype) {
    switch (dtype) {
    case 14: return 8;  /* complex64 */
    case 15: return 16; /* complex128 */
    default: return pxk_dtype_size(dtype);
    }
}

void pxt_read_name(px_kcur *c, char *out, size_t cap) {
    int64_t len = px_kp_i64(c);
    int64_t words = (len + 7) / 8;
    size_t kept = 0;
    for (int64_t w = 0; w < words; w++) {
        uint64_t v = (uint64_t)px_kp_i64(c);
        for (int b = 0; b < 8 && w * 8 + b < len; b++)
            if (kept + 1 < cap) out[kept++] = (char)((v >> (8 * b)) & 0xffu);
    }
    if (cap) out[kept] = 0;
}

void pxt_move(void *dst, const void *src, size_t n) {
    if (n && dst != src) memmove(dst, src, n);
}

#define STRIDED(T)                                                                                 \
    do {                                                                                           \
        T *d = (T *)(void *)dst;                                                                   \
        int64_t s = src_stride / (int64_t)sizeof(T);                                               \
        const T *q = (const T *)(const void *)src;                                                 \
        for (int64_t i = 0; i < count; i++) d[i] = q[i * s];                                       \
    } while (0)

void pxt_strided_copy(char *dst, const char *src, int64_t count, int64_t blk, int64_t src_stride) {
    if (count <= 0 || blk <= 0) return;
    if (src_stride == blk) {
        memcpy(dst, src, (size_t)(count * blk));
        return;
    }
    /* typed loops need src_stride to be a whole number of elements, which it
     * is whenever it is a multiple of the block (all callers) */
    if (src_stride % blk == 0) {
        switch (blk) {
        case 1: STRIDED(uint8_t); return;
        case 2: STRIDED(uint16_t); return;
        case 4: STRIDED(uint32_t); return;
        case 8: STRIDED(uint64_t); return;
        default: break;
        }
    }
    for (int64_t i = 0; i < count; i++) memcpy(dst + i * blk, src + i * src_stride, (size_t)blk);
}

#define FILL(T)                                                                                    \
    do {                                                                                           \
        T v, *d = (T *)(void *)dst;                                                                \
        memcpy(&v, elem, sizeof v);                                                                \
        for (int64_t i = 0; i < count; i++) d[i] = v;                                              \
    } while (0)

void pxt_fill(char *dst, const void *elem, int64_t count, int64_t blk) {
    if (count <= 0) return;
    switch (blk) {
    case 1: memset(dst, *(const unsigned char *)elem, (size_t)count); return;
    case 2: FILL(uint16_t); return;
    case 4: FILL(uint32_t); return;
    case 8: FILL(uint64_t); return;
    default:
        /* doubling copies: log2(count) memcpy calls */
        memcpy(dst, elem, (size_t)blk);
        for (int64_t done = 1; done < count;) {
            int64_t n = done < count - done ? done : count - done;
            memcpy(dst + done * blk, dst, (size_t)(n * blk));
            done += n;
        }
    }
}
