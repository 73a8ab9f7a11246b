/* The kernels generated code calls for masked weights (ABI of px_kernel.h;
 * the compiler lowers the ai.parallax sparse nodes to them). id is the
 * masked weight's index in px_program.masked, m the rows of the dense
 * operands (the batch dims folded).
 *   px_k_sparse_matmul       buf {X, W, Y}   p {id, m}  Y[m, out] = X[m, in] · Wl^T
 *   px_k_sparse_matmul_dx    buf {dY, W, dX} p {id, m}  dX[m, in] = dY[m, out] · Wl
 *   px_k_sparse_matmul_dw    buf {X, dY, G}  p {id, m}  G[nnz]: the gradient at the live
 *                                                       entries, packed
 *   px_k_sparse_pack_grad    buf {Gd, G}     p {id, m}  G[nnz] from the dense gradient Gd
 *                                                       (stored layout) of the dense path
 *   px_k_sparse_update       buf {W, G}      p {var, id} the optimizer's update of the live
 *                                                       values (W: the variable, which the
 *                                                       update orders after its readers)
 * W is read through the packed values (masked.h), never its dense storage. */
#include "dst.h"
#include "masked.h"
#include "sparse_stats.h"

#include "optim/optim_internal.h"
#include "px_kernel.h"
#include "px_trace.h"

static px_masked *masked_checked(const char *kernel, int64_t id, int64_t m) {
    if (m < 0) px_rt_fail("%s: %lld rows", kernel, (long long)m);
    return px_sparse_get(id);
}

void px_k_sparse_matmul(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t id = px_kp_i64(&c), m = px_kp_i64(&c);
    px_masked *w = masked_checked("px_k_sparse_matmul", id, m);
    px_spm_forward(&w->s, w->vals, buf[0], m, buf[2]);
    px_sparse_count_flops(2 * w->d->nnz * m);
}

void px_k_sparse_matmul_dx(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t id = px_kp_i64(&c), m = px_kp_i64(&c);
    px_masked *w = masked_checked("px_k_sparse_matmul_dx", id, m);
    px_spm_grad_input(&w->s, w->vals, buf[0], m, buf[2]);
    px_sparse_count_flops(2 * w->d->nnz * m);
}

void px_k_sparse_matmul_dw(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t id = px_kp_i64(&c), m = px_kp_i64(&c);
    px_masked *w = masked_checked("px_k_sparse_matmul_dw", id, m);
    px_spm_grad_weight(&w->s, buf[0], buf[1], m, buf[2]);
    px_sparse_count_flops(2 * w->d->nnz * m);
    if (px_dst_wants_dense_grad()) px_dst_add_dense_grad_of(id, buf[0], buf[1], m);
}

void px_k_sparse_pack_grad(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t id = px_kp_i64(&c), m = px_kp_i64(&c);
    px_masked *w = masked_checked("px_k_sparse_pack_grad", id, m);
    px_spm_pack(&w->s, buf[0], buf[1]);
    if (px_dst_wants_dense_grad()) px_dst_add_dense_grad(id, buf[0]);
    /* the dense path's three products of this weight: forward, dX, dW */
    px_sparse_count_flops(3 * 2 * w->numel * m);
}

void px_k_sparse_update(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t var = px_kp_i64(&c), id = px_kp_i64(&c);
    px_masked *w = px_sparse_get(id);
    if (w->d->var != var)
        px_rt_fail("internal error: px_k_sparse_update of variable %lld with the mask of %lld",
                   (long long)var, (long long)w->d->var);
    if (px_train.eval_pass) return;
    double t0 = px_trace_begin();
    /* the packed values are one dense array: the dense update's arithmetic,
     * element by element; pruned entries are not in it, so they stay zero */
    px_optim_submit_dense(px_optim_of_var(px_train.prog, var), px_train.t, w->vals, buf[1],
                          w->slots, w->d->nnz, 1);
    px_trace_end(PX_SPAN_OPTIMIZER, (int32_t)var, t0);
}
