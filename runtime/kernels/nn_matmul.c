/* MatMul and Gemm. Floating-point types go to OpenBLAS (f16/bf16 through a
 * float copy); integer types use plain loops with wrap-around arithmetic. */
#include "nn_internal.h"

#include "gemm_split.h"
#include "thread_pool.h"

#include <cblas.h>
#include <string.h>

/* Integer matrix products: C[M,N] = A[M,K] * B[K,N] with leading dims and
 * optional transposes, accumulating in the unsigned type of the same width
 * so overflow wraps (as ONNX runtimes do) instead of being undefined. */
#define INT_GEMM(NAME, T, U)                                                                       \
    static void NAME(int ta, int tb, int64_t M, int64_t N, int64_t K, const T *A, int64_t lda,     \
                     const T *B, int64_t ldb, T *C, int64_t ldc, int accumulate) {                 \
        for (int64_t i = 0; i < M; i++) {                                                          \
            T *c = C + i * ldc;                                                                    \
            if (!accumulate)                                                                       \
                for (int64_t j = 0; j < N; j++) c[j] = 0;                                          \
            for (int64_t k = 0; k < K; k++) {                                                      \
                U a = (U)(ta ? A[k * lda + i] : A[i * lda + k]);                                   \
                if (!tb) {                                                                         \
                    const T *b = B + k * ldb;                                                      \
                    for (int64_t j = 0; j < N; j++) c[j] = (T)((U)c[j] + a * (U)b[j]);             \
                } else {                                                                           \
                    for (int64_t j = 0; j < N; j++) c[j] = (T)((U)c[j] + a * (U)B[j * ldb + k]);   \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
INT_GEMM(gemm_i32, int32_t, uint32_t)
INT_GEMM(gemm_i64, int64_t, uint64_t)
INT_GEMM(gemm_u32, uint32_t, uint32_t)
INT_GEMM(gemm_u64, uint64_t, uint64_t)

static int blas_ld(int64_t v) {
    return v > 0 ? (int)v : 1;
}

/* One product C = alpha*op(A)*op(B) + beta*C of any supported dtype, on
 * contiguous row-major operands. Half types never reach here. */
static void gemm_any(int dtype, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
                     const void *A, const void *B, double beta, void *C) {
    int64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
    if (M == 0 || N == 0) return;
    enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
    switch (dtype) {
    case PX_NN_F32:
        px_sgemm(CblasRowMajor, TA, TB, (int)M, (int)N, (int)K, (float)alpha, A, blas_ld(lda), B,
                 blas_ld(ldb), (float)beta, C, blas_ld(ldc));
        return;
    case PX_NN_F64:
        px_dgemm(CblasRowMajor, TA, TB, (int)M, (int)N, (int)K, alpha, A, blas_ld(lda), B,
                 blas_ld(ldb), beta, C, blas_ld(ldc));
        return;
    default: break;
    }
    /* integers: alpha and beta are 1/0 here (MatMul) or applied by the caller (Gemm) */
    switch (dtype) {
    case PX_NN_I32: gemm_i32(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, beta != 0); return;
    case PX_NN_I64: gemm_i64(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, beta != 0); return;
    case PX_NN_U32: gemm_u32(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, beta != 0); return;
    case PX_NN_U64: gemm_u64(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, beta != 0); return;
    default: px_rt_fail("px_k_gemm/matmul: unsupported dtype %d", dtype);
    }
}

static size_t dtype_size(int dtype) {
    switch (dtype) {
    case PX_NN_F32:
    case PX_NN_I32:
    case PX_NN_U32: return 4;
    case PX_NN_F64:
    case PX_NN_I64:
    case PX_NN_U64: return 8;
    case PX_NN_F16:
    case PX_NN_BF16: return 2;
    default: px_rt_fail("px_k_matmul: unsupported dtype %d", dtype);
    }
}

/* Y = A @ B with numpy semantics: operands of rank >= 2 are stacks of
 * matrices whose batch dims broadcast; a 1-D A is a row vector [1,K] and a
 * 1-D B a column vector [K,1] (the added dim is absent from Y).
 * buf: A, B, Y (all of one dtype: f32 f64 f16 bf16 i32 i64 u32 u64).
 * p:   tensor A, tensor B, tensor Y. */
void px_k_matmul(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt a = px_kp_tensor(&c), b = px_kp_tensor(&c), y = px_kp_tensor(&c);
    int dtype = a.dtype, half = dtype == PX_NN_F16 || dtype == PX_NN_BF16;
    int64_t M = a.rank >= 2 ? a.dims[a.rank - 2] : 1, K = a.dims[a.rank - 1];
    int64_t N = b.rank >= 2 ? b.dims[b.rank - 1] : 1;
    /* batch dims, right-aligned to the output's batch rank */
    int br = y.rank - (a.rank >= 2) - (b.rank >= 2);
    int64_t bd[PX_K_MAX_RANK], sa[PX_K_MAX_RANK], sb[PX_K_MAX_RANK];
    int64_t nbatch = 1, na = 1, nb = 1, mk = M * K, kn = K * N, mn = M * N;
    for (int i = br - 1; i >= 0; i--) {
        int ia = i - (br - (a.rank - 2)), ib = i - (br - (b.rank - 2));
        int64_t da = ia >= 0 ? a.dims[ia] : 1, db = ib >= 0 ? b.dims[ib] : 1;
        bd[i] = y.dims[i];
        sa[i] = da == 1 ? 0 : na * mk; /* element strides; 0 where broadcast */
        sb[i] = db == 1 ? 0 : nb * kn;
        na *= da;
        nb *= db;
        nbatch *= bd[i];
    }
    if (nbatch == 0 || mn == 0) return;
    const char *A = buf[0], *B = buf[1];
    char *Y = buf[2];
    size_t es = dtype_size(dtype);
    int cdt = dtype;
    if (half) { /* compute in float on converted copies */
        float *fa = px_nn_scratch(0, (size_t)a.numel * sizeof(float));
        float *fb = px_nn_scratch(1, (size_t)b.numel * sizeof(float));
        px_nn_half_to_f32(dtype, (const uint16_t *)A, fa, a.numel);
        px_nn_half_to_f32(dtype, (const uint16_t *)B, fb, b.numel);
        A = (const char *)fa;
        B = (const char *)fb;
        Y = px_nn_scratch(2, (size_t)y.numel * sizeof(float));
        cdt = PX_NN_F32;
        es = sizeof(float);
    }
    if (nb == 1 && na == nbatch) {
        /* B is shared by every batch and A is a contiguous stack: one product
         * with the batches folded into M (the Linear-layer case) */
        gemm_any(cdt, 0, 0, nbatch * M, N, K, 1.0, A, B, 0.0, Y);
    } else {
        int64_t idx[PX_K_MAX_RANK] = {0};
        for (int64_t t = 0; t < nbatch; t++) {
            int64_t oa = 0, ob = 0;
            for (int i = 0; i < br; i++) {
                oa += idx[i] * sa[i];
                ob += idx[i] * sb[i];
            }
            gemm_any(cdt, 0, 0, M, N, K, 1.0, A + (size_t)oa * es, B + (size_t)ob * es, 0.0,
                     Y + (size_t)(t * mn) * es);
            for (int i = br - 1; i >= 0 && ++idx[i] == bd[i]; i--) idx[i] = 0;
        }
    }
    if (half) px_nn_f32_to_half(dtype, (const float *)Y, buf[2], y.numel);
}

/* Applies y = alpha*y + beta*c (c broadcast from [cm,cn] to [M,N]; c may be
 * NULL) for integer Gemm, after y holds A*B. */
#define INT_GEMM_EPILOGUE(NAME, T, U)                                                              \
    static void NAME(T *y, const T *c, int64_t M, int64_t N, int64_t cm, int64_t cn, double alpha, \
                     double beta) {                                                                \
        U ua = (U)(int64_t)alpha, ub = (U)(int64_t)beta;                                           \
        for (int64_t i = 0; i < M; i++)                                                            \
            for (int64_t j = 0; j < N; j++) {                                                      \
                U v = ua * (U)y[i * N + j];                                                        \
                if (c) v += ub * (U)c[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)];                 \
                y[i * N + j] = (T)v;                                                               \
            }                                                                                      \
    }
INT_GEMM_EPILOGUE(epilogue_i32, int32_t, uint32_t)
INT_GEMM_EPILOGUE(epilogue_i64, int64_t, uint64_t)
INT_GEMM_EPILOGUE(epilogue_u32, uint32_t, uint32_t)
INT_GEMM_EPILOGUE(epilogue_u64, uint64_t, uint64_t)

/* Fills the float/double y[M,N] with c broadcast from [cm,cn], the rows
 * split over the rank's threads (a copy: the same bits for any split). */
typedef struct fill_job {
    void *y;
    const void *c;
    int64_t N, cm, cn;
} fill_job;

#define FILL_BROADCAST(NAME, T)                                                                    \
    static void NAME##_rows(void *ctx, int64_t lo, int64_t hi) {                                   \
        const fill_job *j = ctx;                                                                   \
        int64_t N = j->N, cm = j->cm, cn = j->cn;                                                  \
        for (int64_t i = lo; i < hi; i++) {                                                        \
            const T *row = (const T *)j->c + (cm == 1 ? 0 : i * cn);                               \
            T *out = (T *)j->y + i * N;                                                            \
            if (cn == 1)                                                                           \
                for (int64_t k = 0; k < N; k++) out[k] = row[0];                                   \
            else if (out != row)                                                                   \
                memcpy(out, row, (size_t)N * sizeof(T));                                           \
        }                                                                                          \
    }                                                                                              \
    static void NAME(T *y, const T *c, int64_t M, int64_t N, int64_t cm, int64_t cn) {             \
        fill_job j = {y, c, N, cm, cn};                                                            \
        px_parallel_for(M, px_grain_for(N), NAME##_rows, &j);                                      \
    }
FILL_BROADCAST(fill_f32, float)
FILL_BROADCAST(fill_f64, double)

/* Y = alpha * op(A) * op(B) + beta * C, op = transpose if transA/transB.
 * A, B 2-D; C optional, unidirectionally broadcastable to Y [M,N] (rank 0,
 * 1 or 2). Integer types truncate alpha and beta to integers.
 * buf: A, B, C (NULL if absent), Y.
 * p:   tensor A, tensor B, tensor C (dtype 0, rank 0 if absent), tensor Y,
 *      transA, transB, alpha (f64), beta (f64). */
void px_k_gemm(void *const *buf, const int64_t *p) {
    px_kcur cur = {p};
    px_kt a = px_kp_tensor(&cur), b = px_kp_tensor(&cur), c = px_kp_tensor(&cur),
          y = px_kp_tensor(&cur);
    int ta = (int)px_kp_i64(&cur), tb = (int)px_kp_i64(&cur);
    double alpha = px_kp_f64(&cur), beta = px_kp_f64(&cur);
    int dtype = a.dtype;
    int64_t M = y.dims[0], N = y.dims[1], K = ta ? a.dims[0] : a.dims[1];
    int64_t cm = c.rank == 2 ? c.dims[0] : 1, cn = c.rank >= 1 ? c.dims[c.rank - 1] : 1;
    const void *C = buf[2];
    if (M == 0 || N == 0) return;
    switch (dtype) {
    case PX_NN_F32:
    case PX_NN_F64: {
        int use_c = C && beta != 0;
        if (use_c) {
            if (dtype == PX_NN_F32)
                fill_f32(buf[3], C, M, N, cm, cn);
            else
                fill_f64(buf[3], C, M, N, cm, cn);
        }
        gemm_any(dtype, ta, tb, M, N, K, alpha, buf[0], buf[1], use_c ? beta : 0.0, buf[3]);
        return;
    }
    case PX_NN_F16:
    case PX_NN_BF16: {
        float *fa = px_nn_scratch(0, (size_t)a.numel * sizeof(float));
        float *fb = px_nn_scratch(1, (size_t)b.numel * sizeof(float));
        float *fy = px_nn_scratch(2, (size_t)y.numel * sizeof(float));
        px_nn_half_to_f32(dtype, buf[0], fa, a.numel);
        px_nn_half_to_f32(dtype, buf[1], fb, b.numel);
        int use_c = C && beta != 0;
        if (use_c) {
            float *fc = px_nn_scratch(3, (size_t)c.numel * sizeof(float));
            px_nn_half_to_f32(dtype, C, fc, c.numel);
            fill_f32(fy, fc, M, N, cm, cn);
        }
        gemm_any(PX_NN_F32, ta, tb, M, N, K, alpha, fa, fb, use_c ? beta : 0.0, fy);
        px_nn_f32_to_half(dtype, fy, buf[3], y.numel);
        return;
    }
    case PX_NN_I32:
    case PX_NN_I64:
    case PX_NN_U32:
    case PX_NN_U64:
        gemm_any(dtype, ta, tb, M, N, K, 1.0, buf[0], buf[1], 0.0, buf[3]);
        if (dtype == PX_NN_I32)
            epilogue_i32(buf[3], C, M, N, cm, cn, alpha, beta);
        else if (dtype == PX_NN_I64)
            epilogue_i64(buf[3], C, M, N, cm, cn, alpha, beta);
        else if (dtype == PX_NN_U32)
            epilogue_u32(buf[3], C, M, N, cm, cn, alpha, beta);
        else
            epilogue_u64(buf[3], C, M, N, cm, cn, alpha, beta);
        return;
    default: px_rt_fail("px_k_gemm: unsupported dtype %d", dtype);
    }
}
