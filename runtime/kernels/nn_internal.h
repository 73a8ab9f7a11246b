/* Private helpers of the nn kernel family (runtime/kernels/nn_*.c):
 * dtype codes, element conversion, scratch memory. Not part of the ABI. */
#ifndef PX_NN_INTERNAL_H
#define PX_NN_INTERNAL_H

#include "px_kernel.h"

#include <stddef.h>
#include <stdint.h>

/* ONNX TensorProto.DataType codes used by these kernels. */
enum {
    PX_NN_F32 = 1,
    PX_NN_U8 = 2,
    PX_NN_I8 = 3,
    PX_NN_U16 = 4,
    PX_NN_I16 = 5,
    PX_NN_I32 = 6,
    PX_NN_I64 = 7,
    PX_NN_BOOL = 9,
    PX_NN_F16 = 10,
    PX_NN_F64 = 11,
    PX_NN_U32 = 12,
    PX_NN_U64 = 13,
    PX_NN_BF16 = 16,
};

/* Largest spatial rank the window kernels (conv, pools) handle; lowerings
 * reject more. Fewer spatial dims are padded in front with size-1 dims. */
#define PX_NN_SPATIAL 3

float px_nn_f16_to_f32(uint16_t h);
uint16_t px_nn_f32_to_f16(float f);
float px_nn_bf16_to_f32(uint16_t h);
uint16_t px_nn_f32_to_bf16(float f);

/* Element i of a float-like buffer (f32, f64, f16, bf16) as double, and back. */
double px_nn_load(int dtype, const void *p, int64_t i);
void px_nn_store(int dtype, void *p, int64_t i, double v);
/* Element i of an integer index buffer (int32 or int64). */
int64_t px_nn_load_index(int dtype, const void *p, int64_t i);

/* n elements of a half-precision buffer (f16 or bf16) to float and back. */
void px_nn_half_to_f32(int dtype, const uint16_t *src, float *dst, int64_t n);
void px_nn_f32_to_half(int dtype, const float *src, uint16_t *dst, int64_t n);

/* A per-thread scratch buffer of at least `bytes`, one per slot (0..3).
 * Kept and grown across calls so steady-state kernels do not allocate; the
 * contents are not preserved between calls. Ends the program if memory runs
 * out. */
/* The stash key (stash.h) of a Conv call's im2col columns: X's buffer and
 * the geometry (spatial dims normalized to PX_NN_SPATIAL, leading 1s).
 * Zero-initialize before filling: the key is compared bytewise. */
typedef struct px_conv_cols_key {
    const void *x;
    int64_t dtype, N, C, group;
    int64_t in[PX_NN_SPATIAL], out[PX_NN_SPATIAL], k[PX_NN_SPATIAL];
    int64_t stride[PX_NN_SPATIAL], dil[PX_NN_SPATIAL], pad[PX_NN_SPATIAL];
} px_conv_cols_key;

/* Batch statistics of channel ch of x (N, C, inner elements; any float
 * dtype): the mean and the population variance, in double, with the bits
 * that BatchNormalization's forward (nn_norm.c) and its gradient
 * (nn_batchnorm_grad.c) both use. */
void px_nn_channel_stats(const px_kt *x, const void *xb, int64_t ch, int64_t N, int64_t C,
                         int64_t inner, double *mean, double *var);

#define PX_NN_SCRATCH_SLOTS 4
void *px_nn_scratch(int slot, size_t bytes);

/* Kernels of the family (their comments give buf order and param layout). */
void px_k_matmul(void *const *buf, const int64_t *p);
void px_k_gemm(void *const *buf, const int64_t *p);
void px_k_gemm_batched(void *const *buf, const int64_t *p);
void px_k_conv(void *const *buf, const int64_t *p);
void px_k_maxpool(void *const *buf, const int64_t *p);
void px_k_avgpool(void *const *buf, const int64_t *p);
void px_k_global_avgpool(void *const *buf, const int64_t *p);
void px_k_global_maxpool(void *const *buf, const int64_t *p);
void px_k_batchnorm(void *const *buf, const int64_t *p);
void px_k_layernorm(void *const *buf, const int64_t *p);
void px_k_nll_loss(void *const *buf, const int64_t *p);
void px_k_sce_loss(void *const *buf, const int64_t *p);
void px_k_sce_loss_probs(void *const *buf, const int64_t *p);

#endif
