/* px_k_gemm_batched: a stack of independent matrix products, each read
 * with BLAS transpose flags (the MatMul of two same-shaped stacks whose
 * transposed operands or transposed output the compiler folded:
 * compiler/codegen/lower_matmul_fold.c). */
#include "nn_internal.h"

#include "gemm_split.h"
#include "thread_pool.h"

#include <cblas.h>

typedef struct batched_job {
    int f64, ta, tb;
    int M, N, K, lda, ldb;
    const char *A, *B;
    char *Y;
    size_t sa, sb, sy; /* bytes between consecutive matrices */
} batched_job;

/* Matrices [lo, hi), each one single-threaded BLAS call: the bits of the
 * serial loop (px_sgemm's row blocks give the bits of one call too). */
static void matrices(void *ctx, int64_t lo, int64_t hi) {
    const batched_job *j = ctx;
    enum CBLAS_TRANSPOSE ta = j->ta ? CblasTrans : CblasNoTrans,
                         tb = j->tb ? CblasTrans : CblasNoTrans;
    for (int64_t i = lo; i < hi; i++) {
        const char *a = j->A + (size_t)i * j->sa, *b = j->B + (size_t)i * j->sb;
        char *y = j->Y + (size_t)i * j->sy;
        if (j->f64)
            cblas_dgemm(CblasRowMajor, ta, tb, j->M, j->N, j->K, 1.0, (const double *)a, j->lda,
                        (const double *)b, j->ldb, 0.0, (double *)y, j->N);
        else
            cblas_sgemm(CblasRowMajor, ta, tb, j->M, j->N, j->K, 1.0f, (const float *)a, j->lda,
                        (const float *)b, j->ldb, 0.0f, (float *)y, j->N);
    }
}

/* Y[i] = op(A[i]) op(B[i]) for i < batch; op(A[i]) is [M, K], op(B[i])
 * [K, N], Y[i] [M, N], all contiguous row-major (A[i] stored [K, M] when
 * transA, B[i] [N, K] when transB).
 * buf: A, B, Y (float or double).
 * p:   dtype (1 float, 11 double), batch, M, N, K, transA, transB. */
void px_k_gemm_batched(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t dtype = px_kp_i64(&c), batch = px_kp_i64(&c), M = px_kp_i64(&c), N = px_kp_i64(&c),
            K = px_kp_i64(&c);
    int ta = px_kp_i64(&c) != 0, tb = px_kp_i64(&c) != 0;
    if (dtype != PX_NN_F32 && dtype != PX_NN_F64)
        px_rt_fail("px_k_gemm_batched: unsupported dtype %lld", (long long)dtype);
    if (batch <= 0 || M == 0 || N == 0) return;
    size_t es = dtype == PX_NN_F64 ? sizeof(double) : sizeof(float);
    batched_job j = {dtype == PX_NN_F64,
                     ta,
                     tb,
                     (int)M,
                     (int)N,
                     (int)K,
                     (int)(ta ? (M > 0 ? M : 1) : (K > 0 ? K : 1)),
                     (int)(tb ? (K > 0 ? K : 1) : (N > 0 ? N : 1)),
                     buf[0],
                     buf[1],
                     buf[2],
                     (size_t)(M * K) * es,
                     (size_t)(K * N) * es,
                     (size_t)(M * N) * es};
    if (K == 0) { /* empty sums: zeros (BLAS may leave C alone) */
        for (int64_t i = 0; i < batch * M * N; i++) {
            if (j.f64)
                ((double *)j.Y)[i] = 0;
            else
                ((float *)j.Y)[i] = 0;
        }
        return;
    }
    if (batch < px_pool_threads()) { /* few large matrices: px_sgemm splits their rows */
        for (int64_t i = 0; i < batch; i++) {
            enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans,
                                 TB = tb ? CblasTrans : CblasNoTrans;
            const char *a = j.A + (size_t)i * j.sa, *b = j.B + (size_t)i * j.sb;
            char *y = j.Y + (size_t)i * j.sy;
            if (j.f64)
                px_dgemm(CblasRowMajor, TA, TB, j.M, j.N, j.K, 1.0, (const double *)a, j.lda,
                         (const double *)b, j.ldb, 0.0, (double *)y, j.N);
            else
                px_sgemm(CblasRowMajor, TA, TB, j.M, j.N, j.K, 1.0f, (const float *)a, j.lda,
                         (const float *)b, j.ldb, 0.0f, (float *)y, j.N);
        }
        return;
    }
    int64_t macs = M * N * K, grain = macs > 0 ? ((int64_t)1 << 18) / macs : batch;
    px_parallel_for(batch, grain < 1 ? 1 : grain, matrices, &j);
}
