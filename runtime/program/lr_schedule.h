/* --lr, --lr-schedule and --lr-warmup: the learning rate of each step. */
#ifndef PX_LR_SCHEDULE_H
#define PX_LR_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

enum px_lr_kind { PX_LR_CONSTANT = 0, PX_LR_STEP, PX_LR_COSINE, PX_LR_LINEAR };

typedef struct px_lr_schedule {
    int kind;       /* enum px_lr_kind */
    int64_t every;  /* step: decay every EVERY steps */
    double gamma;   /* step: by GAMMA */
    int64_t total;  /* cosine, linear: TOTAL_STEPS */
    int64_t warmup; /* --lr-warmup K (0: none) */
} px_lr_schedule;

/* Parses constant | step:EVERY:GAMMA | cosine:TOTAL_STEPS | linear:TOTAL_STEPS
 * (warmup is left as it is). 0, or -1 with a message in err. */
int px_lr_schedule_parse(const char *spec, px_lr_schedule *out, char *err, size_t cap);
/* Whether the warm-up fits the schedule (cosine/linear: K < TOTAL_STEPS). */
int px_lr_schedule_check(const px_lr_schedule *s, char *err, size_t cap);
/* The multiplier of the base learning rate at step s (0-based), the lambda
 * of a torch LambdaLR: s/K while s < K (0 at step 0), then
 *   constant 1;  step GAMMA^floor(s/EVERY);
 *   cosine 0.5*(1 + cos(pi*(s-K)/(T-K))) (0 from T on);
 *   linear max(0, (T-s)/(T-K)). */
double px_lr_factor(const px_lr_schedule *s, int64_t step);

#endif
