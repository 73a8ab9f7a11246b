#include "eval_metrics.h"

#include "auc.h"

#include "px_kernel.h"
#include "px_train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const metric_names[PX_METRIC_KINDS] = {"auc", "logloss", "accuracy"};

const char *px_eval_metric_name(int kind) {
    return metric_names[kind];
}

int px_eval_metrics_parse(px_eval_metrics *m, const char *list, char *err, size_t cap) {
    memset(m, 0, sizeof *m);
    m->score_output = m->label_input = -1;
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        int kind = -1;
        for (int k = 0; k < PX_METRIC_KINDS; k++)
            if (strlen(metric_names[k]) == len && !strncmp(p, metric_names[k], len)) kind = k;
        for (int i = 0; kind >= 0 && i < m->n; i++)
            if (m->kind[i] == kind) kind = -2;
        if (kind < 0) {
            snprintf(err, cap, "--eval-metrics: '%.*s' is %s (metrics: auc, logloss, accuracy)",
                     (int)(len < 64 ? len : 64), p, kind == -2 ? "given twice" : "unknown");
            return -1;
        }
        m->kind[m->n++] = kind;
        p += len + (p[len] == ',');
    }
    if (!m->n) {
        snprintf(err, cap, "--eval-metrics needs a list such as auc,logloss,accuracy");
        return -1;
    }
    return 0;
}

static int64_t numel_of(const px_io_desc *d) {
    int64_t n = 1;
    for (int64_t i = 0; i < d->rank; i++) n *= d->dims[i];
    return n;
}

/* One value per sample: [batch] or [batch, 1]. */
static int per_sample(const px_io_desc *d, int64_t batch) {
    return d->rank >= 1 && d->dims[0] == batch && numel_of(d) == batch;
}

static int numeric_label(int64_t dtype) {
    return dtype == 1 || dtype == 11 || dtype == 6 || dtype == 7 || dtype == 9;
}

static int score_fits(const px_io_desc *d, int64_t batch) {
    return d->dtype == 1 && per_sample(d, batch);
}

static int label_fits(const px_io_desc *d, int64_t batch) {
    return numeric_label(d->dtype) && per_sample(d, batch);
}

/* The one of n descriptors called name, or with name NULL the only one
 * but index `skip` that fits: its index, or -1 with a message (flag
 * names the flag that chooses, what says what is sought). */
static int64_t pick(const px_io_desc *d, int64_t n, int64_t skip, const char *name,
                    int (*fits)(const px_io_desc *, int64_t), int64_t batch, const char *flag,
                    const char *what, char *err, size_t cap) {
    int64_t found = -1;
    for (int64_t i = 0; i < n; i++) {
        if (name ? strcmp(d[i].name, name) != 0 : i == skip || !fits(&d[i], batch)) continue;
        if (name && !fits(&d[i], batch)) {
            snprintf(err, cap, "%s %s: %s", flag, name, what);
            return -1;
        }
        if (found >= 0) {
            snprintf(err, cap,
                     "--eval-metrics: '%s' and '%s' could both be the %s: name one with %s NAME",
                     d[found].name, d[i].name, flag + 7, flag);
            return -1;
        }
        found = i;
    }
    if (found < 0) {
        if (name)
            snprintf(err, cap, "%s: the model has no %s '%s'", flag,
                     fits == score_fits ? "output" : "input", name);
        else
            snprintf(err, cap, "--eval-metrics: %s; name it with %s NAME", what, flag);
    }
    return found;
}

int px_eval_metrics_bind(px_eval_metrics *m, const px_program_desc *p, const char *score,
                         const char *label, char *err, size_t cap) {
    char name[512] = "";
    if (score) {
        snprintf(name, sizeof name, "%s", score);
        char *colon = strrchr(name, ':');
        if (colon && (!strcmp(colon, ":prob") || !strcmp(colon, ":logit"))) {
            m->probability = !strcmp(colon, ":prob");
            *colon = '\0';
        }
    }
    m->score_output = pick(p->outputs, p->n_outputs, p->loss_output, score ? name : NULL,
                           score_fits, p->batch, "--eval-score",
                           score ? "the output is not float32 with one value per sample"
                                 : "no float32 output holds one score per sample besides the loss "
                                   "(export the logits as a second output)",
                           err, cap);
    if (m->score_output < 0) return -1;
    for (int64_t i = 0; i < p->n_inputs && !label; i++)
        if (!strcmp(p->inputs[i].name, "label")) label = "label";
    m->label_input = pick(p->inputs, p->n_inputs, -1, label, label_fits, p->batch, "--eval-label",
                          label ? "the input is not one number (float, int or bool) per sample"
                                : "no input holds one label per sample",
                          err, cap);
    return m->label_input < 0 ? -1 : 0;
}

void px_eval_metrics_reset(px_eval_metrics *m) {
    m->count = 0;
}

static void grow(px_eval_metrics *m, int64_t more) {
    if (m->count + more <= m->cap) return;
    int64_t c = 2 * (m->count + more) + 1024;
    float *s = realloc(m->scores, sizeof *s * (size_t)c);
    if (s) m->scores = s;
    float *l = realloc(m->labels, sizeof *l * (size_t)c);
    if (l) m->labels = l;
    if (!s || !l) px_rt_fail("out of memory for the validation's scores (%lld)", (long long)c);
    m->cap = c;
}

void px_eval_metrics_take_labels(px_eval_metrics *m, const px_program_desc *p) {
    int64_t b = p->batch;
    grow(m, b);
    const px_io_desc *in = &p->inputs[m->label_input];
    for (int64_t k = 0; k < b; k++) {
        double v;
        switch (in->dtype) {
        case 1: v = ((const float *)in->data)[k]; break;
        case 11: v = ((const double *)in->data)[k]; break;
        case 6: v = ((const int32_t *)in->data)[k]; break;
        case 7: v = (double)((const int64_t *)in->data)[k]; break;
        default: v = ((const unsigned char *)in->data)[k] != 0; break;
        }
        m->labels[m->count + k] = (float)v;
    }
}

void px_eval_metrics_take_scores(px_eval_metrics *m, const px_program_desc *p) {
    const float *s = p->outputs[m->score_output].data;
    for (int64_t k = 0; k < p->batch; k++) {
        if (isnan(s[k]))
            px_rt_fail("validation: output '%s' is NaN for a sample: no metric can rank it",
                       p->outputs[m->score_output].name);
        m->scores[m->count + k] = s[k];
    }
    m->count += p->batch;
}

void px_eval_metrics_finish(px_eval_metrics *m, double *out) {
    int want[PX_METRIC_KINDS] = {0};
    for (int i = 0; i < m->n; i++) want[m->kind[i]] = 1;
    /* logloss and accuracy: sums in sample order, then over ranks in rank order. */
    double mine[3] = {0, 0, (double)m->count};
    for (int64_t k = 0; k < m->count; k++) {
        double z = m->scores[k], y = m->labels[k], prob;
        if (m->probability) {
            prob = z < 1e-15 ? 1e-15 : z > 1 - 1e-15 ? 1 - 1e-15 : z;
            mine[0] += -(y * log(prob) + (1 - y) * log(1 - prob));
        } else {
            prob = 1 / (1 + exp(-z));
            mine[0] += (z > 0 ? z : 0) - z * y + log1p(exp(-fabs(z)));
        }
        mine[1] += (prob >= 0.5) == (y >= 0.5);
    }
    int ranks = px_comm_size();
    double *all = malloc(sizeof *all * 3 * (size_t)ranks);
    if (!all) px_rt_fail("out of memory");
    px_comm_allgather_doubles(mine, 3, all);
    double sum[3] = {0, 0, 0};
    for (int r = 0; r < ranks; r++)
        for (int i = 0; i < 3; i++) sum[i] += all[3 * r + i];
    free(all);
    /* Collective: every rank takes it or none (the same --eval-metrics). */
    double auc = want[PX_METRIC_AUC] ? px_auc_over_ranks(m->scores, m->labels, m->count) : NAN;
    for (int i = 0; i < m->n; i++)
        out[i] = m->kind[i] == PX_METRIC_AUC       ? auc
                 : m->kind[i] == PX_METRIC_LOGLOSS ? sum[0] / sum[2]
                                                   : sum[1] / sum[2];
}

void px_eval_metrics_free(px_eval_metrics *m) {
    free(m->scores);
    free(m->labels);
    m->scores = m->labels = NULL;
    m->cap = m->count = 0;
}
