/* The scalar float outputs a training program logs: the loss first, then
 * every other float32 scalar output (accuracy, ...) in output order. */
#ifndef PX_METRICS_H
#define PX_METRICS_H

#include "px_program.h"

#include <stdint.h>

typedef struct px_metrics {
    int n;            /* 1 + the other scalar float outputs */
    int64_t *outputs; /* indices into p->outputs; [0] is the loss */
} px_metrics;

void px_metrics_init(px_metrics *m, const px_program_desc *p);
void px_metrics_free(px_metrics *m);
/* Name of metric i as a log label and CSV column ("loss" for the loss;
 * commas and spaces written '_'), in buf. */
const char *px_metrics_name(const px_metrics *m, const px_program_desc *p, int i, char *buf,
                            int cap);
/* This rank's values of the step just run. */
void px_metrics_read(const px_metrics *m, const px_program_desc *p, double *vals);
/* Replaces vals by their means over the ranks (collective; the loss keeps
 * px_comm_mean, the others one allgather summed in rank order). */
void px_metrics_mean_over_ranks(const px_metrics *m, double *vals);

#endif
