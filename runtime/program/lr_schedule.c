#include "lr_schedule.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static int whole(const char *v, int64_t *out, const char **end) {
    char *e;
    errno = 0;
    long long x = strtoll(v, &e, 10);
    if (errno || e == v || x < 1 || x > 1000000000000000LL) return -1;
    *out = x;
    *end = e;
    return 0;
}

int px_lr_schedule_parse(const char *spec, px_lr_schedule *out, char *err, size_t cap) {
    const char *end;
    int64_t warmup = out->warmup;
    memset(out, 0, sizeof *out);
    out->warmup = warmup;
    if (!strcmp(spec, "constant")) {
        out->kind = PX_LR_CONSTANT;
        return 0;
    }
    if (!strncmp(spec, "step:", 5)) {
        out->kind = PX_LR_STEP;
        if (!whole(spec + 5, &out->every, &end) && *end == ':') {
            char *e;
            errno = 0;
            out->gamma = strtod(end + 1, &e);
            if (!errno && e != end + 1 && !*e && isfinite(out->gamma) && out->gamma > 0) return 0;
        }
        snprintf(err, cap,
                 "--lr-schedule step:EVERY:GAMMA needs a whole EVERY >= 1 and a GAMMA > 0 "
                 "(e.g. step:30:0.1), not '%s'",
                 spec);
        return -1;
    }
    int cos = !strncmp(spec, "cosine:", 7), lin = !strncmp(spec, "linear:", 7);
    if (cos || lin) {
        out->kind = cos ? PX_LR_COSINE : PX_LR_LINEAR;
        if (!whole(spec + 7, &out->total, &end) && !*end) return 0;
        snprintf(err, cap, "--lr-schedule %s:TOTAL_STEPS needs a whole number >= 1, not '%s'",
                 cos ? "cosine" : "linear", spec);
        return -1;
    }
    snprintf(err, cap,
             "--lr-schedule: unknown schedule '%s' (constant, step:EVERY:GAMMA, "
             "cosine:TOTAL_STEPS or linear:TOTAL_STEPS)",
             spec);
    return -1;
}

int px_lr_schedule_check(const px_lr_schedule *s, char *err, size_t cap) {
    if ((s->kind == PX_LR_COSINE || s->kind == PX_LR_LINEAR) && s->warmup >= s->total) {
        snprintf(err, cap,
                 "--lr-warmup %lld must be less than the schedule's TOTAL_STEPS %lld (the decay "
                 "runs from the end of the warm-up to TOTAL_STEPS)",
                 (long long)s->warmup, (long long)s->total);
        return -1;
    }
    return 0;
}

/* Written as the Python lambdas of the reference (tests/tools/train_reference.py)
 * so the double values agree: torch then rounds lr to float as we do. */
double px_lr_factor(const px_lr_schedule *s, int64_t step) {
    int64_t K = s->warmup, T = s->total;
    if (step < K) return (double)step / (double)K;
    switch (s->kind) {
    case PX_LR_STEP: return pow(s->gamma, (double)(step / s->every));
    case PX_LR_COSINE:
        if (step >= T) return 0;
        return 0.5 * (1.0 + cos(M_PI * (double)(step - K) / (double)(T - K)));
    case PX_LR_LINEAR: {
        double f = (double)(T - step) / (double)(T - K);
        return f > 0 ? f : 0;
    }
    default: return 1;
    }
}
