/* MatMul and Gemm -> px_k_matmul, px_k_gemm (runtime/kernels/nn_matmul.c). */
#include "lower_matmul_fold.h"
#include "lower_nn_internal.h"

#include <limits.h>

static const px_dtype matmul_types[] = {PX_F32, PX_F64, PX_F16, PX_BF16,     PX_I32,
                                        PX_I64, PX_U32, PX_U64, PX_UNDEFINED};

/* BLAS takes int sizes. */
static int check_blas_dim(const px_node *n, int64_t v, const char *what, px_diag *d) {
    if (v > INT_MAX)
        return px_lower_error(d, n, "%s = %lld exceeds the BLAS limit %d", what, (long long)v,
                              INT_MAX);
    return 0;
}

/* Y's shape must be what the operands give (the kernel trusts it). */
static int check_out_shape(const px_node *n, const px_value *y, const px_shape *want, px_diag *d) {
    char a[256], b[256];
    int same = y->shape.rank == want->rank;
    for (int i = 0; same && i < want->rank; i++) same = y->shape.dims[i] == want->dims[i];
    if (!same)
        return px_lower_error(d, n, "output '%s' has shape %s, the operands give %s", y->name,
                              px_shape_str(&y->shape, a, sizeof a),
                              px_shape_str(want, b, sizeof b));
    return 0;
}

/* buf: A, B, Y.  p: tensor A, tensor B, tensor Y (see px_k_matmul). */
int px_lower_matmul(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *a = px_lower_in(n, 0), *b = px_lower_in(n, 1), *y = px_lower_out(n, 0);
    if (px_lnn_check(n, a, "input A", matmul_types, d) ||
        px_lnn_check(n, b, "input B", matmul_types, d) ||
        px_lnn_check(n, y, "output Y", matmul_types, d))
        return -1;
    if (a->dtype != b->dtype || y->dtype != a->dtype)
        return px_lower_error(d, n, "A, B and Y must share one dtype (%s, %s, %s)",
                              px_dtype_name(a->dtype), px_dtype_name(b->dtype),
                              px_dtype_name(y->dtype));
    int ra = a->shape.rank, rb = b->shape.rank;
    if (ra < 1 || rb < 1) return px_lower_error(d, n, "MatMul operands must have rank >= 1");
    int64_t M = ra >= 2 ? a->shape.dims[ra - 2] : 1, K = a->shape.dims[ra - 1];
    int64_t KB = rb >= 2 ? b->shape.dims[rb - 2] : b->shape.dims[0];
    int64_t N = rb >= 2 ? b->shape.dims[rb - 1] : 1;
    if (K != KB)
        return px_lower_error(d, n, "inner dims differ: A has %lld, B has %lld", (long long)K,
                              (long long)KB);
    /* expected output: broadcast batch dims, then M (if A is a matrix), N (if B is) */
    int ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0, br = ba > bb ? ba : bb;
    px_shape want = px_shape_make(0, NULL);
    for (int i = 0; i < br; i++) {
        int ia = i - (br - ba), ib = i - (br - bb);
        int64_t da = ia >= 0 ? a->shape.dims[ia] : 1, db = ib >= 0 ? b->shape.dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return px_lower_error(d, n, "batch dims do not broadcast: %lld vs %lld", (long long)da,
                                  (long long)db);
        want.dims[want.rank++] = da == 1 ? db : da;
    }
    if (ra >= 2) want.dims[want.rank++] = M;
    if (rb >= 2) want.dims[want.rank++] = N;
    if (check_out_shape(n, y, &want, d) || check_blas_dim(n, M, "M", d) ||
        check_blas_dim(n, N, "N", d) || check_blas_dim(n, K, "K", d))
        return -1;
    int64_t rows = 1; /* batches may fold into M */
    for (int i = 0; i < want.rank - (rb >= 2); i++) rows *= want.dims[i];
    if (check_blas_dim(n, rows, "rows of A", d)) return -1;
    px_gemm_fold f;
    if (px_lmm_fold_matmul(n, &f)) { /* a transposed operand read through the BLAS flag */
        px_lmm_emit(&f, y, k);
        return 0;
    }
    px_kc_set_kernel(k, "px_k_matmul");
    px_kc_buf(k, a);
    px_kc_buf(k, b);
    px_kc_buf(k, y);
    px_kc_tensor(k, a);
    px_kc_tensor(k, b);
    px_kc_tensor(k, y);
    return 0;
}

/* buf: A, B, C|NULL, Y.  p: tensor A, tensor B, tensor C|absent, tensor Y,
 * transA, transB, alpha, beta (see px_k_gemm). */
int px_lower_gemm(const px_graph *g, const px_node *n, px_kcall *k, px_diag *d) {
    (void)g;
    const px_value *a = px_lower_in(n, 0), *b = px_lower_in(n, 1), *c = px_lower_in(n, 2),
                   *y = px_lower_out(n, 0);
    if (px_lnn_check(n, a, "input A", matmul_types, d) ||
        px_lnn_check(n, b, "input B", matmul_types, d) ||
        (c && px_lnn_check(n, c, "input C", matmul_types, d)) ||
        px_lnn_check(n, y, "output Y", matmul_types, d))
        return -1;
    if (a->dtype != b->dtype || y->dtype != a->dtype || (c && c->dtype != a->dtype))
        return px_lower_error(d, n, "A, B, C and Y must share one dtype (A is %s, B %s, Y %s)",
                              px_dtype_name(a->dtype), px_dtype_name(b->dtype),
                              px_dtype_name(y->dtype));
    if (a->shape.rank != 2 || b->shape.rank != 2)
        return px_lower_error(d, n, "A and B must be 2-D (ranks %d and %d)", a->shape.rank,
                              b->shape.rank);
    int ta = px_attr_int(n, "transA", 0) != 0, tb = px_attr_int(n, "transB", 0) != 0;
    double alpha = px_attr_float(n, "alpha", 1.0f), beta = px_attr_float(n, "beta", 1.0f);
    int64_t M = a->shape.dims[ta ? 1 : 0], K = a->shape.dims[ta ? 0 : 1];
    int64_t KB = b->shape.dims[tb ? 1 : 0], N = b->shape.dims[tb ? 0 : 1];
    if (K != KB)
        return px_lower_error(d, n, "inner dims differ: op(A) has %lld columns, op(B) %lld rows",
                              (long long)K, (long long)KB);
    int64_t mn[2] = {M, N};
    px_shape want = px_shape_make(2, mn);
    if (check_out_shape(n, y, &want, d) || check_blas_dim(n, M, "M", d) ||
        check_blas_dim(n, N, "N", d) || check_blas_dim(n, K, "K", d))
        return -1;
    if (c) { /* unidirectional broadcast to [M, N] */
        int rc = c->shape.rank;
        int64_t cm = rc == 2 ? c->shape.dims[0] : 1, cn = rc >= 1 ? c->shape.dims[rc - 1] : 1;
        if (rc > 2 || (cm != 1 && cm != M) || (cn != 1 && cn != N)) {
            char s[256];
            return px_lower_error(d, n, "C '%s' with shape %s does not broadcast to [%lld,%lld]",
                                  c->name, px_shape_str(&c->shape, s, sizeof s), (long long)M,
                                  (long long)N);
        }
    }
    px_kc_set_kernel(k, "px_k_gemm");
    px_kc_buf(k, a);
    px_kc_buf(k, b);
    px_kc_buf(k, c);
    px_kc_buf(k, y);
    px_kc_tensor(k, a);
    px_kc_tensor(k, b);
    px_lnn_tensor_opt(k, c);
    px_kc_tensor(k, y);
    px_kc_i64(k, ta);
    px_kc_i64(k, tb);
    px_kc_f64(k, alpha);
    px_kc_f64(k, beta);
    return 0;
}
