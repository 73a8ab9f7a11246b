/* The communication kernels generated code calls (ABI in px_kernel.h,
 * buffers and params in px_train.h). All of them are collective: every
 * rank calls them, for the same buckets and variables, in the same order.
 * A validation pass (px_train.eval_pass, on every rank at once) sends no
 * gradients: AllReduce and pushes are skipped, pulls still fetch rows. */
#include "sched.h"
#include "px_trace.h"

#include <string.h>

/* The PS operations run on the calling thread: all their time is
 * communication the compute waited for (transport/stats.c), and a span of the
 * --trace timeline. */
typedef struct ps_clock {
    double t0;    /* comm_now() at the start */
    double trace; /* px_trace_begin() at the start */
} ps_clock;

static ps_clock ps_begin(void) {
    return (ps_clock){comm_now(), px_trace_begin()};
}

static void ps_end(ps_clock c, int span, int64_t var) {
    double dt = comm_now() - c.t0;
    comm_time_busy(dt);
    comm_time_waited(dt);
    px_trace_end(span, (int32_t)var, c.trace);
}

/* buf {g_1..g_k}  p {bucket, k, nbytes_1..nbytes_k} */
void px_k_allreduce_start(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t bucket = px_kp_i64(&c), k = px_kp_i64(&c);
    if (px_train.eval_pass) return;
    double t0 = px_trace_begin();
    comm_allreduce_start(bucket, (int)k, buf, c.p);
    px_trace_end(PX_SPAN_ALLREDUCE_START, (int32_t)bucket, t0);
}

/* buf {g_1..g_k, out_1..out_k}  p {bucket, k, nbytes_1..nbytes_k} */
void px_k_allreduce_wait(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t bucket = px_kp_i64(&c), k = px_kp_i64(&c);
    if (px_train.eval_pass) return;
    double t0 = px_trace_begin();
    comm_allreduce_wait(bucket, (int)k, buf, buf + k, c.p);
    px_trace_end(PX_SPAN_ALLREDUCE_WAIT, (int32_t)bucket, t0);
}

/* buf {x, y}  p {numel, tp}: y = the sum of x over the tensor-parallel
 * group (forward and backward, validation passes included). */
void px_k_tp_allreduce(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t n = px_kp_i64(&c), tp = px_kp_i64(&c);
    double t0 = comm_now();
    comm_tp_group_sum(buf[0], buf[1], n, (int)tp);
    comm_time_busy(comm_now() - t0);
    comm_time_waited(comm_now() - t0);
}

/* buf {x, y}  p {numel, from, to, tag}: stage `from` sends x, stage `to`
 * receives it into y; other stages do nothing. */
void px_k_pp_transfer(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t n = px_kp_i64(&c), from = px_kp_i64(&c), to = px_kp_i64(&c), tag = px_kp_i64(&c);
    double t0 = comm_now(), trace = px_trace_begin();
    if (px_pp_stage == from) {
        comm_pp_send(buf[0], n, (int)to, (int)tag);
        px_trace_end(PX_SPAN_PP_SEND, (int32_t)to, trace);
    }
    if (px_pp_stage == to) comm_pp_recv(buf[1], n, (int)from, (int)tag);
    comm_time_busy(comm_now() - t0);
    comm_time_waited(comm_now() - t0);
    if (px_pp_stage == to) px_trace_end(PX_SPAN_PP_RECV, (int32_t)from, trace);
}

/* buf {x, y}  p {numel, from}: y = x of stage `from`, on every stage. */
void px_k_pp_broadcast(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t n = px_kp_i64(&c), from = px_kp_i64(&c);
    double t0 = comm_now(), trace = px_trace_begin();
    comm_pp_broadcast(buf[0], buf[1], n, (int)from);
    comm_time_busy(comm_now() - t0);
    comm_time_waited(comm_now() - t0);
    px_trace_end(PX_SPAN_PP_BROADCAST, (int32_t)from, trace);
}

/* buf {idx, cache, remap}  p {var, idx_dtype, n_idx, dim} */
void px_k_ps_pull_rows(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t var = px_kp_i64(&c), dtype = px_kp_i64(&c), n_idx = px_kp_i64(&c), dim = px_kp_i64(&c);
    if (dtype != 6 && dtype != 7)
        px_rt_fail("ps_pull: indices of ONNX dtype %lld (int32 or int64 expected)",
                   (long long)dtype);
    ps_var *pv = comm_ps_var(var, "ps_pull");
    if (ps_var_elsewhere(pv)) n_idx = 0; /* --pp: another stage reads its rows */
    comm_note_row_cache(n_idx * (int64_t)sizeof(float) * dim + n_idx * (dtype == 7 ? 8 : 4));
    if (dim != pv->dim)
        px_rt_fail("ps_pull of '%s': rows of %lld values asked, the variable has %lld", pv->name,
                   (long long)dim, (long long)pv->dim);
    comm_prefetch_note_pull(pv, buf[0], (int)dtype, n_idx);
    double t0 = px_trace_begin();
    if (comm_prefetch_take_rows(pv, buf[0], (int)dtype, n_idx, buf[1], buf[2])) {
        px_trace_end(PX_SPAN_PS_PULL, (int32_t)var, t0);
        return;
    }
    ps_clock clk = ps_begin();
    comm_ps_pull_rows(var, buf[0], (int)dtype, n_idx, buf[1], buf[2]);
    ps_end(clk, PX_SPAN_PS_PULL, var);
}

/* buf {W, NULL}  p {var, 0, 0}: every row (dense PS variable) */
void px_k_ps_pull(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t var = px_kp_i64(&c);
    if (buf[1]) px_rt_fail("ps_pull: a pull of chosen rows fills a row cache (px_k_ps_pull_rows)");
    ps_var *pv = comm_ps_var(var, "ps_pull");
    comm_prefetch_note_pull(pv, NULL, 0, 0);
    /* --staleness: the replica is read again until it is S steps old */
    int stale = ps_stale_on();
    if (stale && !ps_stale_full_due(pv, comm_step())) return;
    if (stale) ps_stale_full_pulled(pv, comm_step());
    double t0 = px_trace_begin();
    if (comm_prefetch_take_all(pv, buf[0])) {
        px_trace_end(PX_SPAN_PS_PULL, (int32_t)var, t0);
        return;
    }
    ps_clock clk = ps_begin();
    comm_ps_pull_all(var, buf[0]);
    ps_end(clk, PX_SPAN_PS_PULL, var);
}

/* buf {W (unused, may be NULL), idx, rows, count}  p {var, capacity, dim} */
void px_k_ps_push(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t var = px_kp_i64(&c), capacity = px_kp_i64(&c), dim = px_kp_i64(&c);
    ps_var *pv = comm_ps_var(var, "ps_push");
    /* --pp: another stage made the row set; this rank pushes no rows */
    int64_t count = ps_var_elsewhere(pv) ? 0 : *(const int64_t *)buf[3];
    if (count < 0 || count > capacity)
        px_rt_fail("ps_push: %lld rows in a row set of capacity %lld", (long long)count,
                   (long long)capacity);
    if (px_train.eval_pass) return;
    if (comm_push_queued_on()) { /* the comm thread pushes (push_async.c) */
        double t0 = px_trace_begin();
        comm_prefetch_before_push(pv, NULL);
        comm_push_enqueue(pv, buf[1], buf[2], count, capacity, dim);
        px_trace_end(PX_SPAN_PUSH_QUEUED, (int32_t)var, t0);
        return;
    }
    ps_clock clk = ps_begin();
    comm_prefetch_before_push(pv, NULL);
    comm_ps_push(var, buf[1], buf[2], count, dim);
    comm_prefetch_after_push(pv);
    ps_end(clk, PX_SPAN_PS_PUSH, var);
}

/* buf {W, G}  p {var, numel} */
void px_k_ps_push_dense(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t var = px_kp_i64(&c), numel = px_kp_i64(&c);
    if (px_train.eval_pass) return;
    ps_var *pv = comm_ps_var(var, "ps_push_dense");
    ps_clock clk = ps_begin();
    comm_prefetch_before_push(pv, buf[0]);
    comm_ps_push_dense(var, buf[1], numel);
    comm_prefetch_after_push(pv);
    ps_end(clk, PX_SPAN_PS_PUSH, var);
}
