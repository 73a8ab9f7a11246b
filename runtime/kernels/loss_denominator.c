/* LossDenominator (passes/loss_denominator.c): what a loss's mean over the
 * rows it keeps divides by, so that N ranks train like one rank at the
 * global batch. The kept weight of this rank's rows (1 per row whose target
 * is not ignore_index, or the class weight of its target) is averaged over
 * the ranks: each rank's loss is then its sum / (total / N), and the mean of
 * the ranks' losses and gradients is the global batch's. It sums in the
 * order the loss kernels do, so with one rank (or the same kept weight on
 * every rank) the loss divides by the very value it did on its own.
 *
 * Where micro-batches share a step (--pp's copies of the loss, over_ranks
 * 0; --accumulate K) their means are averaged with equal weights, which is
 * the batch's mean only when every micro-batch keeps the same weight: the
 * kernel stops the run, naming the flag, when one does not. */
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
    if (over_ranks && !accumulating) {
        *(double *)buf[2] = px_comm_mean(kept);
        return;
    }
    const char *flag = over_ranks ? "--accumulate" : "--pp";
    if (buf[1])
        px_rt_fail("a loss with class weights and reduction mean under %s: the micro-batches' "
                   "weighted means cannot be combined into the step's exactly; use reduction "
                   "sum, or train without %s",
                   flag, flag);
    if (ignored)
        px_rt_fail("step %lld: a loss with reduction mean skipped %lld of the %lld targets of a "
                   "micro-batch (ignore_index %lld) under %s: the micro-batches' means would "
                   "not combine into the step's mean (N ranks would not train like the global "
                   "batch); use reduction sum, or train without %s",
                   (long long)px_train.t, (long long)ignored, (long long)lab.numel,
                   (long long)ignore, flag, flag);
    *(double *)buf[2] = kept;
}
