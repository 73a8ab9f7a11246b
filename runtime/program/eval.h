/* --eval-data DIR: validation passes between training steps. */
#ifndef PX_EVAL_H
#define PX_EVAL_H

#include "data_source.h"
#include "eval_metrics.h"
#include "metrics.h"

#include <stdint.h>

typedef struct px_eval {
    const char *dir;
    px_source src;
    int64_t steps;            /* full global batches of the validation set */
    int64_t dropped;          /* samples of the partial last batch, left out */
    px_eval_metrics *ranking; /* --eval-metrics (NULL: none) */
} px_eval;

/* Opens DIR as --data is opened (this rank alone): 0, or -1 with a message
 * naming --eval-data in err. */
int px_eval_open(px_eval *e, const px_program_desc *p, const char *dir, int rank, int ranks,
                 char *err, size_t cap);
/* Then, once every rank opened it: every rank reads the same files, and
 * they hold at least one global batch. Collective; the same result on every
 * rank: 0, or -1 with the message in err. */
int px_eval_check(px_eval *e, const px_program_desc *p, int ranks, char *err, size_t cap);
/* One validation: the compiled step over every full global batch of the
 * set with px_train.eval_pass set (no update, no push, no gradient
 * AllReduce, no running statistics assigned), each rank its rows; with
 * eval_mode also px_train.eval_mode (Dropout the identity, BatchNorm on its
 * running statistics: PyTorch's model.eval()). means[i] = the mean of
 * metric i over the batches and ranks (each batch's value is its mean over
 * the batch, so this is the mean over the samples); then, with e->ranking,
 * its metrics (means[m->n + i]). Collective. */
void px_eval_run(px_eval *e, const px_program_desc *p, const px_metrics *m, int rank, double *means,
                 int eval_mode);
void px_eval_close(px_eval *e);

#endif
