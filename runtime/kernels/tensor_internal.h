/* Private to the tensor-family kernels (runtime/kernels/tensor*.c): data
 * movement helpers shared by the copy, layout and gather kernels, and the
 * declarations of the tensor kernels.
 *
 * These kernels move bytes, not numbers: apart from Range, OneHot indices,
 * EyeLike and the Dropout mask, they never interpret an element, so they
 * work for every fixed-size dtype (bool, all integers, float16, bfloat16,
 * float, double, complex) through the element size alone. */
#ifndef PX_TENSOR_INTERNAL_H
#define PX_TENSOR_INTERNAL_H

#include "kutil.h"

#include <stddef.h>
#include <stdint.h>

/* Most inputs of a Concat / outputs of a Split (the compiler's buffer limit). */
#define PXT_MAX_PARTS 32

/* Bytes per element of an ONNX dtype code (complex included); 0 if none. */
int pxt_esize(int dtype);

/* Reads a string the compiler packed with px_ltn_name (a length, then the
 * bytes eight to an int64 word, little-endian) into out (NUL-terminated,
 * truncated to cap-1 bytes). */
void pxt_read_name(px_kcur *c, char *out, size_t cap);

/* Copies count blocks of blk bytes: block i comes from src + i*src_stride
 * (bytes, may be negative) and goes to dst + i*blk. Typed loops for blocks
 * of 1, 2, 4 and 8 bytes, memcpy otherwise. */
void pxt_strided_copy(char *dst, const char *src, int64_t count, int64_t blk, int64_t src_stride);

/* Writes count copies of the blk-byte element at elem into dst. */
void pxt_fill(char *dst, const void *elem, int64_t count, int64_t blk);

/* memcpy that tolerates dst == src (an in-place buffer plan) and n == 0. */
void pxt_move(void *dst, const void *src, size_t n);

void px_k_copy(void *const *buf, const int64_t *p);
void px_k_dropout(void *const *buf, const int64_t *p);
void px_k_const(void *const *buf, const int64_t *p);
void px_k_fill(void *const *buf, const int64_t *p);
void px_k_eyelike(void *const *buf, const int64_t *p);
void px_k_range(void *const *buf, const int64_t *p);
void px_k_transpose(void *const *buf, const int64_t *p);
void px_k_concat(void *const *buf, const int64_t *p);
void px_k_split(void *const *buf, const int64_t *p);
void px_k_slice(void *const *buf, const int64_t *p);
void px_k_slice_dyn(void *const *buf, const int64_t *p);
void px_k_expand(void *const *buf, const int64_t *p);
void px_k_tile(void *const *buf, const int64_t *p);
void px_k_pad(void *const *buf, const int64_t *p);
void px_k_pad_dyn(void *const *buf, const int64_t *p);
void px_k_trilu(void *const *buf, const int64_t *p);
void px_k_gather(void *const *buf, const int64_t *p);
void px_k_gather_elements(void *const *buf, const int64_t *p);
void px_k_scatter_elements(void *const *buf, const int64_t *p);
void px_k_onehot(void *const *buf, const int64_t *p);

#endif
