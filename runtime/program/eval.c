/* Validation runs the training step itself with updates switched off: the
 * descriptor has no forward-only entry, and the step's forward is exactly
 * the training forward. The backward is computed and discarded, so a
 * validation costs about a training step per batch, without traffic for
 * gradients. In eval mode (the default) the two ops whose training and
 * inference semantics differ switch at run time (px_train.eval_mode): the
 * training Dropout kernel is the identity and the training BatchNorm kernel
 * normalizes with the running statistics, as PyTorch's model.eval(). In
 * either mode nothing is assigned: BatchNorm's running statistics keep the
 * values training gave them. */
#include "eval.h"

#include "px_kernel.h"
#include "px_trace.h"
#include "px_train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int px_eval_open(px_eval *e, const px_program_desc *p, const char *dir, int rank, int ranks,
                 char *err, size_t cap) {
    char why[8192];
    memset(e, 0, sizeof *e);
    e->dir = dir;
    /* No accumulation: a validation step is every rank's batch once. */
    px_source_opts so = {rank, ranks, 1, 0, 0, -1};
    if (!px_source_open(&e->src, p, dir, &so, why, sizeof why)) return 0;
    snprintf(err, cap, "--eval-data: %s", why);
    return -1;
}

int px_eval_check(px_eval *e, const px_program_desc *p, int ranks, char *err, size_t cap) {
    const char *dir = e->dir;
    uint64_t h = (uint64_t)e->src.samples;
    for (int64_t i = 0; i < p->n_inputs; i++) h = h * 1000003u ^ px_source_fingerprint(&e->src, i);
    int bad = px_comm_first_mismatch(h);
    if (bad >= 0) {
        snprintf(err, cap,
                 "--eval-data %s: rank %d reads different validation data than rank 0: every "
                 "rank must see the same files",
                 dir, bad);
        return -1;
    }
    int64_t global_batch = (int64_t)ranks * p->batch;
    int64_t samples = p->n_inputs == 0 ? global_batch : e->src.samples;
    if (samples < global_batch) {
        snprintf(err, cap,
                 "--eval-data %s holds %lld samples, fewer than one global batch of %lld (%d "
                 "rank%s x batch %lld)",
                 dir, (long long)samples, (long long)global_batch, ranks, ranks == 1 ? "" : "s",
                 (long long)p->batch);
        return -1;
    }
    if (px_source_start(&e->src, samples, global_batch))
        px_rt_fail("--eval-data %s: out of memory for the sample order", dir);
    e->steps = e->src.steps_per_epoch;
    e->dropped = samples - e->steps * global_batch;
    return 0;
}

void px_eval_run(px_eval *e, const px_program_desc *p, const px_metrics *m, int rank, double *means,
                 int eval_mode) {
    (void)rank; /* the source knows its rank */
    if (e->ranking) px_eval_metrics_reset(e->ranking);
    double t_eval = px_trace_begin();
    double *sum = calloc((size_t)m->n * 2, sizeof(double)), *vals = sum + m->n;
    if (!sum) px_rt_fail("out of memory");
    px_train.eval_pass = 1;
    px_train.eval_mode = eval_mode != 0;
    for (int64_t k = 0; k < e->steps; k++) {
        double t0 = px_trace_begin();
        px_source_fill(&e->src, p, k, 0);
        if (e->ranking) px_eval_metrics_take_labels(e->ranking, p);
        px_trace_end(PX_SPAN_DATA, -1, t0);
        t0 = px_trace_begin();
        p->step();
        px_trace_end(PX_SPAN_STEP, -1, t0);
        if (e->ranking) px_eval_metrics_take_scores(e->ranking, p);
        px_metrics_read(m, p, vals);
        for (int i = 0; i < m->n; i++) sum[i] += vals[i];
    }
    px_train.eval_pass = 0;
    px_train.eval_mode = 0;
    for (int i = 0; i < m->n; i++) means[i] = sum[i] / (double)e->steps;
    px_metrics_mean_over_ranks(m, means);
    if (e->ranking) px_eval_metrics_finish(e->ranking, means + m->n);
    free(sum);
    px_trace_end(PX_SPAN_EVAL, -1, t_eval);
}

void px_eval_close(px_eval *e) {
    px_source_close(&e->src);
    if (e->ranking) px_eval_metrics_free(e->ranking);
}
