/* A hand-written stand-in for a generated training program: the program
 * descriptor (ABI 4) of a tiny linear model and a step function that does
 * by hand what compiled code does - PS pull, forward, loss, backward,
 * AllReduce of the dense gradients, updates, PS push - through the same
 * runtime kernels. Linked with px_main like a real program, it tests the
 * training main (runtime/program/train*.c) without the compiler.
 *
 *   pred_i = x_i . w + bias + emb[cat_i]
 *   loss   = 0.5 * mean_i (pred_i - y_i)^2        (over this rank's batch)
 * w [D] and bias [1] are replicated (AllReduce), emb [V] lives on the
 * parameter servers (rows of 1 float). Compile-time: FAKE_OPTIM, FAKE_D,
 * FAKE_B (batch per rank), FAKE_V, FAKE_LR, FAKE_ONNX_INC.
 *
 * Test hooks (environment):
 *   PX_FAKE_TRACE=PREFIX  each rank appends "t rank id..." (the sample/id
 *                         values of its batch) to PREFIX.<rank> every step
 *   PX_FAKE_NAN_AT=T      the loss of step T (1-based) is NaN */
#include "px_kernel.h"
#include "px_program.h"
#include "px_train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void px_k_update(void *const *buf, const int64_t *p);
void px_k_allreduce_start(void *const *buf, const int64_t *p);
void px_k_allreduce_wait(void *const *buf, const int64_t *p);
void px_k_ps_pull_rows(void *const *buf, const int64_t *p);
void px_k_ps_push(void *const *buf, const int64_t *p);

enum { D = FAKE_D, B = FAKE_B, V = FAKE_V };

/* inputs */
static float x[B][D], y[B];
static int64_t cat[B], sample_id[B];
static const int64_t x_dims[] = {B, D}, b_dims[] = {B};
static px_io_desc inputs[] = {
    {"x", 1, 2, x_dims, x, sizeof x, NULL, 0},
    {"cat", 7, 1, b_dims, cat, sizeof cat, NULL, 0},
    {"y", 1, 1, b_dims, y, sizeof y, NULL, 0},
    {"sample/id", 7, 1, b_dims, sample_id, sizeof sample_id, NULL, 0},
};
/* outputs */
static float loss;
static px_io_desc outputs[] = {{"loss", 1, 0, NULL, &loss, sizeof loss, NULL, 0}};

/* variables, initialised like exported weights */
static float w[D] = {0.5f, -0.25f, 0.125f, 1.0f};
static float bias[1] = {0.1f};
static float emb[V] = {0.0f, 0.1f, -0.1f, 0.2f, -0.2f, 0.3f, -0.3f, 0.4f};
static const int64_t w_dims[] = {D}, bias_dims[] = {1}, emb_dims[] = {V};
static px_var_desc vars[] = {
    {"w", 1, 1, w_dims, w, sizeof w, PX_VAR_DENSE, PX_SYNC_ALLREDUCE, 0, -1, 1, 0},
    {"bias", 1, 1, bias_dims, bias, sizeof bias, PX_VAR_DENSE, PX_SYNC_ALLREDUCE, 0, -1, 1, 0},
    /* the step reads emb only through its row cache, as compiled code does */
    {"emb", 1, 1, emb_dims, emb, sizeof emb, PX_VAR_SPARSE, PX_SYNC_PS, 2, -1, 0, 0},
};
static const px_optim_desc optim = {
    .kind = FAKE_OPTIM,
    .lr = FAKE_LR,
    .momentum = 0.9,
    .beta1 = 0.9,
    .beta2 = 0.999,
    .epsilon = 1e-8,
};
static const int64_t bucket_bytes[] = {(D + 1) * 4};
static const uint8_t onnx_base[] = {
#include FAKE_ONNX_INC
};

static void step(void);

const px_program_desc px_program = {
    .abi = PX_PROGRAM_ABI,
    .model = "fake_linear.onnx",
    .n_inputs = 4,
    .inputs = inputs,
    .n_outputs = 1,
    .outputs = outputs,
    .step = step,
    .arena_bytes = 0,
    .kind = PX_PROGRAM_TRAIN,
    .loss_output = 0,
    .batch = B,
    .n_vars = 3,
    .vars = vars,
    .optim = &optim,
    .comm_mode = PX_COMM_MODE_HYBRID,
    .n_buckets = 1,
    .bucket_bytes = bucket_bytes,
    .onnx_base = onnx_base,
    .onnx_base_bytes = sizeof onnx_base,
};

static void trace(void) {
    static FILE *f;
    static int opened;
    if (!opened) {
        opened = 1;
        const char *prefix = getenv("PX_FAKE_TRACE");
        if (prefix && *prefix) {
            char path[4096];
            snprintf(path, sizeof path, "%s.%d", prefix, px_comm_rank());
            f = fopen(path, "a");
            if (!f) px_rt_fail("fake: cannot open %s", path);
        }
    }
    if (!f) return;
    fprintf(f, "%lld %d", (long long)px_train.t, px_comm_rank());
    for (int i = 0; i < B; i++) fprintf(f, " %lld", (long long)sample_id[i]);
    fputc('\n', f);
    fflush(f);
}

static void step(void) {
    /* the embedding rows this batch reads, into a compact row cache */
    static const int64_t pull_p[] = {2, 7, B, 1};
    float emb_rows[B];
    int64_t remap[B];
    void *pull_buf[] = {cat, emb_rows, remap};
    px_k_ps_pull_rows(pull_buf, pull_p);

    /* forward and backward */
    float r[B], gw[D] = {0}, gb[1] = {0};
    double sum = 0;
    for (int i = 0; i < B; i++) {
        float pred = bias[0] + emb_rows[remap[i]];
        for (int j = 0; j < D; j++) pred += x[i][j] * w[j];
        float diff = pred - y[i];
        sum += (double)diff * diff;
        r[i] = diff / B;
    }
    loss = (float)(0.5 * sum / B);
    const char *nan_at = getenv("PX_FAKE_NAN_AT");
    if (nan_at && atoll(nan_at) == px_train.t) loss = NAN;
    for (int i = 0; i < B; i++) {
        gb[0] += r[i];
        for (int j = 0; j < D; j++) gw[j] += r[i] * x[i][j];
    }
    /* row gradient of emb: unique rows first, summed */
    int64_t idx[B], count = 0;
    float rows[B];
    for (int i = 0; i < B; i++) {
        int64_t k = 0;
        while (k < count && idx[k] != cat[i]) k++;
        if (k == count) {
            idx[count] = cat[i];
            rows[count++] = 0;
        }
        rows[k] += r[i];
    }

    /* dense gradients: one AllReduce bucket, then the replicated updates */
    static const int64_t ar_p[] = {0, 2, D * 4, 4};
    float gw_mean[D], gb_mean[1];
    void *start_buf[] = {gw, gb};
    void *wait_buf[] = {gw, gb, gw_mean, gb_mean};
    px_k_allreduce_start(start_buf, ar_p);
    px_k_allreduce_wait(wait_buf, ar_p);
    static const int64_t upd_w[] = {0, D}, upd_b[] = {1, 1};
    void *w_buf[] = {w, gw_mean}, *b_buf[] = {bias, gb_mean};
    px_k_update(w_buf, upd_w);
    px_k_update(b_buf, upd_b);

    /* sparse gradient to the shards */
    static const int64_t push_p[] = {2, B, 1};
    void *push_buf[] = {NULL, idx, rows, &count};
    px_k_ps_push(push_buf, push_p);
    trace();
}
