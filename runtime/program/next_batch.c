/* The next step's inputs, loaded on demand (next_batch.h). */
#include "next_batch.h"

#include "px_kernel.h"

#include <stdlib.h>

static struct {
    px_source *src;
    const px_program_desc *p;
    int64_t accumulate; /* micro-batches per step: the "steps" here are those */
    int64_t step, total;
    void **buf;        /* per input: the next step's rows */
    int64_t *buf_step; /* the step each buffer holds, -1: none */
} nb;

void px_next_batch_init(px_source *src, const px_program_desc *p, int64_t accumulate) {
    px_next_batch_free();
    nb.src = src;
    nb.p = p;
    nb.accumulate = accumulate > 1 ? accumulate : 1;
    nb.step = nb.total = 0;
    int64_t n = p->n_inputs > 0 ? p->n_inputs : 1;
    nb.buf = calloc((size_t)n, sizeof(void *));
    nb.buf_step = malloc(sizeof(int64_t) * (size_t)n);
    if (!nb.buf || !nb.buf_step) px_rt_fail("out of memory for the next batch");
    for (int64_t i = 0; i < n; i++) nb.buf_step[i] = -1;
}

void px_next_batch_set_step(int64_t step, int64_t total) {
    nb.step = step;
    nb.total = total;
}

const void *px_next_batch_input(int64_t input) {
    static const char yes = 1;
    if (!nb.p || nb.step + 1 >= nb.total) return NULL;
    if (input < 0) return &yes;
    if (input >= nb.p->n_inputs) return NULL;
    int64_t next = nb.step + 1;
    if (nb.buf_step[input] != next) {
        if (!nb.buf[input]) {
            nb.buf[input] = malloc((size_t)nb.p->inputs[input].nbytes + 1);
            if (!nb.buf[input]) px_rt_fail("out of memory for the next batch");
        }
        int64_t step = next / nb.accumulate, micro = next % nb.accumulate;
        px_source_fill_input(nb.src, nb.p, step, micro, input, nb.buf[input]);
        nb.buf_step[input] = next;
    }
    return nb.buf[input];
}

void px_next_batch_free(void) {
    for (int64_t i = 0; nb.buf && nb.p && i < nb.p->n_inputs; i++) free(nb.buf[i]);
    free(nb.buf);
    free(nb.buf_step);
    nb.buf = NULL;
    nb.buf_step = NULL;
    nb.p = NULL;
}
