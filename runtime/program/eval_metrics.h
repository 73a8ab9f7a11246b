/* --eval-metrics auc,logloss,accuracy: ranking metrics of a validation,
 * computed exactly over the whole validation set across ranks from a
 * per-sample score output and a label input (docs/data.md, "Metrics").
 *
 * - auc: the area under the ROC curve, exact: the Mann-Whitney statistic
 *   (ties count half) in integers from a distributed sort of the scores
 *   (auc.h: no rank holds every sample), rounded once. A label counts as
 *   positive when it is >= 0.5. Undefined (NaN) without both classes.
 * - logloss: the mean binary cross-entropy of the labels under p =
 *   sigmoid(score) (a logit score, computed as max(z,0) - z*y +
 *   log(1 + exp(-|z|))) or p = score clipped to [1e-15, 1 - 1e-15] (a
 *   probability score), summed in double per rank in sample order, then
 *   over ranks in rank order.
 * - accuracy: the fraction of samples with (p >= 0.5) == (label >= 0.5).
 * The score output is a float32 output of one value per sample (its first
 * dim the batch), the label an input of one number per sample. */
#ifndef PX_EVAL_METRICS_H
#define PX_EVAL_METRICS_H

#include "px_program.h"

#include <stddef.h>
#include <stdint.h>

enum { PX_METRIC_AUC, PX_METRIC_LOGLOSS, PX_METRIC_ACCURACY, PX_METRIC_KINDS };

typedef struct px_eval_metrics {
    int n;                     /* metrics asked for */
    int kind[PX_METRIC_KINDS]; /* in the order given */
    int64_t score_output, label_input;
    int probability; /* the score is a probability, not a logit */
    float *scores, *labels;
    int64_t count, cap;
} px_eval_metrics;

/* Checks a --eval-metrics list ("auc,logloss"): 0, or -1 with a message. */
int px_eval_metrics_parse(px_eval_metrics *m, const char *list, char *err, size_t cap);
/* Finds the score output (--eval-score NAME[:logit|:prob], NULL: the only
 * float32 output with one value per sample besides the loss) and the label
 * input (--eval-label NAME, NULL: the input named "label", else the only
 * input of one number per sample). -1 with a message naming the flag. */
int px_eval_metrics_bind(px_eval_metrics *m, const px_program_desc *p, const char *score,
                         const char *label, char *err, size_t cap);
const char *px_eval_metric_name(int kind);
/* Before a validation. */
void px_eval_metrics_reset(px_eval_metrics *m);
/* This rank's labels of the step about to run (from the input buffer,
 * before the step may reuse it), then its scores after the step. */
void px_eval_metrics_take_labels(px_eval_metrics *m, const px_program_desc *p);
void px_eval_metrics_take_scores(px_eval_metrics *m, const px_program_desc *p);
/* Collective: out[i] = metric i (in the order given) over every rank's
 * samples, the same on every rank. */
void px_eval_metrics_finish(px_eval_metrics *m, double *out);
void px_eval_metrics_free(px_eval_metrics *m);

#endif
