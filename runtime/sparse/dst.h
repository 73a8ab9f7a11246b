/* Dynamic sparse training (--dst set|rigl): every `every` steps until
 * `until`, each masked weight drops the live items of the smallest
 * magnitude and grows as many new ones, at random (SET) or where the mean
 * dense gradient of that step is largest in magnitude (RigL; the dense
 * gradient is computed on those steps only). The fraction changed follows
 * RigL's cosine decay: after step t, fraction/2 * (1 + cos(pi t / until)) of
 * the live items (rounded to the nearest). Grown entries start at zero
 * with zero optimizer state; dropped ones become zero. Every rank makes
 * the same choice from the same values (tests/tools/sparse_reference.py
 * does it in NumPy). */
#ifndef PX_SPARSE_DST_H
#define PX_SPARSE_DST_H

#include <stddef.h>
#include <stdint.h>

typedef struct px_dst_opts {
    int kind;        /* px_dst_kind */
    int64_t every;   /* steps between mask updates (0: the default) */
    double fraction; /* of the live items, at step 0 of the decay (0: the default) */
    int64_t until;   /* no update from this step on (0: 3/4 of the run's steps) */
} px_dst_opts;

enum { PX_DST_DEFAULT_EVERY = 100 };
#define PX_DST_DEFAULT_FRACTION 0.3

/* Checks the options against the program's masked weights and fixes the
 * defaults for a run of total_steps. Returns 0, or -1 with a message in
 * err naming the flag (and the weight). */
int px_dst_configure(const px_dst_opts *o, int64_t total_steps, char *err, size_t cap);
/* 1 when the masks change after step t (1-based). */
int px_dst_updates_after(int64_t t);
/* RigL: 1 when the step now running (px_train.t) needs the weights' dense
 * gradients. */
int px_dst_wants_dense_grad(void);
/* The dense gradient (stored layout) of masked weight id on this step:
 * grad (numel floats) added in (several uses of one weight add up). */
void px_dst_add_dense_grad(int64_t id, const float *grad);
/* The same from the product's operands: dY^T X over m rows. */
void px_dst_add_dense_grad_of(int64_t id, const float *x, const float *dy, int64_t m);
/* After step t's updates: the mask update, when t is one. */
void px_dst_after_step(int64_t t);
/* The current options (kind PX_DST_NONE when off). */
const px_dst_opts *px_dst_options(void);

#endif
