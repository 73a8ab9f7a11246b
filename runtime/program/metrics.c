#include "metrics.h"

#include "text_escape.h"

#include "px_kernel.h"
#include "px_train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_float_scalar(const px_io_desc *o) {
    return o->dtype == 1 && o->nbytes == 4;
}

void px_metrics_init(px_metrics *m, const px_program_desc *p) {
    m->outputs = malloc(sizeof(int64_t) * (size_t)(p->n_outputs + 1));
    if (!m->outputs) px_rt_fail("out of memory");
    m->n = 0;
    m->outputs[m->n++] = p->loss_output;
    for (int64_t i = 0; i < p->n_outputs; i++)
        if (i != p->loss_output && is_float_scalar(&p->outputs[i])) m->outputs[m->n++] = i;
}

void px_metrics_free(px_metrics *m) {
    free(m->outputs);
    m->outputs = NULL;
    m->n = 0;
}

const char *px_metrics_name(const px_metrics *m, const px_program_desc *p, int i, char *buf,
                            int cap) {
    /* valid UTF-8 in the CSV headers and the progress line (text_escape.h) */
    px_utf8_text(buf, (size_t)cap, i == 0 ? "loss" : p->outputs[m->outputs[i]].name);
    for (char *c = buf; *c; c++)
        if (*c == ',' || *c == ' ' || *c == '\n' || *c == '"') *c = '_';
    return buf;
}

void px_metrics_read(const px_metrics *m, const px_program_desc *p, double *vals) {
    for (int i = 0; i < m->n; i++) {
        float v;
        memcpy(&v, p->outputs[m->outputs[i]].data, sizeof v);
        vals[i] = v;
    }
}

void px_metrics_mean_over_ranks(const px_metrics *m, double *vals) {
    vals[0] = px_comm_mean(vals[0]);
    int extra = m->n - 1, ranks = px_comm_size();
    if (extra <= 0 || ranks == 1) return;
    double *all = malloc(sizeof(double) * (size_t)extra * (size_t)ranks);
    if (!all) px_rt_fail("out of memory");
    px_comm_allgather_doubles(vals + 1, extra, all);
    for (int i = 0; i < extra; i++) {
        double s = 0;
        for (int r = 0; r < ranks; r++) s += all[r * extra + i];
        vals[1 + i] = s / ranks;
    }
    free(all);
}
