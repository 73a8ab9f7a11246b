/* The optimizer kernels the compiler lowers ai.parallax update nodes to
 * (ABI in px_kernel.h, buffers and params in px_train.h). They read the
 * optimizer, the step and the state slots from px_train. */
#include "optim_internal.h"
#include "px_kernel.h"
#include "px_trace.h"

#include <string.h>

/* The variable `var` of the running program, checked. */
static const px_var_desc *train_var(const char *kernel, int64_t var) {
    const px_program_desc *p = px_train.prog;
    if (!p || !p->optim) px_rt_fail("%s: no training program is running", kernel);
    if (var < 0 || var >= p->n_vars)
        px_rt_fail("%s: variable %lld out of range [0, %lld)", kernel, (long long)var,
                   (long long)p->n_vars);
    return &p->vars[var];
}

/* The state slots of `var` (px_train.slots[var * PX_OPTIM_MAX_SLOTS ...]). */
static float *const *var_slots(const char *kernel, int64_t var) {
    const px_var_desc *v = &px_train.prog->vars[var];
    int n = px_optim_n_slots(px_train.prog->optim->kind);
    float *const *s = px_train.slots ? &px_train.slots[var * PX_OPTIM_MAX_SLOTS] : NULL;
    for (int i = 0; i < n; i++)
        if (!s || !s[i])
            px_rt_fail("%s: optimizer state %d of variable '%s' is not allocated", kernel, i,
                       v->name);
    return s;
}

static int64_t read_count(const char *kernel, const void *count, int64_t capacity) {
    int64_t n = *(const int64_t *)count;
    if (n < 0 || n > capacity)
        px_rt_fail("%s: row count %lld out of range [0, %lld]", kernel, (long long)n,
                   (long long)capacity);
    return n;
}

/* buf {W, G}  p {var, numel}: dense update of the whole variable. */
void px_k_update(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    int64_t var = px_kp_i64(&c), numel = px_kp_i64(&c);
    (void)train_var("px_k_update", var);
    if (px_train.eval_pass) return;
    double t0 = px_trace_begin();
    px_optim_submit_dense(px_optim_of_var(px_train.prog, var), px_train.t, buf[0], buf[1],
                          var_slots("px_k_update", var), numel, 1);
    px_trace_end(PX_SPAN_OPTIMIZER, (int32_t)var, t0);
}

/* buf {W, idx, rows, count}  p {var, capacity, dim}: row update of the
 * `count` unique rows idx[0..count) with gradient rows rows[i*dim ...]. */
void px_k_row_update(void *const *buf, const int64_t *p) {
    static const char k[] = "px_k_row_update";
    px_kcur c = {p};
    int64_t var = px_kp_i64(&c), capacity = px_kp_i64(&c), dim = px_kp_i64(&c);
    const px_var_desc *v = train_var(k, var);
    const int64_t *idx = buf[1];
    int64_t n = read_count(k, buf[3], capacity);
    int64_t n_rows = v->rank > 0 ? v->dims[0] : 1;
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < 0 || idx[i] >= n_rows)
            px_rt_fail("%s: row index %lld of variable '%s' out of range [0, %lld)", k,
                       (long long)idx[i], v->name, (long long)n_rows);
    if (px_train.eval_pass) return;
    double t0 = px_trace_begin();
    px_optim_submit_rows(px_optim_of_var(px_train.prog, var), px_train.t, buf[0], var_slots(k, var),
                         dim, idx, buf[2], n, 0, 1);
    px_trace_end(PX_SPAN_OPTIMIZER, (int32_t)var, t0);
}

/* buf {idx, rows, count, dense, mask}  p {capacity, dim, n_rows}: scatters a
 * row set into a dense gradient (zero elsewhere) and marks the rows in mask.
 * Rows are unique by contract; a repeated row would be summed, not lost. */
void px_k_rows_to_dense(void *const *buf, const int64_t *p) {
    static const char k[] = "px_k_rows_to_dense";
    px_kcur c = {p};
    int64_t capacity = px_kp_i64(&c), dim = px_kp_i64(&c), n_rows = px_kp_i64(&c);
    const int64_t *idx = buf[0];
    const float *rows = buf[1];
    int64_t n = read_count(k, buf[2], capacity);
    float *dense = buf[3], *mask = buf[4];
    memset(dense, 0, (size_t)(n_rows * dim) * sizeof *dense);
    memset(mask, 0, (size_t)n_rows * sizeof *mask);
    for (int64_t i = 0; i < n; i++) {
        int64_t r = idx[i];
        if (r < 0 || r >= n_rows)
            px_rt_fail("%s: row index %lld out of range [0, %lld)", k, (long long)r,
                       (long long)n_rows);
        float *d = dense + r * dim;
        const float *s = rows + i * dim;
        for (int64_t j = 0; j < dim; j++) d[j] += s[j];
        mask[r] = 1;
    }
}

/* buf {W, dense, mask}  p {var, n_rows, dim}: the row update (lazy, as
 * px_optim_rows) of the rows whose mask is > 0, their gradient read from the
 * dense gradient. The rows go to the row update in batches so the step's
 * scalars are worked out once per batch, not per row. */
void px_k_masked_update(void *const *buf, const int64_t *p) {
    static const char k[] = "px_k_masked_update";
    enum { BATCH = 512 };
    px_kcur c = {p};
    int64_t var = px_kp_i64(&c), n_rows = px_kp_i64(&c), dim = px_kp_i64(&c);
    (void)train_var(k, var);
    if (px_train.eval_pass) return;
    double t0 = px_trace_begin();
    float *const *slots = var_slots(k, var);
    const float *dense = buf[1], *mask = buf[2];
    int64_t batch[BATCH];
    int n = 0;
    for (int64_t r = 0; r < n_rows; r++) {
        if (!(mask[r] > 0)) continue;
        batch[n++] = r;
        if (n == BATCH) {
            px_optim_submit_rows(px_optim_of_var(px_train.prog, var), px_train.t, buf[0], slots,
                                 dim, batch, dense, n, 1, 1);
            n = 0;
        }
    }
    if (n)
        px_optim_submit_rows(px_optim_of_var(px_train.prog, var), px_train.t, buf[0], slots, dim,
                             batch, dense, n, 1, 1);
    px_trace_end(PX_SPAN_OPTIMIZER, (int32_t)var, t0);
}

/* buf {value, state}  p {tensor value, tensor state}, float32: the state (BatchNorm's
 * running statistics) takes the value the step computed; a validation pass
 * leaves it alone. */
void px_k_assign(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt value = px_kp_tensor(&c), state = px_kp_tensor(&c);
    if (value.dtype != 1 || state.dtype != 1 || value.numel != state.numel)
        px_rt_fail("px_k_assign: value and state must be float32 tensors of one size");
    if (px_train.eval_pass) return;
    memmove(buf[1], buf[0], (size_t)state.numel * sizeof(float));
}
