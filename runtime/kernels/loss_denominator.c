/* LossDenominator (passes/loss_denominator.c): what a loss's mean over the
 * rows it keeps divides by, so that N ranks train like one rank at the
 * global batch. The kept weight of this rank's rows (1 per row whose target
 * is not ignore_index, or the class weight of its target) is averaged over
 * the ranks: each rank's loss is then its sum / (total / N), and the mean of
 * the ranks' losses and gradients is the global batch's. It sums in the
 * order the loss kernels do, so with one rank (or the same kept weight on
 * every rank) the loss divides by the very value it did on its own.
 *
 * Under --sync-every K (K >= 2) the ranks train locally between their
 * averagings, each on its own batch: each divides by its own kept weight,
 * with no exchange, so that the relaxed mode adds no per-step collective.
 *
 * Where micro-batches share a step (--pp's copies of the loss, over_ranks
 * 0; --accumulate K) their means are averaged with equal weights, which is
 * the batch's mean only when every micro-batch keeps the same weight, and is
 * what PyTorch's usual gradient accumulation computes. When one does not,
 * the run goes on so (stopping a long run at its first padded batch would
 * cost the user more) and says so once, naming the flag and the step. */
#include <stdio.h>

#include "nn_internal.h"
#include "px_train.h"

/* buf: labels (int32/int64), weights [C] (float) or NULL, out (float64 []).
 * p:   tensor labels, tensor weights (dtype 0 if absent), has_ignore_index,
 *      ignore_index, over_ranks (1: the mean over the ranks; 0: --pp's
 *      micro-batch, checked). */
void px_k_loss_denominator(void *const *buf, const int64_t *p) {
    px_kcur c = {p};
    px_kt lab = px_kp_tensor(&c), w = px_kp_tensor(&c);
    int64_t has_ignore = px_kp_i64(&c), ignore = px_kp_i64(&c), over_ranks = px_kp_i64(&c);
    double kept = 0;
    int64_t ignored = 0;
    for (int64_t t = 0; t < lab.numel; t++) {
        int64_t cls = px_nn_load_index(lab.dtype, buf[0], t);
        if (has_ignore && cls == ignore) {
            ignored++;
            continue;
        }
        if (!buf[1]) {
            kept += 1.0;
            continue;
        }
        if (cls < 0 || cls >= w.numel)
            px_rt_fail("loss: target %lld at position %lld is outside the %lld class weights",
                       (long long)cls, (long long)t, (long long)w.numel);
        kept += px_nn_load(w.dtype, buf[1], cls);
    }
    int accumulating = px_train.accum_k > 1 && !px_train.eval_pass;
    int local_sgd = px_train.local_step;
    if (over_ranks && !accumulating && !local_sgd) {
        *(double *)buf[2] = px_comm_mean(kept);
        return;
    }
    *(double *)buf[2] = kept;
    static int warned;
    if (local_sgd || warned || (!buf[1] && !ignored)) return;
    warned = 1;
    const char *flag = over_ranks ? "--accumulate" : "--pp";
    fprintf(stderr,
            "warning: step %lld: a loss with reduction mean %s under %s: each micro-batch's mean "
            "is weighted equally, as PyTorch's usual gradient accumulation does, not by its kept "
            "targets, so the step is not exactly the larger batch's (reduction sum would be); "
            "said once\n",
            (long long)px_train.t, buf[1] ? "with class weights" : "skipped targets (ignore_index)",
            flag);
}
